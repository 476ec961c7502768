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
		// Chunks 100 ms apart for 1.1 s in all, against an idle timeout
		// of 600 ms: six times the gap, so a loaded machine's scheduling
		// delays do not cut the stream, and still less than the total.
		return fakeopenai.Reply{Chunks: strings.Split("abcdefghijkl", ""), ChunkDelay: 100 * time.Millisecond}
	})
	src := "name: t\ndescription: d\nnodes:\n" + `
  - id: chatty
    prompt: "talk"
    idle_timeout: 600
  - id: quiet
    prompt: "quiet please"
    idle_timeout: 150
`
	run, ns := runYAMLT(t, e, src, "")
	if ns["chatty"].Status != NodeCompleted || ns["chatty"].Output != "abcdefghijkl" {
		t.Errorf("chatty %+v", ns["chatty"])
	}
	if ns["quiet"].Status != NodeFailed || !strings.Contains(ns["quiet"].Error, "idle") {
		t.Errorf("quiet %+v", ns["quiet"])
	}
	if run.Status != StatusFailed {
		t.Errorf("run %s", run.Status)
	}
}
