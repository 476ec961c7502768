package yamlflow

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// outputs is a fake run: node id -> raw output text, as the engine keeps
// them. Fields are read from JSON outputs, like $id.output.field.
type outputs map[string]string

func (o outputs) lookup(nodeID, field string) (any, bool, error) {
	out, ok := o[nodeID]
	if !ok {
		return nil, false, nil
	}
	if field == "" {
		return out, true, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return nil, false, nil
	}
	v, ok := m[field]
	return v, ok, nil
}

func TestWhenEval(t *testing.T) {
	t.Parallel()
	run := outputs{
		"classify":   `{"issue_type":"bug","needs_server":true,"score":0.8,"count":3,"big":12345678901234567890,"nothing":null}`,
		"check":      "NOT_REPRODUCED",
		"num":        " 42 ",
		"check-ntfy": "true",
	}
	tests := []struct {
		expr string
		want bool
	}{
		// The corpus's forms.
		{"$classify.output.issue_type == 'bug'", true},
		{"$classify.output.issue_type != 'bug'", false},
		{"$check.output == 'NOT_REPRODUCED'", true},
		{"$check.output != 'NOT_REPRODUCED'", false},
		{"$check-ntfy.output == 'true'", true},
		// A boolean field compares as its JSON text, with a quoted or bare literal.
		{"$classify.output.needs_server == 'true'", true},
		{"$classify.output.needs_server == true", true},
		{"$classify.output.needs_server == false", false},
		// Shorthand $id.field.
		{"$classify.issue_type == 'bug'", true},
		// Literal on the left, and ref against ref.
		{"'bug' == $classify.output.issue_type", true},
		{"$classify.issue_type == $classify.output.issue_type", true},
		// Numbers: == compares JSON text, ordering compares numbers.
		{"$classify.output.count == 3", true},
		{"$classify.output.count == '3'", true},
		{"$classify.output.count == 3.0", true},
		{"$classify.output.score == 0.8", true},
		{"$classify.output.score > 0.5", true},
		{"$classify.output.score >= 0.8", true},
		{"$classify.output.score < 0.8", false},
		{"$classify.output.score <= '0.8'", true},
		{"$classify.output.count > 2.5e0", true},
		{"$num.output > 41", true},     // a text output holding a number (spaces trimmed)
		{"$num.output == '42'", false}, // == compares text exactly
		{"-1 < $classify.output.count", true},
		{"$classify.output.big == 12345678901234567890", true},
		// A missing node, field or null compares as "".
		{"$missing.output == ''", true},
		{"$classify.output.nope == ''", true},
		{"$classify.output.nothing == ''", true},
		// && binds tighter than ||.
		{"$check.output == 'x' && $check.output == 'y' || $classify.issue_type == 'bug'", true},
		{"$classify.issue_type == 'bug' || $check.output == 'x' && $check.output == 'y'", true},
		{"$classify.issue_type == 'feature' || $check.output == 'NOT_REPRODUCED' && $classify.count == 2", false},
		{"$classify.issue_type == 'bug' && $check.output == 'NOT_REPRODUCED' && $classify.count == 3", true},
		{"$classify.issue_type == 'x' || $classify.issue_type == 'y' || $classify.issue_type == 'bug'", true},
		// Strings: operators and escapes inside quotes are text.
		{`$check.output != 'a && b || c == d'`, true},
		{`'it\'s' == 'it\'s'`, true},
		{`'a\\b' == 'a\b'`, true},
		// Whitespace is free.
		{"  $check.output=='NOT_REPRODUCED'&&$classify.count>=3  ", true},
		{"$check.output\n== 'NOT_REPRODUCED'", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := ParseWhen(tt.expr)
			if err != nil {
				t.Fatalf("ParseWhen: %v", err)
			}
			got, err := e.Eval(run.lookup)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got != tt.want {
				t.Errorf("Eval = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWhenEvalErrors(t *testing.T) {
	t.Parallel()
	run := outputs{"a": `{"s":"high","n":5}`, "text": "hello"}
	tests := []struct {
		expr    string
		wantErr error
	}{
		{"$a.output.s > 3", ErrNotANumber},
		{"$text.output >= 1", ErrNotANumber},
		{"$missing.output < 1", ErrNotANumber}, // "" is not a number
		{"$a.n > 1 && $a.s < 2", ErrNotANumber},
	}
	for _, tt := range tests {
		e, err := ParseWhen(tt.expr)
		if err != nil {
			t.Fatalf("ParseWhen(%q): %v", tt.expr, err)
		}
		_, err = e.Eval(run.lookup)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Eval(%q) err = %v, want %v", tt.expr, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(tt.expr)) {
			t.Errorf("error %q does not quote the condition", err)
		}
	}

	// Short-circuit: the failing atom is never evaluated.
	e, _ := ParseWhen("$a.n == 5 || $a.s > 1")
	if ok, err := e.Eval(run.lookup); !ok || err != nil {
		t.Errorf("short-circuit ||: %v %v", ok, err)
	}
	e, _ = ParseWhen("$a.n == 4 && $a.s > 1")
	if ok, err := e.Eval(run.lookup); ok || err != nil {
		t.Errorf("short-circuit &&: %v %v", ok, err)
	}

	// Lookup errors propagate.
	boom := errors.New("store down")
	e, _ = ParseWhen("$a.output == 'x'")
	if _, err := e.Eval(func(string, string) (any, bool, error) { return nil, false, boom }); !errors.Is(err, boom) {
		t.Errorf("lookup error not propagated: %v", err)
	}
	if _, err := e.Eval(nil); err == nil {
		t.Error("nil lookup accepted")
	}
	var none *Expr
	if ok, err := none.Eval(run.lookup); !ok || err != nil {
		t.Errorf("nil Expr = %v, %v; want true", ok, err)
	}
}

// TestWhenLookupArgs checks the (nodeID, field) pairs the engine is asked for.
func TestWhenLookupArgs(t *testing.T) {
	t.Parallel()
	e, err := ParseWhen("$a.output == 'x' || $b.output.f == 'y' || $c.g == 'z' || $d.output.output == 'w'")
	if err != nil {
		t.Fatal(err)
	}
	var got []Ref
	_, err = e.Eval(func(id, field string) (any, bool, error) {
		got = append(got, Ref{id, field})
		return nil, false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Ref{{"a", ""}, {"b", "f"}, {"c", "g"}, {"d", "output"}}
	if !slices.Equal(got, want) {
		t.Errorf("lookups = %v, want %v", got, want)
	}
	if !slices.Equal(e.Refs(), want) {
		t.Errorf("Refs = %v, want %v", e.Refs(), want)
	}
}

func TestWhenRefsDistinct(t *testing.T) {
	t.Parallel()
	e, err := ParseWhen("$a.x == '1' && $a.output.x == '2' || $b.output == $a.x")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Refs(), []Ref{{"a", "x"}, {"b", ""}}; !slices.Equal(got, want) {
		t.Errorf("Refs = %v, want %v", got, want)
	}
}

func TestWhenSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		pos  int    // 0-based byte offset of the error
		msg  string // part of the message
	}{
		{"", 0, "empty"},
		{"   ", 0, "empty"},
		{"$a.output = 'x'", 10, "use =="},
		{"$a.output == \"x\"", 13, "single-quoted"},
		{"$a.output == x", 13, "unexpected word"},
		{"$a.output == 'x", 13, "unterminated"},
		{"$a.output == 'x' & $b.output == 'y'", 17, "&&"},
		{"$a.output == 'x' | $b.output == 'y'", 17, "||"},
		{"($a.output == 'x')", 0, "parentheses"},
		{"!$a.output", 0, "!="},
		{"$a == 'x'", 0, "needs .output"},
		{"$.output == 'x'", 0, "node id"},
		{"$a. == 'x'", 3, "field name"},
		{"$a.output.b.c == 'x'", 0, "nested"},
		{"$a.b.c == 'x'", 0, "nested"},
		{"$a.output", 9, "comparison"},
		{"$a.output ==", 12, "expected $id.output or a value"},
		{"$a.output == 'x' &&", 19, "expected $id.output"},
		{"$a.output == 'x' || || $b.output == 'y'", 20, "expected $id.output"},
		{"$a.output == 'x' $b.output == 'y'", 17, "expected && or ||"},
		{"== 'x'", 0, "expected $id.output"},
		{"$a.output > 'high'", 12, "not a number"},
		{"$a.output <= true", 13, "not a number"},
		{"'x' < $a.output", 0, "not a number"},
		{"$a.output == 12abc", 13, "malformed number"},
		{"$a.output == 1.2.3", 13, "malformed number"},
		{"$a.output == 1e", 13, "malformed number"},
		{"$a.output == -", 13, "unexpected character"},
		{"$a.output == 'x' ; rm -rf /", 17, "unexpected character"},
		{"$a.output === 'x'", 12, "use =="},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := ParseWhen(tt.expr)
			if err == nil {
				t.Fatalf("ParseWhen = %v, want an error", e)
			}
			var se *WhenSyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrWhenSyntax) {
				t.Fatalf("err %T is not a *WhenSyntaxError", err)
			}
			if se.Pos != tt.pos {
				t.Errorf("pos = %d, want %d (%v)", se.Pos, tt.pos, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tt.expr)) {
				t.Errorf("error %q does not quote the condition", err)
			}
		})
	}
}

