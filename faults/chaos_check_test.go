//go:build linux

package faults

// The chaos test's reads of what is durable (the database, read directly,
// and the side-effect file) and its final checks.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store/sqlite"
)

// storedRun is a run's row.
type storedRun struct {
	status engine.RunStatus
	input  string
}

// chaosDB reads the store's tables directly.
type chaosDB interface {
	// runs returns every run by id.
	runs(ctx context.Context) (map[string]storedRun, error)
	// events returns the logs (only events of types, when given), by run,
	// in seq order.
	events(ctx context.Context, types ...string) (map[string][]engine.Event, error)
}

// eventsQuery selects events; micros is the dialect's timestamp as
// microseconds since 1970.
func eventsQuery(micros string, types []string, param func(i int) string) (string, []any) {
	q := `SELECT run_id, seq, node_id, type, content, ` + micros + `, data FROM run_events`
	var args []any
	if len(types) > 0 {
		var ps []string
		for i, ty := range types {
			ps = append(ps, param(i+1))
			args = append(args, ty)
		}
		q += ` WHERE type IN (` + strings.Join(ps, ", ") + `)`
	}
	return q + ` ORDER BY run_id, seq`, args
}

// scanner is what sql.Rows and pgx.Rows share.
type scanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

func scanEvents(rows scanner) (map[string][]engine.Event, error) {
	out := map[string][]engine.Event{}
	for rows.Next() {
		var ev engine.Event
		var data *string
		var ts int64
		if err := rows.Scan(&ev.RunID, &ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ts, &data); err != nil {
			return nil, err
		}
		ev.Timestamp = time.UnixMicro(ts)
		if data != nil {
			ev.Data = json.RawMessage(*data)
		}
		out[ev.RunID] = append(out[ev.RunID], ev)
	}
	return out, rows.Err()
}

func scanRuns(rows scanner) (map[string]storedRun, error) {
	out := map[string]storedRun{}
	for rows.Next() {
		var id, status, input string
		if err := rows.Scan(&id, &status, &input); err != nil {
			return nil, err
		}
		out[id] = storedRun{status: engine.RunStatus(status), input: input}
	}
	return out, rows.Err()
}

// sqliteChaosDB reads the SQLite file of a data folder; a missing or
// still empty database has no runs.
type sqliteChaosDB struct{ data string }

func (s sqliteChaosDB) open() (*sql.DB, error) {
	path := filepath.Join(s.data, "switchyard.db")
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func (s sqliteChaosDB) runs(ctx context.Context) (map[string]storedRun, error) {
	db, err := s.open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, status, input FROM runs`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanRuns(rows)
}

func (s sqliteChaosDB) events(ctx context.Context, types ...string) (map[string][]engine.Event, error) {
	db, err := s.open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return sqliteEvents(ctx, db, types...)
}

// sqliteEvents reads the logs of an SQLite database (only events of
// types, when given), by run, in seq order. A row may hold several events
// (a pack): they are expanded as the store does.
func sqliteEvents(ctx context.Context, db *sql.DB, types ...string) (map[string][]engine.Event, error) {
	rows, err := db.QueryContext(ctx, `SELECT run_id, seq, node_id, type, content, ts, data, n, more
FROM run_events ORDER BY run_id, seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]engine.Event{}
	var evs []engine.Event
	for rows.Next() {
		var ev engine.Event
		var data *string
		var ts, n int64
		var more []byte
		if err := rows.Scan(&ev.RunID, &ev.Seq, &ev.NodeID, &ev.Type, &ev.Content, &ts, &data, &n, &more); err != nil {
			return nil, err
		}
		ev.Timestamp = time.UnixMicro(ts)
		if data != nil {
			ev.Data = json.RawMessage(*data)
		}
		if evs, err = sqlite.ExpandEvents(evs[:0], ev, n, more); err != nil {
			return nil, err
		}
		for _, e := range evs {
			if len(types) == 0 || slices.Contains(types, e.Type) {
				out[e.RunID] = append(out[e.RunID], e)
			}
		}
	}
	return out, rows.Err()
}

// pgChaosDB reads a PostgreSQL database, a connection per read (the
// cluster restarts in the middle).
type pgChaosDB struct{ dsn string }

