// Command growth measures what stored runs cost: it fills a real SQLite
// database with short runs driven by the engine (the three-node graph of
// `switchyard load runs`, agents answered by an in-process fake LLM, plus
// one YAML run of a workflows-folder file in every 20), and at each mark
// (10k, 100k, 1M runs by default) reports the database's bytes per run
// and the latency of GET /api/runs through the server's handler (no
// socket): the newest page, a drawn workflow's page and a YAML workflow's
// page.
//
//	go run ./store/internal/growth -dir /tmp/growth -marks 10000,100000 -replicate-to 1000000
//
// Driving a million runs through the engine takes well over an hour on a
// small shared machine, so -replicate-to copies the stored runs (with
// their node states, events and, before definitions were shared, their
// definitions) under new ids and later times until there are that many,
// then measures again: the bytes per run of copies are the originals',
// and the list latency is that of a database of that size. -resume
// continues with the database already in -dir.
//
// It is the program behind the growth table of the store layout notes;
// the same file, with openStore swapped for the old package, measured the
// store before.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/internal/loadgen"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/server"
)

const yamlSource = `name: Ask
description: one prompt, then another
nodes:
  - id: ask
    prompt: "hi $ARGUMENTS"
  - id: again
    depends_on: [ask]
    prompt: "more: $ask.output"
`

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "switchyard-growth"), "folder for the database (emptied first)")
	marks := flag.String("marks", "10000,100000,1000000", "run counts at which to measure")
	workers := flag.Int("workers", 64, "runs in flight")
	yamlEvery := flag.Int("yaml-every", 20, "one run in this many is a YAML run")
	samples := flag.Int("samples", 50, "requests per latency figure")
	replicateTo := flag.Int("replicate-to", 0, "after the marks, copy the stored runs until there are this many, and measure")
	resume := flag.Bool("resume", false, "keep the database in -dir and add to it")
	flag.Parse()
	var at []int
	for _, m := range strings.Split(*marks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(m))
		if err != nil || n <= 0 {
			log.Fatalf("-marks: %q is not a run count", m)
		}
		at = append(at, n)
	}
	slices.Sort(at)
	if *resume {
		at = nil
	} else if err := os.RemoveAll(*dir); err != nil {
		log.Fatal(err)
	}
	wfDir := filepath.Join(*dir, "workflows")
	if err := os.MkdirAll(wfDir, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"ask.yaml", "unrun.yaml"} {
		if err := os.WriteFile(filepath.Join(wfDir, name), []byte(yamlSource), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	f := &filler{dir: *dir, wfDir: wfDir, workers: *workers, yamlEvery: *yamlEvery, samples: *samples}
	fmt.Println("runs\tdb_bytes\tbytes_per_run\tfill_runs_per_s\tlist_p50_ms\tlist_drawn_p50_ms\tlist_yaml_p50_ms\tyaml_found\tlist_yaml_unrun_p50_ms")
	done := 0
	for _, m := range at {
		if err := f.fill(done, m); err != nil {
			log.Fatal(err)
		}
		done = m
		if err := f.measure(m); err != nil {
			log.Fatal(err)
		}
	}
	if *replicateTo > 0 {
		if err := replicate(f.dbPath(), *replicateTo); err != nil {
			log.Fatal(err)
		}
		f.fillRate = 0
		if err := f.measure(*replicateTo); err != nil {
			log.Fatal(err)
		}
	}
	if pruneThenMeasure != nil {
		if err := pruneThenMeasure(f); err != nil {
			log.Fatal(err)
		}
	}
}

// pruneThenMeasure, when set (prune.go: not in the store before
// retention), prunes the database and measures it again.
var pruneThenMeasure func(f *filler) error

type filler struct {
	dir, wfDir         string
	workers, yamlEvery int
	samples            int
	drawnID            string
	fillRate           float64
}

func (f *filler) dbPath() string { return filepath.Join(f.dir, "switchyard.db") }

// open opens the store, the engine and the server on the database.
func (f *filler) open() (runStore, *engine.Engine, *server.Server, *server.YAMLWorkflows, error) {
	st, err := openStore(context.Background(), f.dbPath())
	if err != nil {
		return nil, nil, nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	client, err := llm.New(llm.Config{BaseURL: "http://fake.invalid/v1", APIKey: "x",
		Transport: fakeopenai.InProcess{H: fakeopenai.New(fakeopenai.WithRequestLogLimit(0)).Handler()}})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	e, err := engine.New(engine.Config{Store: st, LLM: client, ArtifactsRoot: filepath.Join(f.dir, "artifacts"),
		Logger: quiet, MaxLLMCalls: 256})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	src, err := server.NewYAMLWorkflows(f.wfDir, server.YAMLOptions{Logger: quiet})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	srv, err := server.New(server.Config{Engine: e, Store: st, Token: "growth-token-0123456789abcdef0123456789", Logger: quiet,
		Workflows: src, WorkflowsDir: f.wfDir})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return st, e, srv, src, nil
}

// fill drives runs from have to want.
func (f *filler) fill(have, want int) error {
	st, e, srv, src, err := f.open()
	if err != nil {
		return err
	}
	defer st.Close()
	defer e.Close()
	defer srv.Shutdown(context.Background())
	ctx := context.Background()
	g, _, err := graph.Decode(loadgen.ThreeNodeGraph())
	if err != nil {
		return err
	}
	if f.drawnID == "" {
		rec := httptest.NewRecorder()
		body := fmt.Sprintf(`{"name":"Three nodes","graph":%s}`, loadgen.ThreeNodeGraph())
		req := httptest.NewRequest("POST", "/api/workflows", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer growth-token-0123456789abcdef0123456789")
		req.Header.Set("Content-Type", "application/json")
		srv.Handler().ServeHTTP(rec, req)
		var w struct{ ID string }
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &w) != nil || w.ID == "" {
			return fmt.Errorf("create workflow: %d %s", rec.Code, rec.Body)
		}
		f.drawnID = w.ID
	}
	var next atomic.Int64
	next.Store(int64(have))
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range f.workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(want) {
					return
				}
				var run *engine.Run
				var err error
				if f.yamlEvery > 0 && i%int64(f.yamlEvery) == 0 {
					run, err = src.StartWorkflow(ctx, e, "yaml.ask.yaml", engine.StartOptions{Input: fmt.Sprint(i), WorkDir: f.dir})
				} else {
					run, err = e.StartGraph(ctx, g, engine.StartOptions{Input: fmt.Sprint(i), WorkflowID: f.drawnID})
				}
				if err == nil {
					var r *engine.Run
					r, err = e.Wait(ctx, run.ID)
					if err == nil && r.Status != engine.StatusCompleted {
						err = fmt.Errorf("run %s ended %s: %s", r.ID, r.Status, r.Error)
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	f.fillRate = float64(want-have) / time.Since(start).Seconds()
	// YAML runs leave an artifacts folder each: not the database's growth.
	_ = os.RemoveAll(filepath.Join(f.dir, "artifacts"))
	return firstErr
}

// measure reports the database size (closed: the WAL checkpointed into
// it) and list latencies.
func (f *filler) measure(runs int) error {
	fi, err := os.Stat(f.dbPath())
	if err != nil {
		return err
	}
	st, e, srv, _, err := f.open()
	if err != nil {
		return err
	}
	defer st.Close()
	defer e.Close()
	defer srv.Shutdown(context.Background())
	if f.drawnID == "" {
		ws, err := st.ListWorkflows(context.Background())
		if err != nil || len(ws) != 1 {
			return fmt.Errorf("the drawn workflow: %d found, %v", len(ws), err)
		}
		f.drawnID = ws[0].ID
	}
	p50 := func(q string) (time.Duration, int, error) {
		var ds []time.Duration
		n := 0
		for i := range f.samples + 3 {
			req := httptest.NewRequest("GET", "/api/runs"+q, nil)
			req.Header.Set("Authorization", "Bearer growth-token-0123456789abcdef0123456789")
			rec := httptest.NewRecorder()
			t := time.Now()
			srv.Handler().ServeHTTP(rec, req)
			d := time.Since(t)
			if rec.Code != http.StatusOK {
				return 0, 0, fmt.Errorf("GET /api/runs%s: %d %s", q, rec.Code, rec.Body)
			}
			var list []json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				return 0, 0, err
			}
			n = len(list)
			if i >= 3 { // the first requests warm caches
				ds = append(ds, d)
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2], n, nil
	}
	all, _, err := p50("")
	if err != nil {
		return err
	}
	drawn, _, err := p50("?workflowId=" + f.drawnID)
	if err != nil {
		return err
	}
	yaml, found, err := p50("?workflowId=yaml.ask.yaml")
	if err != nil {
		return err
	}
	// A YAML workflow with no runs: the worst case of a scan.
	unrun, _, err := p50("?workflowId=yaml.unrun.yaml")
	if err != nil {
		return err
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	fmt.Printf("%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%d\t%s\n", runs, fi.Size(), fi.Size()/int64(runs), f.fillRate,
		ms(all), ms(drawn), ms(yaml), found, ms(unrun))
	return nil
}
