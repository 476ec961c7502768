package graph

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sameAsSlow decodes b with UnmarshalJSON and with unmarshalSlow, the
// reference, and reports how they differ: the node, Extra's keys and raw
// values, and whether each failed.
func sameAsSlow(b []byte) string {
	var fast, slow NodeData
	errF := fast.UnmarshalJSON(b)
	errS := slow.unmarshalSlow(b)
	if (errF == nil) != (errS == nil) {
		return fmt.Sprintf("errors differ: %v / %v", errF, errS)
	}
	if errF != nil {
		if errF.Error() != errS.Error() {
			return fmt.Sprintf("errors worded differently: %v / %v", errF, errS)
		}
		return ""
	}
	if !reflect.DeepEqual(fast, slow) {
		return fmt.Sprintf("decoded differently:\n%#v\n%#v", fast, slow)
	}
	return ""
}

// genData writes a node's data object from a small alphabet of keys and
// values: known fields, unknown ones, keys a known field's but for case,
// escaped and non-ASCII keys, repeats, nested values, white space, and
// now and then a broken byte.
func genData(r *rand.Rand) []byte {
	keys := []string{"initialInput", "agentName", "userPrompt", "model", "tools", "conditions", "condition", "prompt",
		"label", "ui", "", "x", "Prompt", "agentname", "CONDITION", `lab\u0065l`, `a\"b`, "é", "\u00c9t\u00e9", "k\u212a"}
	vals := []string{`"s"`, `""`, `null`, `1`, `-0.5e3`, `true`, `[]`, `{}`, `[1,"a",{"b":null}]`, `{"builtin":["Bash"],"subagents":true}`,
		`[{"operator":"contains","value":"x"}]`, `"\u00e9\n"`, `{"a":{"b":[{}]}}`, `"bad` + "\xff" + `utf8"`, `12`, `"\ud800"`}
	ws := []string{"", "", " ", "\n\t", "\r "}
	var b strings.Builder
	b.WriteString(ws[r.IntN(len(ws))] + "{")
	for i, n := 0, r.IntN(6); i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(ws[r.IntN(len(ws))] + `"` + keys[r.IntN(len(keys))] + `"` + ws[r.IntN(len(ws))] + ":" + ws[r.IntN(len(ws))])
		b.WriteString(vals[r.IntN(len(vals))] + ws[r.IntN(len(ws))])
	}
	b.WriteString("}" + ws[r.IntN(len(ws))])
	s := []byte(b.String())
	if r.IntN(8) == 0 && len(s) > 0 { // a byte changed, dropped or added
		i := r.IntN(len(s))
		switch r.IntN(3) {
		case 0:
			const broken = "{}[]\",: x\\\x00\xff"
			s[i] = broken[r.IntN(len(broken))]
		case 1:
			s = append(s[:i], s[i+1:]...)
		default:
			s = append(s[:i], append([]byte{"{}\",:"[r.IntN(5)]}, s[i:]...)...)
		}
	}
	return s
}

// TestNodeDataDecodesAsTheSlowPath: on 50,000 generated data objects the
// one-pass decode gives what decoding through a map of every member
// gives, errors included.
func TestNodeDataDecodesAsTheSlowPath(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(25, 16))
	fastOK := 0
	for range 50_000 {
		b := genData(r)
		if diff := sameAsSlow(b); diff != "" {
			t.Fatalf("%q: %s", b, diff)
		}
		if _, ok := dataExtras(b); ok {
			fastOK++
		}
	}
	// The generator must reach the one-pass decode, not only the fallback.
	if fastOK < 10_000 {
		t.Fatalf("only %d of 50,000 inputs took the one-pass decode", fastOK)
	}
}

// FuzzNodeData holds UnmarshalJSON to unmarshalSlow on any bytes.
func FuzzNodeData(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 64 {
		f.Add(genData(r))
	}
	for _, s := range []string{``, `null`, `{}`, `[]`, `"x"`, `{"a":1}x`, `{"a":1,}`, `{"agentName":"a","AgentName":"b"}`, `{"x":1,"x":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if diff := sameAsSlow(b); diff != "" {
			t.Fatalf("%q: %s", b, diff)
		}
	})
}
