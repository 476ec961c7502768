package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/switchyard/switchyard/graph"
)

// cmdValidate implements `switchyard validate [--json] FILE...`.
//
// Each file is normalized and validated (.yaml and .yml files go to the YAML
// workflow loader). Text output is one line per problem, severity first;
// with several files each line starts with "<file>: ". A file without
// problems prints "<file>: ok".
//
// --json with one file prints {"valid": bool, "problems": [...]}. With
// several files it prints one array of {"file", "valid", "problems"} in
// argument order, so a script parses one document either way and can tell
// the files apart; a file that cannot be read or parsed appears there with
// "valid": false and an "error" string (the message also goes to stderr).
//
// Exit status: 2 if any file could not be read or parsed (or on bad usage),
// else 1 if any file has an error, else 0. Warnings alone exit 0.
func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	jsonOut := fset.Bool("json", false, "print the result as JSON")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard validate [--json] FILE...")
		fmt.Fprintln(stderr, "Normalizes and validates graph (.json) or YAML workflow (.yaml, .yml) files.")
		fset.PrintDefaults()
	}
	files, code, ok := parseInterspersed(fset, args)
	if !ok {
		return code
	}
	if len(files) == 0 {
		fset.Usage()
		return exitUsage
	}

	type fileResult struct {
		File     string          `json:"file"`
		Valid    bool            `json:"valid"`
		Problems []graph.Problem `json:"problems"`
		Error    string          `json:"error,omitempty"`
	}
	results := make([]fileResult, 0, len(files))
	exit := exitOK
	for _, path := range files {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "switchyard validate: %v\n", ctx.Err())
			return exitCancelled
		}
		problems, err := checkFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "switchyard validate: %v\n", err)
			exit = exitUsage
			results = append(results, fileResult{File: path, Problems: []graph.Problem{}, Error: err.Error()})
			continue
		}
		if problems == nil {
			problems = []graph.Problem{}
		}
		valid := !graph.HasErrors(problems)
		if !valid && exit == exitOK {
			exit = exitFailed
		}
		results = append(results, fileResult{File: path, Valid: valid, Problems: problems})
		if *jsonOut {
			continue
		}
		prefix := ""
		if len(files) > 1 {
			prefix = path + ": "
		}
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "%s: ok\n", path)
		}
		for _, p := range problems {
			fmt.Fprintf(stdout, "%s%s\n", prefix, problemLine(p))
		}
	}

	if *jsonOut {
		var doc any = results
		if len(files) == 1 {
			if results[0].Error != "" {
				return exit // nothing valid to print; stderr says why
			}
			doc = struct {
				Valid    bool            `json:"valid"`
				Problems []graph.Problem `json:"problems"`
			}{results[0].Valid, results[0].Problems}
		}
		if err := writeJSON(stdout, doc); err != nil {
			fmt.Fprintf(stderr, "switchyard validate: %v\n", err)
			return exitFailed
		}
	}
	return exit
}

// cmdNormalize implements `switchyard normalize FILE`: the graph in the
// current shape on stdout, normalization warnings on stderr.
func cmdNormalize(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("normalize", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: switchyard normalize FILE")
		fmt.Fprintln(stderr, "Prints a graph file (current or legacy shape) in the current shape as indented JSON.")
	}
	files, code, ok := parseInterspersed(fset, args)
	if !ok {
		return code
	}
	if len(files) != 1 {
		fset.Usage()
		return exitUsage
	}
	path := files[0]
	if isYAML(path) {
		fmt.Fprintf(stderr, "switchyard normalize: %s: normalize works on JSON graph files, not YAML workflows\n", path)
		return exitUsage
	}
	g, warnings, err := decodeFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard normalize: %v\n", err)
		return exitUsage
	}
	out, err := graph.Encode(g)
	if err != nil {
		fmt.Fprintf(stderr, "switchyard normalize: %s: %v\n", path, err)
		return exitFailed
	}
	for _, p := range warnings {
		fmt.Fprintln(stderr, problemLine(p))
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "switchyard normalize: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// checkFile returns a file's normalization warnings and validation
// problems. An error means the file could not be read or parsed.
func checkFile(path string) ([]graph.Problem, error) {
	if isYAML(path) {
		problems, err := validateYAMLFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return problems, nil
	}
	g, warnings, err := decodeFile(path)
	if err != nil {
		return nil, err
	}
	return append(warnings, graph.Validate(g)...), nil
}

// decodeFile reads and decodes a graph file; its errors name the file (and,
// for malformed JSON, the line and column).
func decodeFile(path string) (*graph.Graph, []graph.Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named below, once
		}
		return nil, nil, fmt.Errorf("%s: cannot read: %w", path, err)
	}
	g, warnings, err := graph.Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, warnings, nil
}

func isYAML(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// problemLine formats a problem as "<severity> <code> node=<id> edge=<id>: <message>".
func problemLine(p graph.Problem) string {
	var b strings.Builder
	b.WriteString(p.Severity)
	b.WriteByte(' ')
	b.WriteString(p.Code)
	if p.NodeID != "" {
		b.WriteString(" node=")
		b.WriteString(lineField(p.NodeID))
	}
	if p.EdgeID != "" {
		b.WriteString(" edge=")
		b.WriteString(lineField(p.EdgeID))
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// lineField quotes an id that would otherwise break the line format (ids
// are free text in the editor).
func lineField(id string) string {
	if strings.ContainsFunc(id, func(r rune) bool {
		return r == ':' || r == '=' || r == '"' || !unicode.IsGraphic(r) || unicode.IsSpace(r)
	}) {
		return strconv.Quote(id)
	}
	return id
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseInterspersed parses flags that may come before, between or after
// the file arguments ("--" ends flag parsing). When ok is false the caller
// returns code.
func parseInterspersed(fset *flag.FlagSet, args []string) (files []string, code int, ok bool) {
	for {
		if err := fset.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fset.Args()
		if len(rest) == 0 {
			return files, 0, true
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(files, rest...), 0, true
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}
