package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// PricesEnv names the price table file: JSON
// {"<model>": {"input": <USD per 1M prompt tokens>, "output": <USD per 1M completion tokens>}}.
const PricesEnv = "SWITCHYARD_PRICES"

// Price is what one model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Prices maps model names (as nodes and the configuration name them) to
// their price. A nil table prices nothing.
type Prices map[string]Price

// Cost is what u cost with model; ok is false when the model has no price.
func (p Prices) Cost(model string, u Usage) (usd float64, ok bool) {
	pr, ok := p[model]
	if !ok {
		return 0, false
	}
	return (float64(u.PromptTokens)*pr.Input + float64(u.CompletionTokens)*pr.Output) / 1e6, true
}

// LoadPrices reads a price table file. Errors name the file and the line,
// the model or the field that is wrong, so a typo is found at startup
// rather than as missing costs later.
func LoadPrices(path string) (Prices, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("price file: %w", err)
	}
	p, err := ParsePrices(b)
	if err != nil {
		return nil, fmt.Errorf("price file %s: %w", path, err)
	}
	return p, nil
}

// ParsePrices parses the JSON of a price table (see PricesEnv).
func ParsePrices(b []byte) (Prices, error) {
	// Pointers tell a missing field from a zero price.
	var raw map[string]*struct {
		Input  *float64 `json:"input"`
		Output *float64 `json:"output"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, describeJSONError(b, err, dec.InputOffset())
	}
	if dec.More() {
		return nil, fmt.Errorf("line %d: unexpected data after the JSON object", lineAt(b, dec.InputOffset()))
	}
	if raw == nil {
		return nil, errors.New(`expected a JSON object {"<model>": {"input": <USD per 1M tokens>, "output": <USD per 1M tokens>}}`)
	}
	models := make([]string, 0, len(raw))
	for m := range raw {
		models = append(models, m)
	}
	sort.Strings(models) // the same error first on every start
	out := make(Prices, len(raw))
	for _, m := range models {
		e := raw[m]
		if m == "" {
			return nil, errors.New("a model name is empty")
		}
		if e == nil {
			return nil, fmt.Errorf("model %q: expected an object with input and output", m)
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input", e.Input}, {"output", e.Output}} {
			switch {
			case f.v == nil:
				return nil, fmt.Errorf("model %q: field %q is missing (USD per 1M tokens)", m, f.name)
			case *f.v < 0 || math.IsInf(*f.v, 0) || math.IsNaN(*f.v):
				return nil, fmt.Errorf("model %q: field %q must be a price >= 0, not %v", m, f.name, *f.v)
			}
		}
		out[m] = Price{Input: *e.Input, Output: *e.Output}
	}
	return out, nil
}

func describeJSONError(b []byte, err error, off int64) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("line %d: %w", lineAt(b, se.Offset), err)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("line %d: field %s: expected %s, got JSON %s", lineAt(b, te.Offset), field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.EOF):
		return errors.New("the file is empty")
	}
	// Unknown fields: encoding/json names the field, the offset the line.
	return fmt.Errorf("line %d: %w", lineAt(b, off), err)
}

func jsonKind(k string) string {
	switch k {
	case "float64":
		return "a number"
	case "map", "struct", "ptr":
		return "an object"
	}
	return k
}

// lineAt is the 1-based line of byte offset off.
func lineAt(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return 1 + bytes.Count(b[:off], []byte("\n"))
}
