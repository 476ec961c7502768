package yamlflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// decode reads the first YAML document. ok is false after a syntax error.
func (p *parser) decode(data []byte) (doc *yaml.Node, ok bool) {
	// The YAML library is third-party code run on untrusted input: a panic in
	// it must become a diagnostic, not a crash of the server.
	defer func() {
		if r := recover(); r != nil {
			p.errorf(1, "", "", CodeYAMLSyntax, "YAML parser failed: %v", r)
			doc, ok = nil, false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var d yaml.Node
	if err := dec.Decode(&d); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		p.syntaxError(data, err)
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		p.warnf(next.Line, "", "", CodeMultipleDocuments, "only the first YAML document is used; later documents (after ---) are ignored")
	case !errors.Is(err, io.EOF):
		p.syntaxError(data, err)
		return nil, false
	}
	return &d, true
}

func (p *parser) syntaxError(data []byte, err error) {
	msg, ctxLine := splitYAMLError(err)
	line := problemLine(data, msg, ctxLine)
	switch {
	case line > 0 && ctxLine > 0 && line != ctxLine:
		msg += fmt.Sprintf(" (in the block that starts at line %d)", ctxLine)
	case line == 0 && ctxLine > 0:
		line = ctxLine
	case line == 0:
		line = guessErrorLine(data, msg)
	}
	p.errorf(line, "", "", CodeYAMLSyntax, "invalid YAML: %s", msg)
}

// splitYAMLError separates yaml.v3's "yaml: line N: msg" into msg and N.
func splitYAMLError(err error) (string, int) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil && strings.HasPrefix(msg, m[0]+": ") {
		line, _ := strconv.Atoi(m[1])
		return strings.TrimPrefix(msg, m[0]+": "), line
	}
	return msg, 0
}

// problemLine finds the line a YAML syntax error is really on. yaml.v3
// reports the line where the enclosing block starts (for a bad indent 50
// lines into `nodes:`, the `nodes:` line), so parse ever longer prefixes of
// the file from there: the first prefix that fails with the same message
// ends on the offending line. The work is bounded; 0 means not found.
func problemLine(data []byte, msg string, from int) int {
	const maxLines, budget = 5000, 16 << 20
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxLines {
		return 0
	}
	prefix := 0
	for _, l := range lines[:max(from-1, 0)] {
		prefix += len(l)
	}
	spent := 0
	for k := max(from, 1); k <= len(lines); k++ {
		prefix += len(lines[k-1])
		if spent += prefix; spent > budget {
			return 0
		}
		if err := decodeAll(data[:prefix]); err != nil {
			if m, _ := splitYAMLError(err); m == msg {
				return k
			}
		}
	}
	return 0
}

// decodeAll decodes every document of data, returning the first error.
func decodeAll(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// guessErrorLine finds a line for YAML errors reported without one.
func guessErrorLine(data []byte, msg string) int {
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				return 1 + bytes.Count(data[:i], []byte("\n"))
			}
			i += size
		}
	}
	if i := bytes.IndexFunc(data, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\r' && r != '\t'
	}); i >= 0 && strings.Contains(msg, "control character") {
		return 1 + bytes.Count(data[:i], []byte("\n"))
	}
	if strings.Contains(msg, "end of stream") {
		return 1 + bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))
	}
	return 1
}