func (p *pgChaosDB) runs(ctx context.Context) (map[string]storedRun, error) {
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT id, status, input FROM runs`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanRuns(rows)
}

func (p *pgChaosDB) events(ctx context.Context, types ...string) (map[string][]engine.Event, error) {
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q, args := eventsQuery("(extract(epoch FROM ts) * 1000000)::bigint", types, func(i int) string { return fmt.Sprintf("$%d", i) })
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanEvents(rows)
}

// --- the side-effect file ---

// sideLines counts the lines of the side-effect file: bash steps write
// "B <key>/<node> <pid>", tool calls "CALL <id> <pid>" or "GATED <id>
// <pid>" (the pid of the shell that wrote it, for diagnoses).
type sideLines struct {
	steps map[string]int
	calls map[string]int
	pids  map[string][]string // step name or call id -> the writers' pids
	bad   []string
}

func readSide(path string) (sideLines, error) {
	s := sideLines{steps: map[string]int{}, calls: map[string]int{}, pids: map[string][]string{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case len(f) == 3 && f[0] == "B":
			s.steps[f[1]]++
			s.pids[f[1]] = append(s.pids[f[1]], f[2])
		case len(f) == 3 && (f[0] == "CALL" || f[0] == "GATED"):
			s.calls[f[1]]++
			s.pids[f[1]] = append(s.pids[f[1]], f[2])
		default:
			s.bad = append(s.bad, line)
		}
	}
	return s, nil
}

// --- freezing what is durable ---

type toolData struct {
	CallID   string `json:"callId"`
	OK       bool   `json:"ok"`
	Denied   bool   `json:"denied"`
	Decision string `json:"decision"`
	Note     string `json:"note"`
	Tool     *struct {
		CallID string `json:"callId"`
	} `json:"tool"`
}

func toolDataOf(raw json.RawMessage) toolData {
	var d toolData
	_ = json.Unmarshal(raw, &d)
	return d
}

// freeze notes the lines of every bash step and tool call whose completion
// is durable: they must never change again. The database is read before
// the file: a completion's line was written before the completion was.
// The monkey ignores a read that fails (the database restarting).
func (c *chaos) freeze() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runs, err := c.db.runs(ctx)
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	evs, err := c.db.events(ctx, engine.EvStepEnd, engine.EvToolResult)
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	lines, err := readSide(c.side)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, list := range evs {
		sr, ok := runs[id]
		if !ok {
			continue
		}
		for _, ev := range list {
			switch {
			case ev.Type == engine.EvStepEnd && slices.Contains(chaosBashNodes, ev.NodeID) &&
				stepOf(ev.Data).Status == string(engine.NodeCompleted):
				name := sr.input + "/" + ev.NodeID
				if _, ok := c.frozenSteps[name]; !ok {
					c.frozenSteps[name] = lines.steps[name]
				}
			case ev.Type == engine.EvToolResult:
				call := toolDataOf(ev.Data).CallID
				if _, ok := c.frozenCalls[call]; !ok {
					c.frozenCalls[call] = lines.calls[call]
				}
			}
		}
	}
	return nil
}

// --- the final checks ---

// chaosFigures are the figures of one chaos run.
type chaosFigures struct {
	runs, adopted, kills, dbRestarts, selfExits   int
	races, singleWinners, lostAnswers, reAcked    int
	lost, doubleDecisions, reLogged, mixedLogs    int
	steps, dupSteps, inFlightSteps                int
	calls, dupCalls, inFlightCalls, rejectedCalls int
}

func (f chaosFigures) String() string {
	restarts := ""
	if f.dbRestarts > 0 {
		restarts = fmt.Sprintf(", %d database restart(s)", f.dbRestarts)
	}
	return fmt.Sprintf("%d runs (%d created by a request whose answer was lost), %d SIGKILLs%s, %d approval races (%d single winners, "+
		"%d won by a racer whose answer was lost, %d re-acknowledged after a fault), %d lost, %d double decisions (%d answers logged again), %d mixed logs, "+
		"%d duplicated finished steps (%d in-flight steps ran again, %d steps), "+
		"%d duplicated finished tool calls (%d in-flight calls ran again, %d calls, %d rejected), %d serve exits without a kill",
		f.runs, f.adopted, f.kills, restarts, f.races, f.singleWinners, f.lostAnswers, f.reAcked, f.lost, f.doubleDecisions, f.reLogged, f.mixedLogs,
		f.dupSteps, f.inFlightSteps, f.steps, f.dupCalls, f.inFlightCalls, f.calls, f.rejectedCalls, f.selfExits)
}

// answer is a decision as logged (input_received).
type answer struct{ decision, note string }

// check asserts the promises on every run and returns the figures.
func (c *chaos) check() chaosFigures {
	t := c.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stored, err := c.db.runs(ctx)
	if err != nil {
		t.Fatalf("read runs: %v", err)
	}
	all, err := c.db.events(ctx)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	lines, err := readSide(c.side)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines.bad {
		c.vs.add("unexpected line in the side-effect file", "%q", l)
	}
	// Nothing runs beside the checks any more; the lock only orders them
	// after the clients' writes (disturbed takes it too).
	c.mu.Lock()
	runs := slices.Clone(c.runs)
	f := chaosFigures{runs: len(c.runs), kills: c.kills, dbRestarts: c.dbRestarts, selfExits: c.selfExits}
	c.mu.Unlock()
	knownCalls := map[string]bool{}
	knownKeys := map[string]bool{}
	for _, r := range runs {
		knownKeys[r.key] = true
		sr, ok := stored[r.id]
		if !ok {
			f.lost++
			c.vs.add("run lost", "run %s (%s) was created and is not in the database", r.id, r.key)
			continue
		}
		evs := all[r.id]
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				c.vs.add("gap in the stored event log", "run %s: event %d has seq %d", r.id, i+1, ev.Seq)
				break
			}
		}
		if why := mixedLog(evs); why != "" {
			f.mixedLogs++
			c.vs.add("the log mixes two drivers' histories", "run %s (%s): %s", r.id, r.key, why)
			node, _, _ := strings.Cut(why, " ")
			c.diagnose(r, evs, node, "", nil)
		}
		logVs := &violations{}
		checkLog(logVs, r.id, evs)
		for _, v := range logVs.list {
			c.vs.add(v.kind, "%s", v.msg)
			f.dupSteps++
		}
		logged := c.checkDecisions(r, evs, &f)
		want := engine.StatusCompleted
		if r.kind == kindBash && decisionOf(logged, "gate") == "reject" {
			want = engine.StatusCancelled
		}
		if sr.status != want {
			f.lost++
			c.vs.add("run did not end as expected", "run %s (%s) is %s, want %s (%s)", r.id, r.key, sr.status, want, runError(evs))
		}
		completed := map[string]int{}
		started := map[string]int{}
		for _, ev := range evs {
			switch {
			case ev.Type == engine.EvStepEnd && stepOf(ev.Data).Status == string(engine.NodeCompleted):
				completed[ev.NodeID]++
			case ev.Type == engine.EvStepStart:
				started[ev.NodeID]++
			}
		}
		switch r.kind {
		case kindChain:
			// The branch the logged decision chose ran, the other did not.
			if d := decisionOf(logged, "ok"); sr.status == engine.StatusCompleted {
				ran, skipped := "a2", "r"
				if d == "reject" {
					ran, skipped = "r", "a2"
				}
				if completed[ran] != 1 || started[skipped] != 0 {
					c.vs.add("decision not applied as logged", "run %s: logged %q, %s completed %d times, %s started %d times",
						r.id, d, ran, completed[ran], skipped, started[skipped])
				}
			}
		case kindBash:
			gate := decisionOf(logged, "gate")
			for _, n := range chaosBashNodes {
				name := r.key + "/" + n
				l := lines.steps[name]
				if completed[n] == 0 {
					// Never finished (the run was cancelled): what it did is
					// an in-flight attempt's.
					f.inFlightSteps += l
					if n == "b3" && gate == "reject" && (l > 0 || started[n] > 0) {
						c.vs.add("a step after a rejected approval ran", "run %s: %s started %d times, %d lines", r.id, n, started[n], l)
					}
					continue
				}
				f.steps++
				fz, ok := c.frozenSteps[name]
				switch {
				case !ok:
					c.vs.add("completed step never seen durable", "run %s: %s", r.id, n)
				case fz == 0:
					c.vs.add("step completed without its side effect", "run %s: %s completed, no line", r.id, n)
				default:
					f.inFlightSteps += fz - 1
				}
				if ok && l != fz {
					f.dupSteps++
					c.vs.add("finished step ran again", "run %s: %s had %d lines when its completion was durable, %d at the end", r.id, n, fz, l)
					c.diagnose(r, evs, n, "", lines.pids[name])
				}
			}
		}
		if r.kind == kindFan || r.kind == kindTools {
			c.checkCalls(r, sr, evs, logged, lines, knownCalls, &f)
		}
	}
	for name := range lines.steps {
		if key, _, _ := strings.Cut(name, "/"); !knownKeys[key] {
			c.vs.add("side effect of a step of no known run", "%s", name)
		}
	}
	for id := range lines.calls {
		if !knownCalls[id] {
			c.vs.add("side effect of a tool call no log has", "%s (%d lines)", id, lines.calls[id])
		}
	}
	return f
}

// mixedLog reports a log that is not one driver's history: a bash step
// completed with no process since its last start, or a tool result with
// no call before it. Events a stale driver wrote after another moved the
// log on leave such holes (TestChaosReproStaleRunnerRevived).
func mixedLog(evs []engine.Event) string {
	proc := map[string]bool{}  // node -> a process started since its last step_start
	typ := map[string]string{} // node -> its type, from its step_start
	calls := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case engine.EvStepStart:
			proc[ev.NodeID] = false
			typ[ev.NodeID] = stepOf(ev.Data).Type
		case engine.EvProcessStart:
			proc[ev.NodeID] = true
		case engine.EvStepEnd:
			if typ[ev.NodeID] == "yaml.bash" && stepOf(ev.Data).Status == string(engine.NodeCompleted) && !proc[ev.NodeID] {
				return fmt.Sprintf("%s completed (seq %d) with no process since its last step_start", ev.NodeID, ev.Seq)
			}
		case engine.EvToolCall:
			calls[toolDataOf(ev.Data).CallID] = true
		case engine.EvToolResult:
			if id := toolDataOf(ev.Data).CallID; !calls[id] {
				return fmt.Sprintf("%s has a result for call %s (seq %d) with no tool_call before it", ev.NodeID, id, ev.Seq)
			}
		}
	}
	return ""
}

func runError(evs []engine.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == engine.EvError || (evs[i].Type == engine.EvRunStatus && evs[i].NodeID == engine.SystemNodeID) {
			return evs[i].Type + ": " + truncate(evs[i].Content, 200)
		}
	}
	return "no error logged"
}

func decisionOf(logged map[string][]answer, wk string) string {
	if a := logged[wk]; len(a) > 0 {
		return a[0].decision
	}
	return ""
}

// checkDecisions compares the log's waits and answers with what the
// racers were told, and returns the logged answers by wait.
func (c *chaos) checkDecisions(r *chaosRun, evs []engine.Event, f *chaosFigures) map[string][]answer {
	double := map[string]bool{} // waits decided twice, however it shows
	defer func() { f.doubleDecisions += len(double) }()
	waits := map[string]bool{}
	logged := map[string][]answer{}
	for _, ev := range evs {
		switch ev.Type {
		case engine.EvWaitInput:
			d := toolDataOf(ev.Data)
			call := ""
			if d.Tool != nil {
				call = d.Tool.CallID
			}
			waits[waitKey(ev.NodeID, call)] = true
		case engine.EvInputReceived:
			d := toolDataOf(ev.Data)
			wk := waitKey(ev.NodeID, d.CallID)
			logged[wk] = append(logged[wk], answer{strings.ToLower(d.Decision), d.Note})
		}
	}
	for wk, as := range logged {
		if !waits[wk] {
			c.vs.add("answer to a wait the log never showed", "run %s: %s answered %+v", r.id, wk, as)
		}
		distinct := map[answer]bool{}
		for _, a := range as {
			distinct[a] = true
		}
		if len(distinct) > 1 {
			double[wk] = true
			c.vs.add("a wait answered twice in the log", "run %s: %s answered %+v", r.id, wk, as)
			node, _, _ := strings.Cut(wk, "#")
			c.diagnose(r, evs, node, "", nil)
		}
		f.reLogged += len(as) - len(distinct)
	}
	for wk := range waits {
		if len(logged[wk]) == 0 {
			c.vs.add("a wait never answered", "run %s: %s", r.id, wk)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for wk, w := range r.waits {
		f.races++
		var wins []*racer
		ours := false
		var from, to time.Time
		for i, rd := range w.rounds {
			if i == 0 {
				from = rd.start
			}
			to = rd.end
			for _, rc := range rd.racers {
				if rc.won {
					wins = append(wins, rc)
				}
				if len(logged[wk]) > 0 && rc.note == logged[wk][0].note {
					ours = true
				}
			}
		}
		as := logged[wk]
		if len(as) == 0 {
			if len(wins) > 0 {
				c.vs.add("an acknowledged decision is not in the log", "run %s: %s, %d racers got 200", r.id, wk, len(wins))
				c.diagnoseRaces(w)
				c.diagnose(r, evs, w.node, "", nil)
			}
			continue
		}
		if !ours {
			c.vs.add("a wait answered by a racer of another wait", "run %s: %s logged %+v", r.id, wk, as[0])
		}
		for _, rc := range wins {
			if rc.decision != as[0].decision {
				double[wk] = true
				c.vs.add("200 for a decision the log does not have", "run %s: %s: %q (%s) got 200, the log has %+v",
					r.id, wk, rc.decision, rc.note, as[0])
				c.diagnoseRaces(w)
				c.diagnose(r, evs, w.node, "", nil)
			}
		}
		switch {
		case len(wins) == 0:
			f.lostAnswers++
		case len(wins) == 1:
			f.singleWinners++
		case double[wk]:
			// Counted above: the racers were told different answers.
		case c.disturbed(from, to):
			// The same answer, acknowledged again by a process that
			// re-applied it after a fault (engine: runner.applied).
			f.reAcked++
			if f.reAcked <= 3 {
				var got []string
				for _, rc := range wins {
					got = append(got, fmt.Sprintf("%s %q %v", rc.decision, rc.note, rc.codes))
				}
				c.t.Logf("re-acknowledged after a fault: run %s: %s (%s .. %s): %s; logged %+v", r.id, wk,
					from.Format("15:04:05.000"), to.Format("15:04:05.000"), strings.Join(got, "; "), as)
			}
		default:
			double[wk] = true
			var got []string
			for _, rc := range wins {
				got = append(got, fmt.Sprintf("%s %q %v", rc.decision, rc.note, rc.codes))
			}
			c.vs.add("two racers got 200 with no fault during the race", "run %s: %s (%s .. %s): %s; logged %+v",
				r.id, wk, from.Format("15:04:05.000"), to.Format("15:04:05.000"), strings.Join(got, "; "), as)
			c.diagnoseRaces(w)
			c.diagnose(r, evs, w.node, "", nil)
		}
	}
	return logged
}

// checkCalls checks a run's tool calls against their lines.
func (c *chaos) checkCalls(r *chaosRun, sr storedRun, evs []engine.Event, logged map[string][]answer, lines sideLines,
	known map[string]bool, f *chaosFigures) {
	results := map[string][]toolData{}
	var calls []string
	for _, ev := range evs {
		switch ev.Type {
		case engine.EvToolCall:
			id := toolDataOf(ev.Data).CallID
			if !known[id] {
				known[id] = true
				calls = append(calls, id)
			}
		case engine.EvToolResult:
			d := toolDataOf(ev.Data)
			results[d.CallID] = append(results[d.CallID], d)
		}
	}
	node := "agent"
	if r.kind == kindFan {
		node = "t"
	}
	if sr.status == engine.StatusCompleted && len(calls) != chaosToolCalls {
		c.vs.add("tool loop did not make its calls", "run %s: %d calls logged, want %d", r.id, len(calls), chaosToolCalls)
	}
	for _, id := range calls {
		f.calls++
		res := results[id]
		l := lines.calls[id]
		if len(res) > 1 {
			f.dupCalls++
			c.vs.add("a tool call's result logged twice", "run %s: %s: %+v", r.id, id, res)
		}
		if len(res) == 0 {
			f.inFlightCalls += l
			if sr.status == engine.StatusCompleted {
				c.vs.add("a tool call without a result in a completed run", "run %s: %s", r.id, id)
			}
			continue
		}
		gated := id == fmt.Sprintf("call_%s_%s_%d", r.key, node, chaosGatedCall)
		if gated {
			d := decisionOf(logged, waitKey(node, id))
			if res[0].Denied != (d == "reject") {
				c.vs.add("tool decision not applied as logged", "run %s: %s logged %q, result %+v", r.id, id, d, res[0])
			}
		}
		fz, ok := c.frozenCalls[id]
		switch {
		case !ok:
			c.vs.add("tool result never seen durable", "run %s: %s", r.id, id)
		case res[0].Denied:
			f.rejectedCalls++
			if fz != 0 || l != 0 {
				c.vs.add("a rejected tool call ran", "run %s: %s wrote %d lines", r.id, id, l)
			}
		case !res[0].OK:
			c.vs.add("a tool call failed", "run %s: %s: %+v", r.id, id, res[0])
		case fz == 0:
			c.vs.add("tool call succeeded without its side effect", "run %s: %s", r.id, id)
		default:
			f.inFlightCalls += fz - 1
		}
		if ok && l != fz {
			f.dupCalls++
			c.vs.add("finished tool call ran again", "run %s: %s had %d lines when its result was durable, %d at the end", r.id, id, fz, l)
			c.diagnose(r, evs, node, id, lines.pids[id])
		}
	}
}

// diagnoseRaces logs a wait's races: each racer's answers, in order.
func (c *chaos) diagnoseRaces(w *chaosWait) {
	var b strings.Builder
	fmt.Fprintf(&b, "races of wait %s:\n", waitKey(w.node, w.callID))
	for _, rd := range w.rounds {
		fmt.Fprintf(&b, "  round %s .. %s\n", rd.start.Format("15:04:05.000000"), rd.end.Format("15:04:05.000000"))
		for _, rc := range rd.racers {
			fmt.Fprintf(&b, "    %s %q (won %v):\n", rc.decision, rc.note, rc.won)
			for _, s := range rc.sent {
				fmt.Fprintf(&b, "      %s\n", s)
			}
		}
	}
	c.t.Log(b.String())
}

// diagnose logs what explains a duplicated effect of a node (of one of its
// tool calls, when call is set): the node's events, the pids that wrote
// the lines, the faults, and what the processes logged about the run.
func (c *chaos) diagnose(r *chaosRun, evs []engine.Event, node, call string, pids []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "diagnosis of run %s (%s), node %s %s: lines written by pids %v\n", r.id, r.key, node, call, pids)
	for _, ev := range evs {
		if ev.NodeID != node && ev.NodeID != engine.SystemNodeID {
			continue
		}
		if call != "" && (ev.Type == engine.EvToolCall || ev.Type == engine.EvToolResult) && toolDataOf(ev.Data).CallID != call {
			continue
		}
		fmt.Fprintf(&b, "  %s seq %d %s %s %s %s\n", ev.Timestamp.Format("15:04:05.000000"), ev.Seq, ev.NodeID, ev.Type,
			truncate(ev.Content, 80), truncate(string(ev.Data), 200))
	}
	c.mu.Lock()
	for _, f := range c.faults {
		fmt.Fprintf(&b, "  fault %s .. %s: %s\n", f.at.Format("15:04:05.000000"), f.until.Format("15:04:05.000000"), f.what)
	}
	c.mu.Unlock()
	c.h.mu.Lock()
	for _, p := range c.h.procs {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			// Failed reads while the database restarts say nothing here.
			if strings.Contains(line, r.id) && !strings.Contains(line, "msg=request") &&
				!strings.Contains(line, `msg="request failed"`) && !strings.Contains(line, "live events from other processes") {
				fmt.Fprintf(&b, "  pid %d: %s\n", p.pid(), truncate(line, 400))
			}
		}
	}
	c.h.mu.Unlock()
	c.t.Log(b.String())
}
