package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// idle_timeout cuts a stream that goes quiet; a stream that keeps talking
// may take longer than the idle timeout in total.
func TestYAMLIdleTimeout(t *testing.T) {
	e, _, srv := yamlLLMEngine(t)
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if strings.Contains(req.LastUserMessage(), "quiet") {
			return fakeopenai.Reply{Text: "too late", Latency: time.Second}
		}
		return fakeopenai.Reply{Chunks: []string{"a", "b", "c", "d", "e", "f"}, ChunkDelay: 60 * time.Millisecond}
	})
	src := "name: t\ndescription: d\nnodes:\n" + `
  - id: chatty
    prompt: "talk"
    idle_timeout: 250
  - id: quiet
    prompt: "quiet please"
    idle_timeout: 150
`
	run, ns := runYAMLT(t, e, src, "")
	if ns["chatty"].Status != NodeCompleted || ns["chatty"].Output != "abcdef" {
		t.Errorf("chatty %+v", ns["chatty"])
	}
	if ns["quiet"].Status != NodeFailed || !strings.Contains(ns["quiet"].Error, "idle") {
		t.Errorf("quiet %+v", ns["quiet"])
	}
	if run.Status != StatusFailed {
		t.Errorf("run %s", run.Status)
	}
}
