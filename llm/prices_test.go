package llm

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePrices(t *testing.T) {
	p, err := ParsePrices([]byte(`{"gpt-4o": {"input": 2.5, "output": 10}, "free": {"input": 0, "output": 0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := p.Cost("gpt-4o", Usage{PromptTokens: 1000, CompletionTokens: 500}); !ok || c != (1000*2.5+500*10)/1e6 {
		t.Errorf("cost %v %v", c, ok)
	}
	if c, ok := p.Cost("free", Usage{PromptTokens: 1000}); !ok || c != 0 {
		t.Errorf("free cost %v %v", c, ok)
	}
	if _, ok := p.Cost("unknown", Usage{PromptTokens: 1}); ok {
		t.Error("unknown model priced")
	}
	if _, ok := Prices(nil).Cost("gpt-4o", Usage{}); ok {
		t.Error("nil table priced")
	}
}

func TestParsePricesErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"", "line 1: the JSON ends early"},
		{"[]", "line 1: expected a JSON object"},
		{"{\n\"a\": {\"input\": 1, \"output\": 2},\n\"b\": {\"input\": 1}\n}", `line 3: model "b": field "output" is missing`},
		{"{\n\"a\": {\"input\": 1, \"output\": 2}\n\"b\": 1}", "line 3"},
		{`{"a": {"input": "x", "output": 2}}`, `line 1: model "a": field input: expected a number, got JSON string`},
		{`{"a": 3}`, `model "a": field (the entry): expected an object`},
		{`{"a": null}`, `model "a": expected an object with input and output`},
		{`{"a": {"input": 1, "output": 2, "cached": 1}}`, `model "a": json: unknown field "cached"`},
		{`{"": {"input": 1, "output": 2}}`, "a model name is empty"},
		{`{"a": {"input": 1, "output": 2}, "a": {"input": 1, "output": 2}}`, `model "a" is listed twice`},
		{`{"a": {"input": 1, "output": -2}}`, `field "output" must be a price from 0 to 100000`},
		{`{"a": {"input": 1, "output": 2}} {}`, "unexpected data after the JSON object"},
	} {
		_, err := ParsePrices([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestLoadPricesNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(`{"a": {"input": 1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrices(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"output"`) {
		t.Errorf("error %v", err)
	}
	if _, err := LoadPrices(path + ".missing"); err == nil || !strings.Contains(err.Error(), path+".missing") {
		t.Errorf("missing file: %v", err)
	}
}

// TestParsePricesBounds: a price must be a finite number of at most
// MaxPrice USD per million tokens; 1e308 once made a run's cost +Inf.
func TestParsePricesBounds(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"big": {"input": 1e308, "output": 1}}`, `model "big": field "input" must be a price from 0 to 100000 USD per 1M tokens, not 1e+308`},
		{"{\"a\": {\"input\": 1, \"output\": 2},\n\"big\": {\"input\": 1, \"output\": 100000.5}}", `line 2: model "big": field "output" must be a price from 0 to 100000`},
	} {
		_, err := ParsePrices([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := ParsePrices([]byte(`{"top": {"input": 100000, "output": 0}}`)); err != nil {
		t.Errorf("the largest price refused: %v", err)
	}
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(`{"m": {"input": 1, "output": 1e308}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrices(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `model "m": field "output"`) {
		t.Errorf("error %v should name the file, model and field", err)
	}
}

// TestCostNeverNonFinite: a table built in code (not parsed) with absurd
// prices, or absurd token counts, never yields an infinite or NaN cost:
// such a cost is not reported at all.
func TestCostNeverNonFinite(t *testing.T) {
	p := Prices{"huge": {Input: 1e308, Output: 1e308}, "nan": {Input: math.NaN()}}
	for _, model := range []string{"huge", "nan"} {
		if c, ok := p.Cost(model, Usage{PromptTokens: 1 << 40, CompletionTokens: 1 << 40}); ok || math.IsInf(c, 0) || math.IsNaN(c) {
			t.Errorf("%s: cost %v, %v; want none", model, c, ok)
		}
	}
	if c, ok := (Prices{"m": {Input: MaxPrice, Output: MaxPrice}}).Cost("m", Usage{PromptTokens: math.MaxInt64, CompletionTokens: math.MaxInt64}); !ok || math.IsInf(c, 0) {
		t.Errorf("largest price and token counts: %v %v", c, ok)
	}
}
