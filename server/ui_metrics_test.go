package server

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

func TestUIServing(t *testing.T) {
	t.Parallel()
	ui := fstest.MapFS{
		"index.html":          {Data: []byte("<!doctype html><div id=root></div>")},
		"favicon.svg":         {Data: []byte("<svg/>")},
		"assets/app-9f8e.js":  {Data: []byte("console.log('app')")},
		"assets/app-9f8e.css": {Data: []byte("body{}")},
	}
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.ui = ui })
	cases := []struct {
		path, body, cache, ctype string
		status                   int
	}{
		{"/", "<div id=root>", "no-cache", "text/html", 200},
		{"/index.html", "<div id=root>", "no-cache", "text/html", 200},
		{"/runs/1234", "<div id=root>", "no-cache", "text/html", 200}, // single-page routing
		{"/workflows/abc/edit", "<div id=root>", "no-cache", "text/html", 200},
		{"/assets/app-9f8e.js", "console.log", "public, max-age=31536000, immutable", "javascript", 200},
		{"/assets/app-9f8e.css", "body{}", "public, max-age=31536000, immutable", "text/css", 200},
		{"/favicon.svg", "<svg/>", "no-cache", "image/svg+xml", 200},
		{"/assets/missing-1234.js", "not_found", "", "application/json", 404},
		{"/../../etc/passwd", "<div id=root>", "no-cache", "text/html", 200},
		{"/api/unknown", "not_found", "", "application/json", 404},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			r := v.with(t).request("GET", tc.path, nil)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.body) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := r.header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control %q, want %q", got, tc.cache)
			}
			if got := r.header.Get("Content-Type"); !strings.Contains(got, tc.ctype) {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
		})
	}
	if r := v.request("POST", "/somewhere", "{}"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST to the UI: %d", r.status)
	}

	// A UI-less build serves a note.
	bare := newEnv(t, func(o *envOpts) { o.noLLM = true })
	r := bare.request("GET", "/", nil)
	if r.status != 200 || !strings.Contains(string(r.body), "without its web UI") {
		t.Fatalf("no UI: %d %s", r.status, r.body)
	}
}

// metricValue finds one sample in the Prometheus text output.
func metricValue(t *testing.T, text, name string, labels ...string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(line, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		return f
	}
	t.Fatalf("no sample %s%v in:\n%s", name, labels, grepLines(text, name))
	return 0
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.fake.Enqueue(fakeopenai.Reply{Status: 500}) // one failed attempt, retried
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
	v.wait(run.RunID)
	var paused runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &paused)
	v.wait(paused.RunID)
	ws := v.mustDial("/api/ws")
	defer ws.Close()
	waitFor(t, "the status watcher", func() bool { _, n := v.srv.hub.subscriberCounts(); return n == 1 })

	r := v.must(http.StatusOK, "GET", "/metrics", nil, nil)
	text := string(r.body)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("content type %q", r.header.Get("Content-Type"))
	}
	checks := []struct {
		name   string
		labels []string
		want   func(float64) bool
	}{
		{"switchyard_node_duration_seconds_count", []string{`type="agent"`, `status="completed"`}, func(f float64) bool { return f == 3 }},
		{"switchyard_node_duration_seconds_count", []string{`type="start"`}, func(f float64) bool { return f == 2 }},
		{"switchyard_llm_call_duration_seconds_count", []string{`model="gpt-5-mini"`}, func(f float64) bool { return f == 3 }},
		{"switchyard_llm_errors_total", []string{`kind="retry"`}, func(f float64) bool { return f == 1 }},
		{"switchyard_runs_finished_total", []string{`status="completed"`}, func(f float64) bool { return f == 1 }},
		{"switchyard_runs", []string{`status="paused"`}, func(f float64) bool { return f == 1 }},
		{"switchyard_runs", []string{`status="running"`}, func(f float64) bool { return f == 0 }},
		{"switchyard_websocket_clients", []string{`stream="status"`}, func(f float64) bool { return f == 1 }},
		{"switchyard_store_queue_depth", nil, func(f float64) bool { return f >= 0 }},
		{"switchyard_store_events_written_total", nil, func(f float64) bool { return f > 10 }},
		{"switchyard_store_commits_total", nil, func(f float64) bool { return f >= 1 }},
		{"switchyard_store_writer_busy_seconds_total", nil, func(f float64) bool { return f > 0 && f < 60 }},
		{"switchyard_events_total", nil, func(f float64) bool { return f > 10 }},
		{"switchyard_http_requests_total", []string{`route="/api/runs"`, `method="POST"`, `code="201"`}, func(f float64) bool { return f == 2 }},
		{"go_goroutines", nil, func(f float64) bool { return f > 0 }},
	}
	for _, c := range checks {
		if got := metricValue(t, text, c.name, c.labels...); !c.want(got) {
			t.Errorf("%s%v = %v", c.name, c.labels, got)
		}
	}
	if regexp.MustCompile(`switchyard_runs\{status="completed"\}`).MatchString(text) {
		t.Error("switchyard_runs counts ended runs; they belong in switchyard_runs_finished_total")
	}

	// Approving moves the paused run out of the gauge.
	v.must(http.StatusOK, "POST", "/api/runs/"+paused.RunID+"/approvals/ok", map[string]any{"decision": "approve"}, nil)
	v.wait(paused.RunID)
	text = string(v.must(http.StatusOK, "GET", "/metrics", nil, nil).body)
	if got := metricValue(t, text, "switchyard_runs", `status="paused"`); got != 0 {
		t.Errorf("paused runs after approval: %v", got)
	}
	if got := metricValue(t, text, "switchyard_runs_finished_total", `status="completed"`); got != 2 {
		t.Errorf("finished runs: %v", got)
	}
	if got := metricValue(t, text, "switchyard_node_duration_seconds_count", `type="approval"`); got != 1 {
		t.Errorf("approval durations: %v", got)
	}
}

