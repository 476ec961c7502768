package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// receiver is a webhook endpoint that records posts; fail answers the
// first posts with the given statuses.
type receiver struct {
	mu       sync.Mutex
	attempts int
	got      []Notice
	fail     []int
	ts       *httptest.Server
}

func newReceiver(t *testing.T, fail ...int) *receiver {
	rc := &receiver{fail: fail}
	rc.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.attempts++
		if rc.attempts <= len(rc.fail) {
			w.WriteHeader(rc.fail[rc.attempts-1])
			return
		}
		var n Notice
		if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &n) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.got = append(rc.got, n)
	}))
	t.Cleanup(rc.ts.Close)
	return rc
}

func (rc *receiver) state() (int, []Notice) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.attempts, append([]Notice(nil), rc.got...)
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func fastNotifier(t *testing.T, url string) *Notifier {
	t.Helper()
	n, err := NewNotifier(NotifierOptions{URL: url, PublicURL: "http://sy.example:8080/", Logger: quietLog,
		Backoff: []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// TestNotifyWebhook: each node that starts waiting is posted once, as JSON
// with the run, node, prompt, output and a link, retried after failures.
func TestNotifyWebhook(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusServiceUnavailable)
	n := fastNotifier(t, rc.ts.URL)
	v := newEnv(t, func(o *envOpts) { o.sinks = []engine.Sink{n} })

	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph(), "input": "topic"}, &run)
	v.wait(run.RunID)
	waitFor(t, "the notice", func() bool { _, got := rc.state(); return len(got) == 1 })
	attempts, got := rc.state()
	if attempts != 3 {
		t.Errorf("attempts = %d, want 3 (two failures, then delivered)", attempts)
	}
	no := got[0]
	if no.Event != "wait_input" || no.RunID != run.RunID || no.NodeID != "ok" || no.Prompt != "Ship it?" ||
		no.Input != "echo: topic" || no.Link != "http://sy.example:8080/runs/"+run.RunID || no.Since.IsZero() {
		t.Fatalf("notice %+v", no)
	}
	if !strings.Contains(no.Text, "ok") || !strings.Contains(no.Text, "Ship it?") || !strings.Contains(no.Text, no.Link) {
		t.Errorf("text %q lacks node, prompt or link", no.Text)
	}

	// Approve: the run ends; no second notice for the same wait.
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "approve"}, nil)
	if r := v.wait(run.RunID); r.Status != engine.StatusCompleted {
		t.Fatalf("status %s", r.Status)
	}
	// A second run that waits is a second notice.
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	v.wait(run.RunID)
	waitFor(t, "the second notice", func() bool { _, got := rc.state(); return len(got) == 2 })
	if _, got := rc.state(); got[1].RunID != run.RunID {
		t.Fatalf("second notice %+v", got[1])
	}
}

// TestNotifyNeverBlocksRuns: a receiver that never answers, or answers
// 4xx, does not hold up runs; a 4xx is not retried.
func TestNotifyNeverBlocksRuns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	n := fastNotifier(t, hang.URL)
	v := newEnv(t, func(o *envOpts) { o.sinks = []engine.Sink{n} })
	for i := 0; i < 5; i++ {
		var run runJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
		v.wait(run.RunID)
		v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "reject"}, nil)
		if r := v.wait(run.RunID); !r.Status.Terminal() {
			t.Fatalf("run %d: %s", i, r.Status)
		}
	}

	// A full queue drops notices instead of blocking Emit.
	small, err := NewNotifier(NotifierOptions{URL: hang.URL, Queue: 2, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	for i := 0; i < 1000; i++ {
		small.Emit(&engine.Event{Type: engine.EvWaitInput, RunID: fmt.Sprint(i), NodeID: "n"})
	}
	if d := small.dropped.Load(); d < 990 {
		t.Errorf("dropped %d of 1000 notices on a queue of 2 with a stuck receiver", d)
	}

	rc := newReceiver(t, http.StatusNotFound)
	four := fastNotifier(t, rc.ts.URL)
	four.Emit(&engine.Event{Type: engine.EvWaitInput, RunID: "r1", NodeID: "n", Data: []byte(`{"input":"x"}`)})
	four.Emit(&engine.Event{Type: engine.EvStepEnd, RunID: "r1", NodeID: "n"}) // ignored
	four.Emit(&engine.Event{Type: engine.EvWaitInput, RunID: "r2", NodeID: "n"})
	waitFor(t, "the second notice", func() bool { _, got := rc.state(); return len(got) == 1 })
	if attempts, got := rc.state(); attempts != 2 || got[0].RunID != "r2" {
		t.Fatalf("attempts %d, got %+v: want the 404 not retried and r2 delivered", attempts, got)
	}
}

func TestNotifierRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, public string }{
		{"", ""}, {"slack.com/hook", ""}, {"ftp://x/y", ""}, {"http://", ""}, {"http://ok", "not a url"}, {"http://ok", "file:///x"},
	} {
		if n, err := NewNotifier(NotifierOptions{URL: tc.url, PublicURL: tc.public}); err == nil {
			n.Close()
			t.Errorf("NewNotifier(%q, %q) accepted", tc.url, tc.public)
		}
	}
}