func TestWhenString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"$a.output=='x'", "$a.output == 'x'"},
		{"$a.f == 'x'", "$a.output.f == 'x'"},
		{"$a.output.f>=1.50&&$b.output!=true||'y'==$c.output", "$a.output.f >= 1.50 && $b.output != true || 'y' == $c.output"},
		{`$a.output == 'it\'s \\ \n'`, `$a.output == 'it\'s \\ \\n'`},
	}
	for _, tt := range tests {
		e, err := ParseWhen(tt.in)
		if err != nil {
			t.Fatalf("ParseWhen(%q): %v", tt.in, err)
		}
		if got := e.String(); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if e.Source() != tt.in {
			t.Errorf("Source = %q", e.Source())
		}
		e2, err := ParseWhen(e.String())
		if err != nil {
			t.Fatalf("reparse %q: %v", e.String(), err)
		}
		if !reflect.DeepEqual(e.or, e2.or) {
			t.Errorf("round trip changed the expression: %#v vs %#v", e.or, e2.or)
		}
	}
}

func TestValueText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    any
		want string
	}{
		{nil, ""}, {"x", "x"}, {true, "true"}, {float64(3), "3"}, {0.5, "0.5"}, {int64(7), "7"},
		{json.Number("1.50"), "1.50"}, {1e21, "1e+21"}, {[]any{"a", 1.0}, `["a",1]`},
		{map[string]any{"k": "v"}, `{"k":"v"}`},
	} {
		if got := ValueText(tt.v); got != tt.want {
			t.Errorf("ValueText(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
