package yamlflow

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// envNameRE is the shape of an environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// nodeIDRE is the id shape `$id.output` references can name.
var nodeIDRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// namedScriptRE is a bare name: no spaces, newlines, path separators or code
// punctuation; an optional extension.
var namedScriptRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9]+)?$`)

// IsNamedScript reports whether a script node's `script:` value names a
// script file (like "echo-args") rather than holding inline code.
func IsNamedScript(s string) bool {
	return namedScriptRE.MatchString(strings.TrimSpace(s))
}

// ErrInvalidCommandName is wrapped by ValidCommandName's errors.
var ErrInvalidCommandName = errors.New("invalid command name")

// ValidCommandName checks that a command node's name can only name a file
// inside the commands folder: not empty, no '/', '\' or "..", and not
// starting with '.'.
func ValidCommandName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidCommandName)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%w %q: must not contain '/' or '\\'", ErrInvalidCommandName, name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("%w %q: must not contain \"..\"", ErrInvalidCommandName, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%w %q: must not start with '.'", ErrInvalidCommandName, name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("%w %q: must not contain NUL", ErrInvalidCommandName, name)
	}
	return nil
}
