package fakeopenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// Ten parallel requests must all be in flight at once: each handler waits
// until it sees ten in flight, so a server that serialised them would fail.
func TestConcurrencyCounters(t *testing.T) {
	t.Parallel()
	const n = 10
	const latency = 50 * time.Millisecond
	var srv *fakeopenai.Server
	srv = fakeopenai.StartT(t, fakeopenai.WithLatency(latency), fakeopenai.WithHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		deadline := time.Now().Add(10 * time.Second)
		for srv.InFlight() < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return fakeopenai.Reply{Text: "hi " + req.LastUserMessage()}
	}))
	client := newClient(srv)

	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(string(rune('a' + i)))},
			})
			if err == nil && comp.Choices[0].Message.Content != "hi "+string(rune('a'+i)) {
				err = errors.New("wrong reply " + comp.Choices[0].Message.Content)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if elapsed := time.Since(start); elapsed < latency {
		t.Errorf("finished in %v, below the %v latency", elapsed, latency)
	}
	st := srv.Stats()
	if st.MaxConcurrent != n || st.InFlight != 0 || st.TotalRequests != n {
		t.Errorf("stats = %+v, want max %d, in flight 0, total %d", st, n, n)
	}
	if len(srv.Requests()) != n {
		t.Errorf("logged %d requests", len(srv.Requests()))
	}
	srv.Reset()
	if st := srv.Stats(); st.TotalRequests != 0 || st.MaxConcurrent != 0 || len(srv.Requests()) != 0 {
		t.Errorf("after Reset: %+v, %d requests", st, len(srv.Requests()))
	}
}

func TestReplyLatencyOverridesDefault(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithLatency(time.Hour))
	client := newClient(srv)
	srv.Enqueue(fakeopenai.Reply{Text: "quick", Latency: 30 * time.Millisecond})
	start := time.Now()
	comp, err := client.Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	if comp.Choices[0].Message.Content != "quick" || time.Since(start) < 30*time.Millisecond {
		t.Errorf("content=%q after %v", comp.Choices[0].Message.Content, time.Since(start))
	}
	// A negative latency opts out of the server default entirely.
	srv.Enqueue(fakeopenai.Reply{Text: "now", Latency: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if comp, err := client.Chat.Completions.New(ctx, chatParams()); err != nil || comp.Choices[0].Message.Content != "now" {
		t.Errorf("negative latency: %v", err)
	}
}

func TestRequestLogBounded(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithRequestLogLimit(3))
	client := newClient(srv)
	for range 5 {
		if _, err := client.Chat.Completions.New(context.Background(), chatParams()); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Seq != 3 || reqs[2].Seq != 5 {
		t.Fatalf("log seqs = %v", seqs(reqs))
	}
	if last, _ := srv.LastRequest(); last.Seq != 5 {
		t.Errorf("LastRequest.Seq = %d", last.Seq)
	}

	off := fakeopenai.StartT(t, fakeopenai.WithRequestLogLimit(0))
	offClient := newClient(off)
	if _, err := offClient.Chat.Completions.New(context.Background(), chatParams()); err != nil {
		t.Fatal(err)
	}
	if _, ok := off.LastRequest(); ok || off.TotalRequests() != 1 {
		t.Errorf("disabled log kept a request, total=%d", off.TotalRequests())
	}
}

func seqs(reqs []fakeopenai.Request) []int64 {
	out := make([]int64, len(reqs))
	for i, r := range reqs {
		out[i] = r.Seq
	}
	return out
}

func TestQueueBeforeHandler(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithHandler(func(*fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Text: "handler"}
	}))
	client := newClient(srv)
	srv.Enqueue(fakeopenai.Reply{Text: "q1"}, fakeopenai.Reply{Text: "q2"})
	var got []string
	for range 3 {
		comp, err := client.Chat.Completions.New(context.Background(), chatParams())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, comp.Choices[0].Message.Content)
	}
	srv.SetHandler(nil)
	comp, err := client.Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, comp.Choices[0].Message.Content)
	want := "q1,q2,handler,echo: one two three four five six seven eight"
	if strings.Join(got, ",") != want || srv.Pending() != 0 {
		t.Errorf("replies = %q, pending %d", got, srv.Pending())
	}
}

// Bad requests get a 400 whose message names the offending field.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	tests := []struct {
		name, path, body string
		status           int
		wantMsg          string
	}{
		{"not json", "/chat/completions", `{"model":`, 400, "not a valid JSON"},
		{"no model", "/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, "'model'"},
		{"no messages", "/chat/completions", `{"model":"m"}`, 400, "'messages'"},
		{"bad content", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":42}]}`, 400, "messages[0].content"},
		{"tool without id", "/chat/completions", `{"model":"m","messages":[{"role":"tool","content":"r"}]}`, 400, "messages[0].tool_call_id"},
		{"bad input", "/responses", `{"model":"m","input":7}`, 400, "input"},
		{"bad item", "/responses", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, 400, "input[0].call_id"},
		{"bad tools", "/responses", `{"model":"m","tools":{"type":"web_search"}}`, 400, "tools"},
		{"unknown path", "/embeddings", `{}`, 404, "Invalid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := http.Post(srv.URL()+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status || !strings.Contains(body.Error.Message, tt.wantMsg) || body.Error.Type == "" {
				t.Errorf("status %d message %q, want %d containing %q", res.StatusCode, body.Error.Message, tt.status, tt.wantMsg)
			}
		})
	}
	res, err := http.Get(srv.URL() + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET completions = %d", res.StatusCode)
	}
	if last, _ := srv.LastRequest(); last.ParseError == "" {
		t.Error("ParseError not recorded for a rejected request")
	}
}

// Handler() works when mounted elsewhere, with or without the /v1 prefix.
func TestHandlerMounted(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.New()
	hs := httptest.NewServer(fake.Handler())
	defer hs.Close()
	defer fake.Close()
	if fake.URL() != "" {
		t.Errorf("URL of an unstarted server = %q", fake.URL())
	}
	for _, base := range []string{hs.URL + "/v1", hs.URL} {
		client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("k"))
		comp, err := client.Chat.Completions.New(context.Background(), chatParams())
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if !strings.HasPrefix(comp.Choices[0].Message.Content, "echo: ") {
			t.Errorf("%s: content %q", base, comp.Choices[0].Message.Content)
		}
	}
	// Reset on a mounted handler falls back to whatever the host server allows;
	// httptest serves HTTP/1.1, so the hijack path is used.
	fake.Enqueue(fakeopenai.Reply{Reset: true})
	client := openai.NewClient(option.WithBaseURL(hs.URL), option.WithMaxRetries(0), option.WithAPIKey("k"))
	_, err := client.Chat.Completions.New(context.Background(), chatParams())
	assertTransportError(t, err)
}

func TestStartOptions(t *testing.T) {
	t.Parallel()
	if _, err := fakeopenai.Start(fakeopenai.WithAddr("0.0.0.0:0")); !errors.Is(err, fakeopenai.ErrInvalidAddr) {
		t.Errorf("non-loopback addr: err = %v", err)
	}
	if _, err := fakeopenai.Start(fakeopenai.WithAddr("nonsense")); err == nil {
		t.Error("bad addr accepted")
	}
	srv := fakeopenai.StartT(t)
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/v1") {
		t.Errorf("URL = %q", srv.URL())
	}
	res, err := http.Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `"object":"list"`) {
		t.Errorf("models body = %s", b)
	}
}
