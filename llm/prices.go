package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// PricesEnv names the price table file: JSON
// {"<model>": {"input": <USD per 1M prompt tokens>, "output": <USD per 1M completion tokens>}}.
const PricesEnv = "SWITCHYARD_PRICES"

// Price is what one model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// MaxPrice bounds a price, in USD per million tokens: a dollar a token,
// far above any model's, and low enough that a cost stays finite for any
// token count (an int64 of tokens at this price is about 1e24 USD).
const MaxPrice = 100_000

// Prices maps model names (as nodes and the configuration name them) to
// their price. A nil table prices nothing.
type Prices map[string]Price

// Cost is what u cost with model; ok is false when the model has no price.
func (p Prices) Cost(model string, u Usage) (usd float64, ok bool) {
	pr, ok := p[model]
	if !ok {
		return 0, false
	}
	c := (float64(u.PromptTokens)*pr.Input + float64(u.CompletionTokens)*pr.Output) / 1e6
	// A table built in code skips ParsePrices' bounds: a cost that is
	// not a finite number is no cost (JSON cannot encode it, and a stored
	// +Inf would break every answer that lists the run).
	if math.IsInf(c, 0) || math.IsNaN(c) {
		return 0, false
	}
	return c, true
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
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	fail := func(err error) (Prices, error) { return nil, describeJSONError(b, err, dec.InputOffset(), "") }
	shape := errors.New(`expected a JSON object {"<model>": {"input": <USD per 1M tokens>, "output": <USD per 1M tokens>}}`)
	tok, err := dec.Token()
	if err != nil {
		return fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("line %d: %w", lineAt(b, dec.InputOffset()), shape)
	}
	out := Prices{}
	// Entry by entry, so that an error can name the model it is in.
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		model, _ := tok.(string)
		line := lineAt(b, dec.InputOffset())
		// Pointers tell a missing field from a zero price.
		var e *struct {
			Input  *float64 `json:"input"`
			Output *float64 `json:"output"`
		}
		if err := dec.Decode(&e); err != nil {
			return nil, describeJSONError(b, err, dec.InputOffset(), model)
		}
		switch {
		case model == "":
			return nil, fmt.Errorf("line %d: a model name is empty", line)
		case e == nil:
			return nil, fmt.Errorf("line %d: model %q: expected an object with input and output", line, model)
		}
		if _, dup := out[model]; dup {
			return nil, fmt.Errorf("line %d: model %q is listed twice", line, model)
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input", e.Input}, {"output", e.Output}} {
			switch {
			case f.v == nil:
				return nil, fmt.Errorf("line %d: model %q: field %q is missing (USD per 1M tokens)", line, model, f.name)
			case *f.v < 0 || *f.v > MaxPrice || math.IsInf(*f.v, 0) || math.IsNaN(*f.v):
				return nil, fmt.Errorf("line %d: model %q: field %q must be a price from 0 to %d USD per 1M tokens, not %v", line, model, f.name, MaxPrice, *f.v)
			}
		}
		out[model] = Price{Input: *e.Input, Output: *e.Output}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fail(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("line %d: unexpected data after the JSON object", lineAt(b, dec.InputOffset()))
	}
	return out, nil
}

// describeJSONError says where in b err happened: the line and, inside a
// model's entry, the model and field.
func describeJSONError(b []byte, err error, off int64, model string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	in := ""
	if model != "" {
		in = fmt.Sprintf("model %q: ", model)
	}
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("line %d: %s%w", lineAt(b, se.Offset), in, err)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(the entry)"
		}
		return fmt.Errorf("line %d: %sfield %s: expected %s, got JSON %s", lineAt(b, te.Offset), in, field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("line %d: the JSON ends early", lineAt(b, int64(len(b))))
	}
	// Unknown fields: encoding/json names the field, the offset the line.
	return fmt.Errorf("line %d: %s%w", lineAt(b, off), in, err)
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
