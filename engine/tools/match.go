package tools

import (
	"fmt"
	"path"
	"strings"
)

// globPattern is a compiled doublestar pattern: braces expanded ({a,b}),
// each alternative split at '/', where a "**" segment matches any number
// of folders (none included) and other segments follow path.Match.
type globPattern struct {
	alts [][]string
}

// maxBraceAlts bounds brace expansion ({a,b}{c,d}... multiplies).
const maxBraceAlts = 256

func compileGlob(pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, fmt.Errorf("empty glob pattern")
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob pattern %q: %w", pattern, err)
	}
	g := &globPattern{}
	for _, a := range alts {
		var segs []string
		for s := range strings.SplitSeq(strings.Trim(a, "/"), "/") {
			if s == "" || s == "." {
				continue
			}
			if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("glob pattern %q: %w", pattern, err)
			}
			segs = append(segs, s)
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the slash-separated relative path name matches.
func (g *globPattern) match(name string) bool {
	parts := strings.Split(name, "/")
	for _, a := range g.alts {
		if matchSegs(a, parts) {
			return true
		}
	}
	return false
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// expandBraces expands {a,b} alternatives (nested ones too); a backslash
// escapes a brace or comma.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("unmatched '}'")
			}
			depth--
			if depth > 0 {
				continue
			}
			var out []string
			for _, alt := range splitTop(p[open+1 : i]) {
				rest, err := expandBraces(p[:open] + alt + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, rest...)
				if len(out) > maxBraceAlts {
					return nil, fmt.Errorf("more than %d brace alternatives", maxBraceAlts)
				}
			}
			return out, nil
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unmatched '{'")
	}
	return []string{p}, nil
}

// splitTop splits s at the commas outside nested braces.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// hasMeta reports whether a path segment holds glob syntax.
func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[{\\") }
