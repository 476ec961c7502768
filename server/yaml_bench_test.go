package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/yamlflow"
)

// benchYAML is a 40-node workflow: ten chains of four.
func benchYAML(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: bench\nnodes:\n", name)
	for c := 0; c < 10; c++ {
		for i := 0; i < 4; i++ {
			fmt.Fprintf(&b, "  - id: n%d-%d\n    bash: echo %d\n", c, i, i)
			if i > 0 {
				fmt.Fprintf(&b, "    depends_on: [n%d-%d]\n", c, i-1)
			}
		}
	}
	return b.String()
}

// BenchmarkYAMLList lists a folder of 50 workflows: "cached" is the usual
// case (files unchanged since the last listing), "cold" parses every file.
func BenchmarkYAMLList(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{}
	for i := 0; i < 50; i++ {
		files[fmt.Sprintf("team%d/flow%d.yaml", i%5, i)] = benchYAML(fmt.Sprint("flow", i))
	}
	writeFiles(b, dir, files)
	ctx := context.Background()
	b.Run("cached", func(b *testing.B) {
		src, err := NewYAMLWorkflows(dir, YAMLOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := src.ListWorkflows(ctx); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if ws, err := src.ListWorkflows(ctx); err != nil || len(ws) != 50 {
				b.Fatal(len(ws), err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			src, _ := NewYAMLWorkflows(dir, YAMLOptions{})
			if ws, err := src.ListWorkflows(ctx); err != nil || len(ws) != 50 {
				b.Fatal(len(ws), err)
			}
		}
	})
}

// BenchmarkYAMLRunGraph projects a 40-node run definition: "cached" is a
// repeated GET of the same run, "parse" a definition never seen (parse
// and project).
func BenchmarkYAMLRunGraph(b *testing.B) {
	def, _ := json.Marshal(map[string]any{"file": "/w/bench.yaml", "source": benchYAML("bench")})
	b.Run("cached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if yamlRunGraph(def) == nil {
				b.Fatal("no graph")
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		src := benchYAML("bench")
		for i := 0; i < b.N; i++ {
			if yamlflow.CanvasJSON(parsePartial(src)) == nil {
				b.Fatal("no graph")
			}
		}
	})
}

// BenchmarkRunHistoryScan finds the 50 newest runs of one YAML workflow
// among 5000 runs of which one in ten is its own (a scan of ~500 rows).
func BenchmarkRunHistoryScan(b *testing.B) {
	v := newEnvTB(b, func(o *envOpts) { o.noLLM = true; o.noHTTP = true })
	dir := b.TempDir()
	src, err := NewYAMLWorkflows(dir, YAMLOptions{})
	if err != nil {
		b.Fatal(err)
	}
	mine, _ := json.Marshal(map[string]any{"file": filepath.Join(dir, "a.yaml"), "source": benchYAML("a")})
	other, _ := json.Marshal(map[string]any{"file": filepath.Join(dir, "b.yaml"), "source": benchYAML("b")})
	now := time.Now().UTC()
	for i := 0; i < 5000; i++ {
		def := other
		if i%10 == 0 {
			def = mine
		}
		r := &engine.Run{ID: newID(), Kind: engine.KindYAML, Definition: def, Status: engine.StatusCompleted,
			PendingApprovals: []engine.PendingApproval{}, CreatedAt: now.Add(-time.Duration(i) * time.Millisecond), UpdatedAt: now}
		if err := v.st.CreateRun(context.Background(), r, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs, err := v.srv.listSourceRuns(context.Background(), src, engine.RunFilter{WorkflowID: "yaml.a.yaml", Limit: 50})
		if err != nil || len(runs) != 50 {
			b.Fatal(len(runs), err)
		}
	}
}
