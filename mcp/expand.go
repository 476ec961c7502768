package mcp

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/switchyard/switchyard/yamlflow"
)

// Variables in configs: see the package documentation.

// ref is one ${NAME} or ${NAME:-default} reference: s[start:end].
type ref struct {
	start, end int
	name, def  string
	hasDef     bool
}

// parseRefs finds the references in s; a malformed one is an error.
func parseRefs(s string) ([]ref, error) {
	var refs []ref
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) || s[i+1] != '{' {
			continue
		}
		closeAt := strings.IndexByte(s[i+2:], '}')
		if closeAt < 0 {
			return nil, fmt.Errorf("%q has a ${ without its closing }", s)
		}
		body := s[i+2 : i+2+closeAt]
		r := ref{start: i, end: i + 2 + closeAt + 1, name: body}
		if n, d, ok := strings.Cut(body, ":-"); ok {
			r.name, r.def, r.hasDef = n, d, true
		}
		if !envNameRe.MatchString(r.name) {
			return nil, fmt.Errorf("${%s}: %q is not a variable name (want ${NAME} or ${NAME:-default})", body, r.name)
		}
		refs = append(refs, r)
		i = r.end - 1
	}
	return refs, nil
}

// IsSecret reports whether ${name} is refused: one of Switchyard's own
// secrets (OPENAI_API_KEY, ANTHROPIC_API_KEY, SWITCHYARD_*) or one of extra.
func IsSecret(name string, extra []string) bool {
	if yamlflow.OwnSecret(name) {
		return true
	}
	for _, e := range extra {
		if e == name {
			return true
		}
	}
	return false
}

// expander expands the strings of one server entry, collecting errors.
type expander struct {
	lookup  func(string) (string, bool)
	secrets []string
	errs    []error
	prefix  string
}

func (x *expander) expand(field, s string) string {
	refs, err := parseRefs(s)
	if err != nil { // ParseConfig reports these; a hand-built ServerConfig may not have been through it
		x.errs = append(x.errs, fmt.Errorf("%s%s: %w", x.prefix, field, err))
		return ""
	}
	if len(refs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, r := range refs {
		b.WriteString(s[last:r.start])
		last = r.end
		if IsSecret(r.name, x.secrets) {
			x.errs = append(x.errs, fmt.Errorf("%s%s: ${%s} is one of Switchyard's own secrets: it is never passed to an MCP server (expanded to nothing)", x.prefix, field, r.name))
			continue
		}
		v, ok := x.lookup(r.name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case r.hasDef:
			b.WriteString(r.def)
		case !ok:
			x.errs = append(x.errs, fmt.Errorf("%s%s: ${%s} is not set (give a default with ${%s:-default})", x.prefix, field, r.name, r.name))
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// serverPrefix is how messages about a server start.
func serverPrefix(name string, sc ServerConfig) string {
	switch {
	case sc.Source != "" && sc.Line > 0:
		return fmt.Sprintf("mcp server %q (%s:%d)", name, sc.Source, sc.Line)
	case sc.Source != "":
		return fmt.Sprintf("mcp server %q (%s)", name, sc.Source)
	}
	return fmt.Sprintf("mcp server %q", name)
}

// Expand resolves the ${VAR} references of a server entry from
// Options.LookupEnv (the process environment by default). It returns the
// entry with every reference it could resolve (secrets and unset variables
// become empty) and an error naming each variable that was refused or
// missing; Connect refuses to start a server whose entry has one.
func Expand(name string, sc ServerConfig, opts Options) (ServerConfig, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	x := &expander{lookup: lookup, secrets: opts.Secrets, prefix: serverPrefix(name, sc) + ": "}
	out := sc
	out.Command = x.expand("command", sc.Command)
	if sc.Args != nil {
		out.Args = make([]string, len(sc.Args))
		for i, a := range sc.Args {
			out.Args[i] = x.expand(fmt.Sprintf("args[%d]", i), a)
		}
	}
	out.Env = x.expandMap("env", sc.Env)
	out.URL = x.expand("url", sc.URL)
	out.Headers = x.expandMap("headers", sc.Headers)
	if sc.URL != "" && out.URL != sc.URL && len(x.errs) == 0 {
		if msg := checkURL(out.URL); msg != "" {
			x.errs = append(x.errs, fmt.Errorf("%surl: %s", x.prefix, msg))
		}
	}
	return out, errors.Join(x.errs...)
}

func (x *expander) expandMap(field string, m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // errors in a stable order
	out := make(map[string]string, len(m))
	for _, k := range keys {
		out[k] = x.expand(field+"."+k, m[k])
	}
	return out
}
