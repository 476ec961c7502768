package graph

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeNormalizeValidate feeds arbitrary bytes through Decode,
// Normalize and Validate. None may panic; bad input must be a *DecodeError
// with a position, or a *LimitError naming what is too large; Normalize must be idempotent and a decoded graph must
// survive an Encode/Decode round trip unchanged.
func FuzzDecodeNormalizeValidate(f *testing.F) {
	for _, pattern := range []string{"testdata/legacy/*.json", "testdata/golden/*.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"nodes":null}`, `{"nodes":[null],"edges":[null]}`,
		`{"nodes":[{"id":"a","type":"end"},{"id":"a","type":"start"}],"connections":[{"source":"a","target":"a"}]}`,
		`{"nodes":[{"id":"c","type":"if","data":{"condition":"x","conditions":[{}]}}],"edges":[{"source":"c","target":"c","sourceHandle":"true"}]}`,
		`{"nodes":[{"id":"a","type":"agent","data":{"tools":{"subagents":true},"agentname":"b","agentName":"a"}},{"id":"c","type":"if","data":{"Condition":"x"}}],"edges":[{"source":"a","target":"a","sourceHandle":"subagent"}]}`,
		`{"nodes":[{"id":"s","type":"start","x":1e308,"y":-0}],"edges":[{"id":"e-s-output-s","source":"s","target":"s"},{"source":"s","target":"s"}]}`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		g, warnings, err := Decode(data)
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				// Over a limit (CheckLimits): it names the node or edge.
				if !strings.HasPrefix(le.Message, "graph has ") && !strings.HasPrefix(le.Message, "node ") && !strings.HasPrefix(le.Message, "edge ") {
					t.Fatalf("limit error %q names no node or edge", le.Message)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T %v, want *DecodeError or *LimitError", err, err)
			}
			if de.Line < 1 || de.Column < 1 || de.Err == nil {
				t.Fatalf("bad DecodeError %+v", de)
			}
			return
		}
		checkProblems(t, warnings)
		for _, p := range warnings {
			if p.Severity != SeverityWarning {
				t.Fatalf("Normalize returned a non-warning %+v", p)
			}
		}

		once, err := Encode(g)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if again := Normalize(g); len(again) != 0 {
			t.Fatalf("second Normalize warned: %v", again)
		}
		twice, err := Encode(g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("Normalize is not idempotent:\n%s\n---\n%s", once, twice)
		}

		ps := Validate(g)
		checkProblems(t, ps)

		g2, warnings2, err := Decode(once)
		if err != nil {
			t.Fatalf("decoding Encode's output: %v\n%s", err, once)
		}
		if len(warnings2) != 0 {
			t.Fatalf("decoding a normalized graph warned: %v", warnings2)
		}
		if round, _ := Encode(g2); !bytes.Equal(round, once) {
			t.Fatalf("round trip changed the graph:\n%s\n---\n%s", once, round)
		}
		if ps2 := Validate(g2); !reflect.DeepEqual(ps, ps2) {
			t.Fatalf("Validate differs after a round trip:\n%v\n%v", ps, ps2)
		}
	})
}

func checkProblems(t *testing.T, ps []Problem) {
	t.Helper()
	for _, p := range ps {
		if p.Code == "" || p.Message == "" || (p.Severity != SeverityError && p.Severity != SeverityWarning) {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}
