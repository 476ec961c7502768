package yamlflow

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseCorpus parses the largest workflow of the corpus.
func BenchmarkParseCorpus(b *testing.B) {
	file := filepath.Join(sharedDir(b), "fixtures", "archon", "workflows", "defaults", "archon-piv-loop.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := Parse(file, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFull parses a small workflow with a compiled output schema.
func BenchmarkParseFull(b *testing.B) {
	data, err := os.ReadFile("testdata/valid/full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := Parse("full.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWhen(b *testing.B) {
	run := outputs{"classify": `{"issue_type":"bug","score":0.8}`}
	e, err := ParseWhen("$classify.output.issue_type == 'feature' || $classify.output.score >= 0.5 && $classify.issue_type != 'x'")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			_, _ = ParseWhen(e.Source())
		}
	})
	b.Run("eval", func(b *testing.B) {
		for b.Loop() {
			if ok, err := e.Eval(run.lookup); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
