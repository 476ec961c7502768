package storetest

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/store"
)

var positionsTests = []test{
	{"ReplacedPerWorkflow", testYAMLPositions},
}

// testYAMLPositions: positions of a YAML workflow's nodes are replaced as
// a whole, per workflow, and an empty set forgets them.
func testYAMLPositions(t *testing.T, open Open) {
	s := open(t, Options{})
	ctx := context.Background()
	got, err := s.YAMLPositions(ctx, "yaml.a.yaml")
	if err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %+v", err, got)
	}
	if err := s.SetYAMLPositions(ctx, "yaml.a.yaml", map[string]store.NodePosition{"x": {X: 1.5, Y: -2}, "y": {X: 3, Y: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetYAMLPositions(ctx, "yaml.b.yaml", map[string]store.NodePosition{"x": {X: 9, Y: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetYAMLPositions(ctx, "yaml.a.yaml", map[string]store.NodePosition{"x": {X: 5, Y: 6}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.YAMLPositions(ctx, "yaml.a.yaml")
	if err != nil || len(got) != 1 || got["x"] != (store.NodePosition{X: 5, Y: 6}) {
		t.Fatalf("replaced: %v %+v", err, got)
	}
	if err := s.SetYAMLPositions(ctx, "yaml.a.yaml", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.YAMLPositions(ctx, "yaml.a.yaml"); len(got) != 0 {
		t.Fatalf("forgotten: %+v", got)
	}
	if got, _ := s.YAMLPositions(ctx, "yaml.b.yaml"); got["x"] != (store.NodePosition{X: 9, Y: 9}) {
		t.Fatalf("other workflow: %+v", got)
	}
}
