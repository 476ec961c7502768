// Package copy copies an SQLite database (store/sqlite) into an empty
// PostgreSQL one (store/postgres): switchyard db copy.
package copy

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store/postgres"
	"github.com/switchyard/switchyard/store/sqlite"
)

// Stats counts what FromSQLite copied.
type Stats struct {
	Workflows, Versions, Runs, Nodes, Events int64
}

// FromSQLite copies everything in the SQLite database at path into
// dst, which must be empty; path must hold a Switchyard database already
// (sqlite.ErrNotSwitchyard otherwise: nothing is created there) (no workflows, no runs): workflows with every
// version, runs with their definitions, node states (in their order),
// events, leases, cancel requests and revoked sessions. The SQLite
// database is first brought to the current schema (as opening it with
// switchyard would; a newer one is refused with store.ErrSchemaTooNew),
// then read in one snapshot; the copy is one PostgreSQL transaction, all or nothing.
// Nothing may write to either database meanwhile.
func FromSQLite(ctx context.Context, path string, dst *postgres.Store, log *slog.Logger) (Stats, error) {
	if log == nil {
		log = slog.Default()
	}
	var st Stats
	// Opening would create a database where there is none (a mistyped
	// --data): the source must be a Switchyard database already.
	if err := sqlite.CheckDatabase(ctx, path); err != nil {
		return st, fmt.Errorf("copy: %w", err)
	}
	src, err := sqlite.Open(ctx, path, sqlite.WithLogger(log))
	if err != nil {
		return st, fmt.Errorf("copy: %w", err)
	}
	if err := src.Close(); err != nil {
		return st, fmt.Errorf("copy: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return st, fmt.Errorf("copy: %w", err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro&_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return st, fmt.Errorf("copy: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// One read transaction: a consistent snapshot of the whole file.
	rtx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("copy: read %s: %w", path, err)
	}
	defer func() { _ = rtx.Rollback() }() // read-only: nothing to commit

	err = pgx.BeginFunc(ctx, dst.Pool(), func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM workflows) + (SELECT count(*) FROM runs)`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("the destination is not empty (%d workflows and runs): %w", n, engine.ErrConflict)
		}
		steps := []struct {
			table   string
			cols    []string
			query   string
			convert func(vals []any) error
			count   *int64
		}{
			{"workflows", []string{"id", "name", "description", "kind", "definition", "version", "created_at", "updated_at"},
				`SELECT id, name, description, kind, definition, version, created_at, updated_at FROM workflows`,
				micros(6, 7), &st.Workflows},
			{"workflow_versions", []string{"workflow_id", "version", "name", "description", "kind", "definition", "created_at"},
				`SELECT workflow_id, version, name, description, kind, definition, created_at FROM workflow_versions`,
				micros(6), &st.Versions},
			// Definitions, stored once by content hash, before the runs
			// that reference them.
			{"definitions", []string{"hash", "definition"},
				`SELECT hex(hash), definition FROM definitions`, unhex(0), nil},
			{"runs", []string{"id", "workflow_id", "kind", "status", "input", "waiting_for_input", "current_node_id",
				"pending_approvals", "error", "work_dir", "owner", "lease_until", "cancel_requested",
				"created_at", "updated_at", "finished_at", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd",
				"definition_hash"},
				`SELECT id, workflow_id, kind, status, input, waiting_for_input, current_node_id, pending_approvals,
error, work_dir, owner, lease_until, cancel_requested, created_at, updated_at, finished_at,
prompt_tokens, completion_tokens, total_tokens, cost_usd, hex(definition_hash) FROM runs`,
				func(v []any) error {
					v[5], v[12] = asBool(v[5]), asBool(v[12])
					if l, _ := v[11].(int64); l == 0 {
						v[11] = nil // no lease
					}
					if err := unhex(20)(v); err != nil {
						return err
					}
					return micros(11, 13, 14, 15)(v)
				}, &st.Runs},
			// In rowid order: PostgreSQL numbers them as it inserts, which
			// keeps the order LoadRun returns them in.
			{"node_states", []string{"run_id", "node_id", "status", "input", "output", "handle", "error", "visits",
				"attempts", "fired", "wait", "started_at", "finished_at", "rejection", "decision"},
				`SELECT run_id, node_id, status, input, output, handle, error, visits, attempts, fired, wait,
started_at, finished_at, rejection, decision FROM node_states ORDER BY rowid`,
				micros(11, 12), &st.Nodes},
			// A row of SQLite's may hold several events (a pack): they
			// are expanded, one PostgreSQL row each.
			{"run_events", []string{"run_id", "seq", "node_id", "type", "content", "ts", "data"},
				`SELECT run_id, seq, node_id, type, content, ts, data, n, more FROM run_events ORDER BY run_id, seq`,
				nil, &st.Events},
			// Signed-out sessions stay signed out on the new database.
			{"revoked_sessions", []string{"id", "expires_at"},
				`SELECT id, expires_at FROM revoked_sessions`, micros(1), nil},
			{"yaml_positions", []string{"workflow_id", "node_id", "x", "y"},
				`SELECT workflow_id, node_id, x, y FROM yaml_positions`, nil, nil},
		}
		for _, s := range steps {
			rows, err := rtx.QueryContext(ctx, s.query)
			if err != nil {
				return fmt.Errorf("read %s: %w", s.table, err)
			}
			var src interface {
				pgx.CopyFromSource
				failed() error
			}
			if s.table == "run_events" {
				src = &eventRows{rows: rows}
			} else {
				src = &sqliteRows{rows: rows, n: len(s.cols), convert: s.convert}
			}
			n, err := tx.CopyFrom(ctx, pgx.Identifier{s.table}, s.cols, src)
			rows.Close()
			if err == nil {
				err = src.failed()
			}
			if err != nil {
				return fmt.Errorf("copy %s: %w", s.table, err)
			}
			if s.count != nil {
				*s.count = n
			}
		}
		tables := make([]string, len(steps))
		for i, st := range steps {
			tables[i] = st.table
		}
		return verifyCopy(ctx, rtx, tx, tables)
	})
	if err != nil {
		return Stats{}, fmt.Errorf("copy from %s: %w", path, err)
	}
	log.Info("copied the SQLite database into PostgreSQL", "from", path, "workflows", st.Workflows,
		"versions", st.Versions, "runs", st.Runs, "nodes", st.Nodes, "events", st.Events)
	return st, nil
}

// verifyCopy compares, inside the copy's transaction, the row count of
// every table and each run's last event seq on both sides: a copy that
// does not match is rolled back, not committed.
func verifyCopy(ctx context.Context, from *sql.Tx, to pgx.Tx, tables []string) error {
	for _, t := range tables {
		var a, b int64
		count := `SELECT count(*) FROM ` + t
		if t == "run_events" {
			count = `SELECT coalesce(sum(n), 0) FROM run_events` // events, not packs
		}
		if err := from.QueryRowContext(ctx, count).Scan(&a); err != nil {
			return fmt.Errorf("verify %s: %w", t, err)
		}
		if err := to.QueryRow(ctx, `SELECT count(*) FROM `+t).Scan(&b); err != nil {
			return fmt.Errorf("verify %s: %w", t, err)
		}
		if a != b {
			return fmt.Errorf("verify %s: %d rows in SQLite, %d copied", t, a, b)
		}
	}
	want := map[string]int64{}
	rows, err := from.QueryContext(ctx, `SELECT run_id, max(seq + n - 1) FROM run_events GROUP BY run_id`)
	if err != nil {
		return fmt.Errorf("verify last seqs: %w", err)
	}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			rows.Close()
			return fmt.Errorf("verify last seqs: %w", err)
		}
		want[id] = seq
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify last seqs: %w", err)
	}
	got, err := to.Query(ctx, `SELECT run_id, max(seq) FROM run_events GROUP BY run_id`)
	if err != nil {
		return fmt.Errorf("verify last seqs: %w", err)
	}
	n := 0
	for got.Next() {
		var id string
		var seq int64
		if err := got.Scan(&id, &seq); err != nil {
			got.Close()
			return fmt.Errorf("verify last seqs: %w", err)
		}
		if want[id] != seq {
			got.Close()
			return fmt.Errorf("verify run %s: last seq %d in SQLite, %d copied", id, want[id], seq)
		}
		n++
	}
	got.Close()
	if err := got.Err(); err != nil {
		return fmt.Errorf("verify last seqs: %w", err)
	}
	if n != len(want) {
		return fmt.Errorf("verify: %d runs with events in SQLite, %d copied", len(want), n)
	}
	return nil
}

// sqliteRows streams SQLite rows into COPY.
type sqliteRows struct {
	rows    *sql.Rows
	n       int
	convert func([]any) error
	vals    []any
	err     error
}

func (r *sqliteRows) Next() bool {
	if !r.rows.Next() {
		r.err = r.rows.Err()
		return false
	}
	r.vals = make([]any, r.n)
	ptrs := make([]any, r.n)
	for i := range ptrs {
		ptrs[i] = &r.vals[i]
	}
	if err := r.rows.Scan(ptrs...); err != nil {
		r.err = err
		return false
	}
	for i, v := range r.vals {
		if b, ok := v.([]byte); ok { // TEXT may scan as bytes
			r.vals[i] = string(b)
		}
	}
	if r.convert != nil {
		if err := r.convert(r.vals); err != nil {
			r.err = err
			return false
		}
	}
	return true
}

func (r *sqliteRows) Values() ([]any, error) { return r.vals, nil }
func (r *sqliteRows) Err() error             { return r.err }
func (r *sqliteRows) failed() error          { return r.err }

// eventRows reads SQLite's run_events rows, which may each hold several
// events (sqlite.ExpandEvents), as one PostgreSQL row per event.
type eventRows struct {
	rows    *sql.Rows
	pending []engine.Event
	vals    []any
	err     error
}

func (r *eventRows) Next() bool {
	for len(r.pending) == 0 {
		if !r.rows.Next() {
			r.err = r.rows.Err()
			return false
		}
		var ev engine.Event
		var ts, n int64
		var data sql.NullString
		var more []byte
		if err := r.rows.Scan(&ev.RunID, &ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ts, &data, &n, &more); err != nil {
			r.err = err
			return false
		}
		ev.Timestamp = time.UnixMicro(ts).UTC()
		if data.Valid {
			ev.Data = []byte(data.String)
		}
		evs, err := sqlite.ExpandEvents(r.pending[:0], ev, n, more)
		if err != nil {
			r.err = err
			return false
		}
		r.pending = evs
	}
	ev := r.pending[0]
	r.pending = r.pending[1:]
	var data any
	if ev.Data != nil {
		data = string(ev.Data)
	}
	r.vals = []any{ev.RunID, ev.Seq, ev.NodeID, ev.Type, ev.Content, ev.Timestamp.UTC(), data}
	return true
}

func (r *eventRows) Values() ([]any, error) { return r.vals, nil }
func (r *eventRows) Err() error             { return r.err }
func (r *eventRows) failed() error          { return r.err }

// micros converts the given columns from SQLite's unix microseconds
// (NULL stays NULL) to times.
func micros(cols ...int) func([]any) error {
	return func(v []any) error {
		for _, c := range cols {
			switch x := v[c].(type) {
			case nil:
			case int64:
				v[c] = time.UnixMicro(x).UTC()
			default:
				return fmt.Errorf("column %d: %T is not a unix-microsecond time", c, v[c])
			}
		}
		return nil
	}
}

// unhex converts the given columns, read as hex(blob) (SQLite hands a
// blob and a text alike as bytes), back to bytes; NULL and ” stay NULL.
func unhex(cols ...int) func([]any) error {
	return func(v []any) error {
		for _, c := range cols {
			x, _ := v[c].(string)
			if x == "" {
				v[c] = nil
				continue
			}
			b, err := hex.DecodeString(x)
			if err != nil {
				return fmt.Errorf("column %d: %w", c, err)
			}
			v[c] = b
		}
		return nil
	}
}

func asBool(v any) any {
	n, _ := v.(int64)
	return n != 0
}
