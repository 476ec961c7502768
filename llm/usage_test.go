package llm

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// Usage comes back from both wire APIs through openai-go, and chat streams
// ask for it.
func TestCompleteReportsUsage(t *testing.T) {
	srv := fakeopenai.StartT(t, fakeopenai.WithHandler(fakeopenai.DemoReply), fakeopenai.WithChunkDelay(time.Millisecond))
	for _, responses := range []bool{false, true} {
		c, err := New(Config{BaseURL: srv.URL(), APIKey: "test", Responses: responses})
		if err != nil {
			t.Fatal(err)
		}
		var deltas []string
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := c.Complete(ctx, Request{Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "count these tokens"}}},
			func(d string) { deltas = append(deltas, d) }, nil)
		cancel()
		if err != nil {
			t.Fatalf("responses=%v: %v", responses, err)
		}
		req, _ := srv.LastRequest()
		if !responses && !req.IncludeUsage {
			t.Error("chat stream did not set stream_options.include_usage")
		}
		u := resp.Usage
		if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("responses=%v: usage %+v", responses, u)
		}
		if len(deltas) < 2 || resp.Text != "echo: count these tokens" {
			t.Errorf("responses=%v: deltas %q text %q", responses, deltas, resp.Text)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	got := Usage{1, 2, 3}.Add(Usage{10, 20, 30})
	if got != (Usage{11, 22, 33}) || got.IsZero() || !(Usage{}).IsZero() {
		t.Errorf("%+v", got)
	}
}
