package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Read limits, as Claude Code's.
const (
	// ReadDefaultLimit is how many lines Read shows without a limit.
	ReadDefaultLimit = 2000
	// ReadMaxLineChars is where Read cuts a long line.
	ReadMaxLineChars = 2000
	// sniffSize is how much of a file the binary check looks at.
	sniffSize = 8 << 10
)

type readTool struct{}

func (readTool) Name() string { return "Read" }

func (readTool) Description() string {
	return "Reads a text file from the workspace. file_path is absolute, or relative to the workspace folder. " +
		"Output is numbered like `cat -n` (line number, tab, line); the numbers are not part of the file. " +
		fmt.Sprintf("Shows up to %d lines from offset (1-based, default 1); pass offset and limit to read a long file in parts. ", ReadDefaultLimit) +
		fmt.Sprintf("Lines longer than %d characters are cut. Binary files are refused; use LS for folders.", ReadMaxLineChars)
}

func (readTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"file_path": map[string]any{"type": "string", "description": "The file to read: absolute, or relative to the workspace folder"},
			"offset":    map[string]any{"type": "integer", "description": "The line number to start reading from (1-based). Only needed for files too long to read at once"},
			"limit":     map[string]any{"type": "integer", "description": "The number of lines to read. Only needed for files too long to read at once"},
		},
		"required":             []string{"file_path"},
		"additionalProperties": false,
	}
}

func (t readTool) Call(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := parseArgs(t, raw)
	if err != nil {
		return errResult("Read", "%v", err)
	}
	fp, offset, limit := a.str("file_path"), a.int("offset"), a.int("limit")
	if a.err != nil {
		return errResult("Read", "%v", a.err)
	}
	switch {
	case offset < 0:
		return errResult("Read", "offset must be 1 or more, got %d", offset)
	case a.has("limit") && limit < 1:
		return errResult("Read", "limit must be 1 or more, got %d", limit)
	}
	if offset == 0 {
		offset = 1
	}
	if !a.has("limit") {
		limit = ReadDefaultLimit
	}
	pl, err := env.locate(fp)
	if err != nil {
		return errResult("Read", "%v", err)
	}
	defer pl.close()
	f, err := openRead(pl.root, pl.rel)
	if err != nil {
		return errResult("Read", "%v", pathErr(fp, err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return errResult("Read", "%v", pathErr(fp, err))
	}
	if fi.IsDir() {
		return errResult("Read", "%s is a directory; use LS to list it", fp)
	}
	if !fi.Mode().IsRegular() {
		return errResult("Read", "%s is not a regular file", fp)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return errResult("Read", "%v", pathErr(fp, err))
	}
	if len(head) == 0 {
		return Result{Output: fmt.Sprintf("%s exists but is empty.", fp)}
	}
	if isBinary(head) {
		return errResult("Read", "%s is a binary file (%d bytes); Read shows text files only", fp, fi.Size())
	}
	var out capture
	n, shown := 0, 0
	for {
		if n%4096 == 0 && ctx.Err() != nil {
			return errResult("Read", "cancelled: %v", ctx.Err())
		}
		line, cut, err := readLine(br, ReadMaxLineChars)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return errResult("Read", "%v", pathErr(fp, err))
		}
		n++
		if n < offset {
			continue
		}
		if shown == limit {
			n-- // this line is not shown
			return out.result(fmt.Sprintf("\n... (more lines follow; read on with offset=%d)", n+1), false)
		}
		if shown > 0 {
			out.WriteString("\n")
		}
		out.WriteString(fmt.Sprintf("%6d\t", n))
		out.WriteString(line)
		if cut {
			out.WriteString(fmt.Sprintf(" ... [line cut at %d characters]", ReadMaxLineChars))
		}
		shown++
	}
	if shown == 0 {
		return Result{Output: fmt.Sprintf("%s has %d lines; offset %d is past its end.", fp, n, offset)}
	}
	return out.result("", false)
}

// readLine reads one line (without its "\n" or "\r\n") and keeps at most
// maxChars characters of it; cut says it was longer. Reading on past a
// kept prefix costs no memory, so a one-line gigabyte file is safe. io.EOF
// only when no bytes are left.
func readLine(br *bufio.Reader, maxChars int) (string, bool, error) {
	var kept []byte
	cut := false
	maxBytes := maxChars * utf8.UTFMax
	got := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			got = true
		}
		if !cut {
			kept = append(kept, chunk...)
			if len(kept) > maxBytes+2 {
				kept, cut = kept[:maxBytes+2], true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, err
		}
		if !got {
			return "", false, io.EOF
		}
		break
	}
	kept = bytes.TrimSuffix(kept, []byte("\n"))
	kept = bytes.TrimSuffix(kept, []byte("\r"))
	// Cut at maxChars characters (runes), not bytes.
	chars := 0
	for i := range string(kept) {
		if chars == maxChars {
			return string(kept[:i]), true, nil
		}
		chars++
	}
	// Fewer runes than maxChars in the kept bytes cannot happen (a rune
	// takes at most UTFMax bytes), so cut is false here but for safety.
	return string(kept), cut, nil
}

// isBinary: a NUL byte in head, or much of it not UTF-8 (Latin-1 text with
// a few accents still reads; an image does not).
func isBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && size == 1 {
			if len(head)-i < utf8.UTFMax && !utf8.FullRune(head[i:]) {
				break // a character cut by the end of the sniffed part
			}
			bad++
		}
		i += size
	}
	return bad*10 > len(head)
}
