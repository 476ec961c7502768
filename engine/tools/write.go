package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// EditMaxSize bounds the files Edit rewrites (it holds them in memory).
const EditMaxSize = 64 << 20

type writeTool struct{}

func (writeTool) Name() string { return "Write" }

func (writeTool) Description() string {
	return "Writes a file in the workspace, replacing it if it exists. file_path is absolute, or relative to the workspace folder; " +
		"missing parent folders are created. Prefer Edit to change part of an existing file."
}

func (writeTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"file_path": map[string]any{"type": "string", "description": "The file to write: absolute, or relative to the workspace folder"},
			"content":   map[string]any{"type": "string", "description": "The content to write to the file"},
		},
		"required":             []string{"file_path", "content"},
		"additionalProperties": false,
	}
}

func (t writeTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("Write", "%v", err)
	}
	fp, content := a.str("file_path"), a.str("content")
	if a.err != nil {
		return errResult("Write", "%v", a.err)
	}
	if err := ctx.Err(); err != nil {
		return errResult("Write", "cancelled: %v", err)
	}
	pl, err := env.locate(fp)
	if err != nil {
		return errResult("Write", "%v", err)
	}
	defer pl.close()
	created, err := writeAtomic(pl, []byte(content))
	if err != nil {
		return errResult("Write", "%v", pathErr(fp, err))
	}
	verb := "Updated"
	if created {
		verb = "Created"
	}
	return Result{Output: fmt.Sprintf("%s %s (%d bytes).", verb, pl.abs(), len(content))}
}

type editTool struct{}

func (editTool) Name() string { return "Edit" }

func (editTool) Description() string {
	return "Replaces exact text in a file of the workspace. old_string must occur exactly once in the file " +
		"(include surrounding lines to make it unique) unless replace_all is true, and new_string must differ from it. " +
		"Copy the text as the file has it, without Read's line-number prefix, keeping its indentation."
}

func (editTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"file_path":   map[string]any{"type": "string", "description": "The file to modify: absolute, or relative to the workspace folder"},
			"old_string":  map[string]any{"type": "string", "description": "The text to replace"},
			"new_string":  map[string]any{"type": "string", "description": "The text to replace it with (must be different from old_string)"},
			"replace_all": map[string]any{"type": "boolean", "default": false, "description": "Replace every occurrence of old_string (default false)"},
		},
		"required":             []string{"file_path", "old_string", "new_string"},
		"additionalProperties": false,
	}
}

func (t editTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("Edit", "%v", err)
	}
	fp, oldS, newS, all := a.str("file_path"), a.str("old_string"), a.str("new_string"), a.bool("replace_all")
	if a.err != nil {
		return errResult("Edit", "%v", a.err)
	}
	switch {
	case oldS == "":
		return errResult("Edit", "old_string is empty; use Write to create or replace a whole file")
	case oldS == newS:
		return errResult("Edit", "old_string and new_string are the same; nothing to change")
	}
	if err := ctx.Err(); err != nil {
		return errResult("Edit", "cancelled: %v", err)
	}
	pl, err := env.locate(fp)
	if err != nil {
		return errResult("Edit", "%v", err)
	}
	defer pl.close()
	data, err := readWhole(pl, EditMaxSize)
	if err != nil {
		return errResult("Edit", "%v", pathErr(fp, err))
	}
	if isBinary(data[:min(len(data), sniffSize)]) {
		return errResult("Edit", "%s is a binary file; Edit changes text files only", fp)
	}
	text := string(data)
	n := strings.Count(text, oldS)
	if n == 0 && strings.Contains(text, "\r\n") && !strings.Contains(oldS, "\r") {
		// A CRLF file read through Read shows no "\r": match its lines.
		crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
		if c := strings.Count(text, crlf(oldS)); c > 0 {
			oldS, newS, n = crlf(oldS), crlf(newS), c
		}
	}
	switch {
	case n == 0:
		return errResult("Edit", "old_string was not found in %s (it must match the file exactly, whitespace included)", fp)
	case n > 1 && !all:
		return errResult("Edit", "old_string occurs %d times in %s; add surrounding text to make it unique, or set replace_all to replace every one", n, fp)
	}
	if all {
		text = strings.ReplaceAll(text, oldS, newS)
	} else {
		text = strings.Replace(text, oldS, newS, 1)
	}
	if _, err := writeAtomic(pl, []byte(text)); err != nil {
		return errResult("Edit", "%v", pathErr(fp, err))
	}
	what := "1 occurrence"
	if n > 1 {
		what = fmt.Sprintf("%d occurrences", n)
	}
	return Result{Output: fmt.Sprintf("Edited %s: replaced %s.", pl.abs(), what)}
}

// errTooLarge: a file over a tool's size bound.
var errTooLarge = errors.New("file too large")

// readWhole reads the place's regular file, at most limit bytes.
func readWhole(pl *place, limit int64) ([]byte, error) {
	f, err := openRead(pl.root, pl.rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w (over %d MiB)", errTooLarge, limit>>20)
	}
	return data, nil
}

// ReadFile reads a file under the same confinement as the Read tool: path
// is absolute or relative to Roots[0], and must resolve (through symlinks)
// beneath a root; at most EditMaxSize bytes. For callers that show what a
// Write or Edit would change.
func ReadFile(env *Env, path string) ([]byte, error) {
	pl, err := env.locate(path)
	if err != nil {
		return nil, err
	}
	defer pl.close()
	data, err := readWhole(pl, EditMaxSize)
	if err != nil {
		return nil, pathErr(path, err)
	}
	return data, nil
}
