package server

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
)

// genDetail makes a run detail full of what JSON encoders get wrong:
// characters encoding/json escapes, invalid UTF-8, omitted and present
// optional fields, nil and empty collections, times and costs at the
// edges, graphs with whitespace, HTML characters or invalid JSON.
func genDetail(r *rand.Rand) *runDetail {
	str := func() string {
		pieces := []string{"", "a", "hé", "<b>", "&amp;", `"q"`, `\`, "\n\t\r", "\x00\x1f", "\u2028\u2029",
			"\xff", "\xe2\x80", "🙂", "x y", "</script>", "\u007f", "plain text"}
		var sb strings.Builder
		for range r.IntN(4) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		return sb.String()
	}
	tm := func() time.Time {
		switch r.IntN(40) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(10000+r.IntN(3), 1, 2, 3, 4, 5, 0, time.UTC) // MarshalJSON refuses
		case 2:
			return time.Date(2026, 11, 29, 1, 2, 3, r.IntN(1e9), time.FixedZone("x", r.IntN(48*3600)-24*3600))
		case 3:
			return time.Date(2026, 11, 29, 1, 2, 3, 0, time.FixedZone("y", 24*3600+60)) // refused too
		default:
			return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()
		}
	}
	tmp := func() *time.Time {
		if r.IntN(2) == 0 {
			return nil
		}
		t := tm()
		return &t
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -2.5, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20, 1e21, 123456789e15,
		0.000126, 1.0 / 3, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.NaN()}
	d := &runDetail{runSummary: runSummary{RunID: str(), WorkflowID: str(), Kind: str(), Status: engine.RunStatus(str()),
		Input: str(), WaitingForInput: r.IntN(2) == 0, CurrentNodeID: str(), Error: str(),
		CreatedAt: tm(), UpdatedAt: tm(), FinishedAt: tmp(),
		Usage: engine.Usage{PromptTokens: r.Int64N(1e6) - 10, CompletionTokens: r.Int64N(1e12), TotalTokens: r.Int64()}},
		Source: str(), WorkDir: str(), Branch: str()}
	if r.IntN(2) == 0 {
		f := floats[r.IntN(len(floats))]
		if r.IntN(3) == 0 {
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
		}
		d.Usage.CostUSD = &f
	}
	switch r.IntN(3) {
	case 0:
		d.PendingApprovals = []engine.PendingApproval{}
	case 1:
		for range 1 + r.IntN(2) {
			d.PendingApprovals = append(d.PendingApprovals, engine.PendingApproval{NodeID: str(), Prompt: str(), Input: str(), Since: tm()})
		}
	}
	if r.IntN(3) == 0 {
		d.ForkOf = &forkOf{RunID: str(), NodeID: str()}
	}
	if r.IntN(4) != 0 {
		d.Outputs = map[string]string{}
		for range r.IntN(4) {
			d.Outputs[str()] = str()
		}
	}
	// The same slices again and again, as the runs of a prepared graph
	// share theirs (compactGraphs), and now and then a fresh copy or a
	// shorter view of the same bytes.
	if g := testGraphs[r.IntN(len(testGraphs))]; len(g) > 0 {
		switch r.IntN(8) {
		case 0:
			g = bytes.Clone(g)
		case 1:
			g = g[:r.IntN(len(g))]
		}
		d.Graph = g
	}
	if r.IntN(4) != 0 {
		d.Nodes = []nodeJSON{}
		for range r.IntN(4) {
			d.Nodes = append(d.Nodes, nodeJSON{NodeID: str(), Status: str(), Input: str(), Output: str(), Handle: str(),
				Error: str(), Visits: r.IntN(5) - 1, Attempts: r.IntN(1 << 20), StartedAt: tmp(), FinishedAt: tmp()})
		}
	}
	return d
}

var testGraphs = []json.RawMessage{nil, json.RawMessage(`{"nodes":[],"edges":[]}`),
	json.RawMessage("{ \"a\" : [1, 2.5e3, true, null],\n\t\"b\": \"<x> & y\" }"),
	json.RawMessage(`{"p":"\u2028 ` + "\u2028" + `"}`), json.RawMessage(`{"a":`), json.RawMessage(`[1,2]`),
	json.RawMessage(`"s"`), json.RawMessage(`{"a":"\ud83d\ude42 \\","b":[{"c":null}]}`)}

// TestRunDetailJSONIsEncodingJSON: on 20,000 generated details the hand
// encoder writes what json.Encoder writes, and fails exactly where it
// fails (then the serializer hands the value to encoding/json).
func TestRunDetailJSONIsEncodingJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(25, 13))
	var errs, oks int
	for i := range 20000 {
		d := genDetail(r)
		var want bytes.Buffer
		werr := json.NewEncoder(&want).Encode(d)
		got, gerr := d.appendJSON(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("case %d: encoding/json error %v, hand encoder error %v\n%#v", i, werr, gerr, d)
		}
		if werr != nil {
			errs++
			continue
		}
		oks++
		if got = append(got, '\n'); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
	t.Logf("%d encoded, %d refused by both", oks, errs)
	if errs < 1000 || oks < 5000 {
		t.Errorf("%d failing and %d encoded cases: the generator no longer covers both", errs, oks)
	}
}

// TestJSONSerializerAnswersAsEcho: through echo, a run detail's body and
// headers are what echo's own serializer gives; ?pretty still indents,
// and a value the hand encoder refuses gets encoding/json's error.
func TestJSONSerializerAnswersAsEcho(t *testing.T) {
	t.Parallel()
	fin := time.Date(2026, 11, 29, 10, 0, 0, 5, time.UTC)
	cost := 0.000126
	d := &runDetail{runSummary: runSummary{RunID: "r1", Kind: "graph", Status: engine.StatusCompleted, Input: "<hi>",
		PendingApprovals: []engine.PendingApproval{}, CreatedAt: fin, UpdatedAt: fin, FinishedAt: &fin,
		Usage: engine.Usage{PromptTokens: 3, TotalTokens: 3, CostUSD: &cost}},
		Outputs: map[string]string{"b": "2", "a": "1"}, Graph: json.RawMessage(`{"nodes": []}`),
		Nodes: []nodeJSON{{NodeID: "a", Status: "completed", Output: "1", Visits: 1, Attempts: 1, FinishedAt: &fin}}}
	serve := func(s echo.JSONSerializer, target string, v any) *httptest.ResponseRecorder {
		e := echo.New()
		e.JSONSerializer = s
		e.GET("/", func(c echo.Context) error { return c.JSON(http.StatusCreated, v) })
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec
	}
	for _, target := range []string{"/", "/?pretty"} {
		got, want := serve(jsonSerializer{}, target, d), serve(echo.DefaultJSONSerializer{}, target, d)
		if got.Code != want.Code || got.Body.String() != want.Body.String() ||
			got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s: got %d %q %s, want %d %q %s", target, got.Code, got.Header().Get("Content-Type"), got.Body,
				want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	}
	bad := *d
	bad.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	got, want := serve(jsonSerializer{}, "/", &bad), serve(echo.DefaultJSONSerializer{}, "/", &bad)
	if got.Code != want.Code || got.Body.String() != want.Body.String() {
		t.Errorf("a year past 9999: got %d %s, want %d %s", got.Code, got.Body, want.Code, want.Body)
	}
}

// BenchmarkRunDetailJSON: the answer to POST /api/runs for start -> agent
// -> agent, by hand and by encoding/json.
func BenchmarkRunDetailJSON(b *testing.B) {
	now := time.Now().UTC()
	g := json.RawMessage(`{"nodes":[{"id":"s","type":"start","position":{"x":0,"y":0},"data":{}},` +
		`{"id":"a","type":"agent","position":{"x":200,"y":0},"data":{"userPrompt":"Say hi to {{input}}","model":"gpt-5-mini"}},` +
		`{"id":"b","type":"agent","position":{"x":400,"y":0},"data":{"userPrompt":"Again","model":"gpt-5-mini"}}],` +
		`"edges":[{"id":"e1","source":"s","target":"a","sourceHandle":"output"},{"id":"e2","source":"a","target":"b","sourceHandle":"output"}]}`)
	d := &runDetail{runSummary: runSummary{RunID: "01a2286d-cd22-7757-8e85-15f8dc172076", Kind: "graph", Status: engine.StatusRunning,
		Input: "load", PendingApprovals: []engine.PendingApproval{}, CreatedAt: now, UpdatedAt: now},
		Outputs: map[string]string{"s": "load"}, Graph: g,
		Nodes: []nodeJSON{{NodeID: "s", Status: "completed", Output: "load", Visits: 1, Attempts: 1, StartedAt: &now, FinishedAt: &now}}}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.appendJSON(make([]byte, 0, 2048)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := json.NewEncoder(io.Discard).Encode(d); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var createRunSeeds = []string{`{"graph":{"nodes":[]},"input":"x"}`, `{"workflowId":"w1","input":null}`, ` { } `, `{}`,
	`{"graph":null}`, `{"input":"a","input":null}`, `{"input":null,"input":"b"}`, `{"workflowId":null}`,
	`{"Graph":{}}`, `{"INPUT":"x"}`, `{"extra":1}`, `{"input":"\u00e9"}`, "{\"input\":\"\xff\"}", `{"input":1}`,
	`{"graph":[1,2],}`, `{"graph":{"a":1}`, `{"graph":{"a":1}} x`, `{"graph" : { "a" : [ true ] } , "input" : "é 🙂" }`,
	`{"graph":"<&>","workflowId":"a\"b"}`, `[]`, ``, `null`, `{"input":"a"`, `{"graph":01}`, "{\"input\":\"a\tb\"}",
	`{"workflowId":"w","workflowId":"v"}`, `{"graph":{},"graph":[]}`}

// checkCreateRunDecode: where decodeCreateRun decodes a body, json.Unmarshal
// decodes it too, to the same request.
func checkCreateRunDecode(t *testing.T, raw []byte) {
	var got createRunRequest
	if !decodeCreateRun(raw, &got) {
		return
	}
	var want createRunRequest
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%q: decoded by hand, but json.Unmarshal: %v", raw, err)
	}
	same := got.WorkflowID == want.WorkflowID && bytes.Equal(got.Graph, want.Graph) && (got.Graph == nil) == (want.Graph == nil) &&
		(got.Input == nil) == (want.Input == nil) && (got.Input == nil || *got.Input == *want.Input)
	if !same {
		t.Fatalf("%q: by hand %+v (input %v), json.Unmarshal %+v (input %v)", raw, got, got.Input, want, want.Input)
	}
}

// TestDecodeCreateRunIsUnmarshal: the seeds, and the usual body decoded by
// hand (not left to encoding/json).
func TestDecodeCreateRunIsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, s := range createRunSeeds {
		checkCreateRunDecode(t, []byte(s))
	}
	var req createRunRequest
	body := `{"graph":{"nodes":[{"id":"s","type":"start"}],"edges":[]},"input":"load"}`
	if !decodeCreateRun([]byte(body), &req) || req.Input == nil || *req.Input != "load" || string(req.Graph) != `{"nodes":[{"id":"s","type":"start"}],"edges":[]}` {
		t.Errorf("the load tool's body: %+v", req)
	}
}

func FuzzDecodeCreateRun(f *testing.F) {
	for _, s := range createRunSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkCreateRunDecode)
}

// BenchmarkDecodeCreateRun: the load tool's body (start -> agent -> agent),
// by hand and by json.Unmarshal.
func BenchmarkDecodeCreateRun(b *testing.B) {
	body := []byte(`{"graph":{"nodes":[{"id":"s","type":"start","position":{"x":0,"y":0},"data":{}},` +
		`{"id":"a","type":"agent","position":{"x":200,"y":0},"data":{"userPrompt":"Say hi to {{input}}","model":"gpt-5-mini"}},` +
		`{"id":"b","type":"agent","position":{"x":400,"y":0},"data":{"userPrompt":"Again","model":"gpt-5-mini"}}],` +
		`"edges":[{"id":"e1","source":"s","target":"a","sourceHandle":"output"},{"id":"e2","source":"a","target":"b","sourceHandle":"output"}]},"input":"load"}`)
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req createRunRequest
			if !decodeCreateRun(body, &req) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req createRunRequest
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRawCacheBounded: fresh copies of definitions, as runs read back
// from the store bring, never keep more than rawCacheBytes alive nor more
// than rawCacheMax entries (each bound is reached, then the cache starts
// over), and what is cached is written as it is.
func TestRawCacheBounded(t *testing.T) {
	t.Parallel()
	c := rawCache{m: map[*byte]json.RawMessage{}}
	big := json.RawMessage(`{"a":"` + strings.Repeat("x", 200<<10) + `"}`)
	small := json.RawMessage(`{"nodes":[]}`)
	for _, phase := range []struct {
		raw   json.RawMessage
		n     int
		bound string
	}{{big, 40, "bytes"}, {small, 600, "entries"}} {
		startedOver := false
		prev := 0
		for i := range phase.n {
			raw := bytes.Clone(phase.raw)
			out, err := c.append(nil, raw)
			if err != nil || !bytes.Equal(out, raw) {
				t.Fatalf("%s %d: %.40s, %v", phase.bound, i, out, err)
			}
			c.mu.Lock()
			n, size := len(c.m), c.bytes
			c.mu.Unlock()
			if n > rawCacheMax || size > rawCacheBytes {
				t.Fatalf("%s %d: %d entries, %d bytes kept", phase.bound, i, n, size)
			}
			startedOver = startedOver || n < prev
			prev = n
		}
		if !startedOver {
			t.Errorf("%s: the cache never started over, so its bound went untested", phase.bound)
		}
	}
}
