package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func graphJSON(nodes int, id string) []byte {
	var b strings.Builder
	b.WriteString(`{"nodes":[{"id":"s","type":"start","position":{"x":0,"y":0},"data":{}}`)
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"agent","position":{"x":0,"y":0},"data":{"agentName":"A"}}`, i)
	}
	if id != "" {
		fmt.Fprintf(&b, `,{"id":%q,"type":"agent","position":{"x":0,"y":0},"data":{}}`, id)
	}
	b.WriteString(`],"edges":[]}`)
	return []byte(b.String())
}

func TestDecodeLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data []byte
		want string // "" = within the limits
	}{
		{"at the node limit", graphJSON(MaxNodes, ""), ""},
		{"one node over", graphJSON(MaxNodes+1, ""), "graph has 10001 nodes; the limit is 10000"},
		{"a 1 MB node id", graphJSON(2, strings.Repeat("n", 1<<20)), "its id is 1048576 bytes; ids may be at most 256"},
		{"an id at the limit", graphJSON(2, strings.Repeat("n", MaxIDLength)), ""},
		// The edge's error names the field (FuzzDecodeNormalizeValidate).
		{"a long edge handle", []byte(`{"nodes":[],"edges":[{"source":"a","target":"b","sourceHandle":"` + strings.Repeat("h", MaxIDLength+1) + `"}]}`),
			"edge 0: its sourceHandle is 257 bytes; ids and handles may be at most 256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(tc.data)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrTooLarge saying %q", err, tc.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
		})
	}
}

// Validate lists at most MaxProblems problems, errors first, then says how
// many more there were.
func TestValidateCapsProblems(t *testing.T) {
	t.Parallel()
	g, _, err := Decode(graphJSON(500, "")) // 499 agents with no incoming edge
	if err != nil {
		t.Fatal(err)
	}
	ps := Validate(g)
	if len(ps) != MaxProblems+1 {
		t.Fatalf("%d problems, want %d and a summary", len(ps), MaxProblems)
	}
	last := ps[len(ps)-1]
	if last.Code != CodeTooManyProblems || !strings.Contains(last.Message, "more problems") {
		t.Fatalf("summary %+v", last)
	}
	if HasErrors(ps[:len(ps)-1]) != HasErrors(ps) || !ps[0].IsError() {
		t.Errorf("errors are not listed first: %+v", ps[0])
	}
}