// TestMetricsSinkIgnoresNoise: the sink copes with events it does not
// measure and with data it cannot parse.
func TestMetricsSinkIgnoresNoise(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.Emit(&engine.Event{RunID: "r", NodeID: "n", Type: engine.EvStepEnd, Data: []byte(`{not json`)})
	m.Emit(&engine.Event{RunID: "r", NodeID: "n", Type: engine.EvLLMResponse})
	m.Emit(&engine.Event{RunID: "r", NodeID: "n", Type: engine.EvOutput, Content: "x"})
	m.Emit(&engine.Event{RunID: "r", NodeID: engine.SystemNodeID, Type: engine.EvRunStatus, Content: "failed"})
	if n := m.tracked(); n != 0 {
		t.Fatalf("tracking state left behind: %d runs", n)
	}
}

// TestMetricsSinkConcurrentRuns: runs emitting at once from many
// goroutines (the shards' locks) are all counted and leave nothing behind.
func TestMetricsSinkConcurrentRuns(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	const runs, steps = 64, 20
	var wg sync.WaitGroup
	for r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("run-%d", r)
			for s := range steps {
				node := fmt.Sprintf("n%d", s)
				m.Emit(&engine.Event{RunID: id, NodeID: node, Type: engine.EvStepStart, Data: []byte(`{"type":"if","visit":1}`)})
				m.Emit(&engine.Event{RunID: id, NodeID: node, Type: engine.EvStepEnd, Data: []byte(`{"durationMs":1,"output":"","status":"completed","visit":1}`)})
			}
			m.Emit(&engine.Event{RunID: id, NodeID: engine.SystemNodeID, Type: engine.EvRunStatus, Content: "completed"})
		}()
	}
	wg.Wait()
	if n := m.tracked(); n != 0 {
		t.Fatalf("%d runs still tracked after they ended", n)
	}
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var events float64
	var durations uint64
	for _, f := range fams {
		switch f.GetName() {
		case "switchyard_events_total":
			events = f.GetMetric()[0].GetCounter().GetValue()
		case "switchyard_node_duration_seconds":
			for _, mt := range f.GetMetric() {
				durations += mt.GetHistogram().GetSampleCount()
			}
		}
	}
	if events != runs*(2*steps+1) || durations != runs*steps {
		t.Errorf("events %v, node durations %d; want %d and %d", events, durations, runs*(2*steps+1), runs*steps)
	}
}

// TestWebsocketClientsCountedOnceConnected: a client is in
// switchyard_websocket_clients as soon as its handshake is answered. It
// was counted only after the upgrade, so a scrape right after a client
// connected could miss it (TestMetrics failed so on a loaded machine).
func TestWebsocketClientsCountedOnceConnected(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	v.wait(run.RunID)
	gauge := func(stream string) float64 {
		var m dto.Metric
		if err := v.srv.metrics.wsClients.WithLabelValues(stream).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	for _, c := range []struct{ stream, path string }{
		{"status", "/api/ws"},
		{"run", "/api/runs/" + run.RunID + "/ws"},
	} {
		for i := range 100 {
			ws := v.mustDial(c.path)
			if got := gauge(c.stream); got != 1 {
				t.Fatalf("%s stream, dial %d: %v clients counted once connected, want 1", c.stream, i, got)
			}
			ws.Close()
			waitFor(t, "the client to be gone", func() bool { return gauge(c.stream) == 0 })
		}
	}
}
