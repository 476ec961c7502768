package postgres

// Leases, claims and cancel requests: who drives which run.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchyard/switchyard/engine"
)

// AcquireRun implements engine.Store. now and leaseUntil are this process's
// times; they are compared and stored in the database's clock.
func (s *Store) AcquireRun(ctx context.Context, runID, owner string, expect engine.RunStatus, now, leaseUntil time.Time) error {
	if owner == "" {
		return fmt.Errorf("postgres: acquire run %s: owner is required", runID)
	}
	dbNow, dbUntil := s.fromNow(now), s.fromNow(leaseUntil)
	err := s.w.do(ctx, nil, func(t *wtx) error {
		n, err := t.exec(sqlAcquireRun, owner, dbUntil, runID, dbNow, string(expect))
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		var status, holder string
		err = t.queryRow(`SELECT status, owner FROM runs WHERE id = $1`, runID).Scan(&status, &holder)
		if errors.Is(err, pgx.ErrNoRows) {
			return reject(engine.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if expect != "" && status != string(expect) {
			return reject(fmt.Errorf("run is %s, not %s: %w", status, expect, engine.ErrConflict))
		}
		return reject(fmt.Errorf("run is held by %s: %w", holder, engine.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("postgres: acquire run %s for %s: %w", runID, owner, err)
	}
	return nil
}

// ClaimOrphaned makes owner the driver, until leaseUntil, of up to limit
// orphaned runs (as ListOrphaned sees them at now), oldest first, and
// returns their ids. Runs another process is claiming at the same moment
// are skipped rather than waited for (FOR UPDATE SKIP LOCKED), so N
// processes recovering at once get disjoint sets without blocking each
// other. limit <= 0 means no limit.
func (s *Store) ClaimOrphaned(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]string, error) {
	if owner == "" {
		return nil, errors.New("postgres: claim orphaned runs: owner is required")
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	dbNow, dbUntil := s.fromNow(now), s.fromNow(leaseUntil)
	var ids []string
	err := s.w.do(ctx, nil, func(t *wtx) error {
		rows, err := t.query(`UPDATE runs SET owner = $2, lease_until = (now() + $3::float8 * interval '1 microsecond') WHERE id IN
(SELECT r.id FROM runs r WHERE `+sqlOrphaned+` ORDER BY r.created_at, r.id LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING id`, dbNow, owner, dbUntil, lim)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim orphaned runs for %s: %w", owner, err)
	}
	slices.Sort(ids)
	return ids, nil
}

// ClaimWaitingNode implements engine.Store: the node goes from waiting to
// running only if owner holds the run. Concurrent claims, from any number
// of processes, serialize on the node's row: exactly one finds it waiting.
func (s *Store) ClaimWaitingNode(ctx context.Context, runID, nodeID, owner string, decision []byte) error {
	if owner == "" {
		return fmt.Errorf("postgres: claim node %s of run %s: owner is required", nodeID, runID)
	}
	dec := nullText(decision)
	err := s.w.do(ctx, nil, func(t *wtx) error {
		// FOR SHARE: a takeover of the run waits for the claim to commit.
		n, err := t.exec(`UPDATE node_states SET status = 'running', decision = $4
WHERE run_id = $1 AND node_id = $2 AND status = 'waiting'
AND EXISTS (SELECT 1 FROM runs WHERE id = $1 AND owner = $3 FOR SHARE)`, runID, nodeID, owner, dec)
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		var holder, status *string
		err = t.queryRow(`SELECT r.owner, n.status FROM runs r
LEFT JOIN node_states n ON n.run_id = r.id AND n.node_id = $2 WHERE r.id = $1`, runID, nodeID).Scan(&holder, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return reject(fmt.Errorf("run: %w", engine.ErrNotFound))
		}
		if err != nil {
			return err
		}
		if status == nil {
			return reject(fmt.Errorf("node: %w", engine.ErrNotFound))
		}
		if holder == nil || *holder != owner {
			return reject(fmt.Errorf("run is not held by %s: %w", owner, engine.ErrConflict))
		}
		return reject(fmt.Errorf("node is %q, not waiting: %w", *status, engine.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("postgres: claim node %s of run %s: %w", nodeID, runID, err)
	}
	return nil
}

// ExpireLeases implements engine.Store. The owner stays recorded, so its
// writes stay fenced off; with no lease (NULL) its runs are orphaned now.
func (s *Store) ExpireLeases(ctx context.Context, owner string) error {
	if owner == "" {
		return nil // nobody's leases: never touch unowned runs
	}
	err := s.w.do(ctx, nil, func(t *wtx) error {
		_, err := t.exec(`UPDATE runs SET lease_until = NULL WHERE owner = $1 AND owner <> ''`, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: expire leases of %s: %w", owner, err)
	}
	return nil
}

// RenewLeases implements engine.Store.
func (s *Store) RenewLeases(ctx context.Context, owner string, leaseUntil time.Time) error {
	if owner == "" {
		return nil // nobody's leases: never touch unowned runs
	}
	until := s.fromNow(leaseUntil)
	err := s.w.do(ctx, nil, func(t *wtx) error {
		_, err := t.exec(`UPDATE runs SET lease_until = (now() + $1::float8 * interval '1 microsecond') WHERE owner = $2 AND owner <> ''`, until, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: renew leases of %s: %w", owner, err)
	}
	return nil
}

// HeldRuns implements engine.Store: leases compared in the database's
// clock, as they are set.
func (s *Store) HeldRuns(ctx context.Context, owner string) ([]string, error) {
	if owner == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs WHERE owner = $1 AND owner <> '' AND lease_until > now() ORDER BY id`, owner)
	if err != nil {
		return nil, fmt.Errorf("postgres: runs held by %s: %w", owner, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: runs held by %s: %w", owner, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ReleaseRun implements engine.Store. Releasing a run nobody holds is a
// no-op; ErrConflict if another owner holds it, ErrNotFound if unknown.
func (s *Store) ReleaseRun(ctx context.Context, runID, owner string) error {
	err := s.w.do(ctx, nil, func(t *wtx) error {
		n, err := t.exec(`UPDATE runs SET owner = '', lease_until = NULL WHERE id = $1 AND (owner = $2 OR owner = '')`,
			runID, owner)
		if err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		var holder string
		err = t.queryRow(`SELECT owner FROM runs WHERE id = $1`, runID).Scan(&holder)
		if errors.Is(err, pgx.ErrNoRows) {
			return reject(engine.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return reject(fmt.Errorf("run is held by %s: %w", holder, engine.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("postgres: release run %s by %s: %w", runID, owner, err)
	}
	return nil
}

// RequestCancel implements engine.Store.
func (s *Store) RequestCancel(ctx context.Context, runID string) error {
	err := s.w.do(ctx, nil, func(t *wtx) error {
		n, err := t.exec(`UPDATE runs SET cancel_requested = true WHERE id = $1`, runID)
		if err != nil {
			return err
		}
		if n == 0 {
			return reject(engine.ErrNotFound)
		}
		// Wakes the owner at once (delivered only if this commits); its
		// polling stays the fallback.
		_, err = t.exec(`SELECT pg_notify($1, $2)`, cancelChannel, runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: request cancel of run %s: %w", runID, err)
	}
	return nil
}

// TakeCancelRequests implements engine.Store. It asks the pool first, so
// polling with nothing requested costs no write.
func (s *Store) TakeCancelRequests(ctx context.Context, owner string) ([]string, error) {
	if owner == "" {
		return nil, nil
	}
	var pending bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE owner = $1 AND owner <> '' AND cancel_requested)`,
		owner).Scan(&pending)
	if err != nil {
		return nil, fmt.Errorf("postgres: take cancel requests of %s: %w", owner, err)
	}
	if !pending {
		return nil, nil
	}
	var ids []string
	err = s.w.do(ctx, nil, func(t *wtx) error {
		rows, err := t.query(`UPDATE runs SET cancel_requested = false
WHERE owner = $1 AND owner <> '' AND cancel_requested RETURNING id`, owner)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: take cancel requests of %s: %w", owner, err)
	}
	slices.Sort(ids)
	return ids, nil
}

// --- reads: through the pool, committed data only ---

const runColumns = `id, workflow_id, kind,
coalesce((SELECT d.definition FROM definitions d WHERE d.hash = runs.definition_hash), ''),
status, input, waiting_for_input, current_node_id, pending_approvals, error, work_dir,
created_at, updated_at, finished_at, prompt_tokens, completion_tokens, total_tokens, cost_usd`