// TestNotifyDoesNotFollowRedirects: a receiver answering 307 toward the
// server's own cancel route must not cancel the waiting run (blind SSRF);
// the failure is logged without the webhook URL, a secret for Slack.
func TestNotifyDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var target sync.Map // "url" → the server's address, once known
	redirected := make(chan string, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var no Notice
		_ = json.NewDecoder(r.Body).Decode(&no)
		base, _ := target.Load("url")
		loc := fmt.Sprintf("%s/api/runs/%s/cancel", base, no.RunID)
		redirected <- loc
		http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(hook.Close)
	const secret = "/services/T0001/B0002/XyzSecretHookPath"
	logs := &syncBuffer{}
	n, err := NewNotifier(NotifierOptions{URL: hook.URL + secret, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Backoff: []time.Duration{time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	v := newEnv(t, func(o *envOpts) { o.sinks = []engine.Sink{n} })
	target.Store("url", v.url)

	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	v.wait(run.RunID)
	<-redirected
	// Either the notifier gives up on the 307 (the fix) or the run is
	// cancelled through the redirect (the bug).
	waitFor(t, "the notifier to give up or the run to end", func() bool {
		r, err := v.st.GetRun(context.Background(), run.RunID)
		return strings.Contains(logs.String(), "notify failed") || err == nil && r.Status.Terminal()
	})
	r, err := v.st.GetRun(context.Background(), run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != engine.StatusPaused {
		t.Fatalf("run is %s after the receiver redirected to its cancel route, want paused", r.Status)
	}
	if out := logs.String(); strings.Contains(out, "XyzSecretHookPath") || !strings.Contains(out, "307") {
		t.Errorf("log should name the 307 and never the webhook's secret path:\n%s", out)
	}
}

// TestNotifyRedactsURLOnNetworkErrors: a dead receiver's dial error (which
// net/http words with the full URL) is logged without the URL's path.
func TestNotifyRedactsURLOnNetworkErrors(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	u := dead.URL
	dead.Close()
	logs := &syncBuffer{}
	n, err := NewNotifier(NotifierOptions{URL: u + "/services/T1/B2/SecretToken?x=SecretQuery", Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Backoff: []time.Duration{time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	n.Emit(&engine.Event{Type: engine.EvWaitInput, RunID: "r1", NodeID: "n"})
	waitFor(t, "the notice to be dropped", func() bool { return strings.Contains(logs.String(), "notice dropped") })
	if out := logs.String(); strings.Contains(out, "SecretToken") || strings.Contains(out, "SecretQuery") {
		t.Errorf("log leaks the webhook URL:\n%s", out)
	}
	if _, err := NewNotifier(NotifierOptions{URL: "ftp://x/services/SecretToken"}); err == nil || strings.Contains(err.Error(), "SecretToken") {
		t.Errorf("a bad URL's error should not quote its path: %v", err)
	}
}

// TestNoticeTextEscapesSlackMarkup: run input and prompts reach Slack as
// text, not as <!channel> mentions or links.
func TestNoticeTextEscapesSlackMarkup(t *testing.T) {
	t.Parallel()
	no := Notice{RunID: "r&1", NodeID: "<n>", Prompt: "<!channel> ship <@U123> & <http://evil|click>?", Link: "http://sy.example/runs/r&1"}
	got := noticeText(no)
	for _, bad := range []string{"<!channel>", "<@U123>", "<http://evil|click>", "<n>", "r&1"} {
		if strings.Contains(got, bad) {
			t.Errorf("text %q keeps %q unescaped", got, bad)
		}
	}
	for _, want := range []string{"&lt;!channel&gt;", "&lt;@U123&gt;", "&amp;", "&lt;n&gt;"} {
		if !strings.Contains(got, want) {
			t.Errorf("text %q lacks %q", got, want)
		}
	}
}
