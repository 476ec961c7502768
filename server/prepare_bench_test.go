package server

import (
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/loadgen"
)

// BenchmarkPrepareFanoutGraph is what the first POST of a new 1,000-branch
// graph (the one `load fanout` sends) pays before its run starts: decode,
// validate, compile.
func BenchmarkPrepareFanoutGraph(b *testing.B) {
	e, err := engine.New(engine.Config{Store: engine.NewMemStore(), ArtifactsRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	s := &Server{e: e}
	raw := loadgen.FanoutGraph(1000)
	b.ReportAllocs()
	for b.Loop() {
		s.graphs = newGraphCache(1, 1<<30) // every graph new
		if _, err := s.prepareGraph(fromRequest, raw, decodeRequestGraph, nil); err != nil {
			b.Fatal(err)
		}
	}
}
