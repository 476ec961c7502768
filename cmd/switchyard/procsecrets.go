package main

import (
	"bytes"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/switchyard/switchyard/engine"
)

// Secrets through /proc. A process that runs bash and script nodes (serve,
// run, resume) is a parent every node can look at: /proc/$PPID/cmdline is
// readable by every local process, and /proc/$PPID/environ by every
// process of the same user. So these commands
//
//   - make themselves non-dumpable (Linux): /proc/PID/environ, mem, fd and
//     ptrace are then refused to the user's other processes (root with
//     CAP_SYS_PTRACE still passes);
//   - overwrite, in the memory the kernel shows as cmdline and environ,
//     the values of the secret flags and variables with '*': the process
//     reads them before (Go keeps its own copy of the environment);
//   - drop Switchyard's own secret variables (the token, its file, the
//     notify URL, database URLs) from their own environment once read
//     (unsetEnv), so that a child process that inherits it (git and its
//     hooks) does not get them. API keys stay: a workflow's pass_env may
//     name them for its nodes (read from the environment at each node's
//     start), as may --pass-env for any variable, which unsetEnv keeps.
//
// SWITCHYARD_DUMPABLE=1 keeps the process dumpable, for debuggers and for
// tests that count its descriptors as another user.

// dumpableEnv keeps the process dumpable when "1".
const dumpableEnv = "SWITCHYARD_DUMPABLE"

// secretEnv are the variables whose values are hidden from /proc: keys,
// the token (and where its file is), the notify URL (Slack's is a secret)
// and database URLs (their password only).
var secretEnv = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SWITCHYARD_TOKEN", "SWITCHYARD_TOKEN_FILE",
	"SWITCHYARD_NOTIFY_URL", "SWITCHYARD_DB", "SWITCHYARD_DATABASE_URL"}

// secretFlag is a flag whose value is hidden in /proc/PID/cmdline.
type secretFlag struct {
	name  string
	value *string // the parsed value: cloned before the arguments are overwritten
}

// hideFromProc makes the process non-dumpable and hides the secret flags'
// values and the secret variables from /proc/PID/cmdline and environ. It
// returns what went wrong, for a warning; the process goes on either way.
func hideFromProc(flags ...secretFlag) error {
	// Go's flag values share their bytes with the arguments the kernel
	// shows: keep copies before those are overwritten.
	for _, f := range flags {
		if f.value != nil {
			*f.value = strings.Clone(*f.value)
		}
	}
	if os.Getenv(dumpableEnv) != "1" {
		if err := setNonDumpable(); err != nil {
			return err
		}
	}
	return scrubProc(flags)
}

// unsetEnv drops variables the process has read (and will not read again)
// from its environment, except those --pass-env hands to nodes.
func unsetEnv(names ...string) {
	pass := map[string]bool{}
	for _, n := range strings.Split(os.Getenv(engine.PassEnvVar), ",") {
		pass[strings.TrimSpace(n)] = true
	}
	for _, n := range names {
		if !pass[n] {
			_ = os.Unsetenv(n)
		}
	}
}

// secretPart is the part of a value to hide: a database URL's password,
// else the whole value.
func secretPart(name, v string) string {
	if name != "db" && name != "SWITCHYARD_DB" && name != "SWITCHYARD_DATABASE_URL" {
		return v
	}
	if u, err := url.Parse(v); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p
		}
		return ""
	}
	if m := dsnPassword.FindStringSubmatch(v); m != nil { // key=value form
		return m[1]
	}
	return ""
}

var dsnPassword = regexp.MustCompile(`(?:^|\s)password=('[^']*'|\S+)`)

// span is a range of bytes to overwrite, relative to the start of a block.
type span struct{ off, n int }

// argSpans finds, in the NUL-separated arguments block, the bytes of the
// secret flags' values: "-name value", "--name value", "-name=value" and
// "--name=value".
func argSpans(block []byte, flags []secretFlag) []span {
	args, offs := splitBlock(block)
	var out []span
	for i, a := range args {
		for _, f := range flags {
			for _, pre := range []string{"-" + f.name, "--" + f.name} {
				switch {
				case a == pre && i+1 < len(args):
					out = appendPart(out, f.name, args[i+1], offs[i+1])
				case strings.HasPrefix(a, pre+"="):
					out = appendPart(out, f.name, a[len(pre)+1:], offs[i]+len(pre)+1)
				}
			}
		}
	}
	return out
}

// envSpans finds the values of the secret variables in the environment
// block.
func envSpans(block []byte) []span {
	vars, offs := splitBlock(block)
	var out []span
	for i, kv := range vars {
		name, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, s := range secretEnv {
			if name == s {
				out = appendPart(out, name, v, offs[i]+len(name)+1)
			}
		}
	}
	return out
}

func appendPart(out []span, name, v string, off int) []span {
	p := secretPart(name, v)
	if p == "" {
		return out
	}
	i := strings.Index(v, p)
	return append(out, span{off: off + i, n: len(p)})
}

// splitBlock splits a NUL-separated block, with each part's offset.
func splitBlock(b []byte) ([]string, []int) {
	var parts []string
	var offs []int
	start := 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == 0 {
			if i > start || i < len(b) {
				parts = append(parts, string(b[start:i]))
				offs = append(offs, start)
			}
			start = i + 1
		}
	}
	return parts, offs
}

// masked is n stars.
func masked(n int) []byte { return bytes.Repeat([]byte{'*'}, n) }
