package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Fit makes output a Result the model may see: invalid UTF-8 replaced,
// and cut to MaxResult bytes on a UTF-8 boundary with a note saying how
// much was shown (Cut and FullSize set; an uncut Result has FullSize 0). Tools that wrap other tools (MCP
// servers, subagents) use it so every result obeys the same bound.
func Fit(output string, isError bool) Result {
	output = strings.ToValidUTF8(output, "\uFFFD")
	return fit(output, "", len(output), isError)
}

// errResult is an error Result: "Tool: message".
func errResult(tool, format string, args ...any) Result {
	return Fit(tool+": "+fmt.Sprintf(format, args...), true)
}

// fit cuts body so that body, a cut note and trailer together take at most
// MaxResult bytes. full is body's size before the caller stopped keeping
// it (>= len(body)): a tool that only counts what it does not keep still
// reports the true size. The trailer (an exit code, a "more lines" hint)
// is kept whole, so a cut never hides how a call ended.
func fit(body, trailer string, full int, isError bool) Result {
	body = strings.ToValidUTF8(body, "\uFFFD")
	if full < len(body) {
		full = len(body)
	}
	if len(trailer) > MaxResult/4 { // not a trailer: cut it like the rest
		body, full, trailer = body+trailer, full+len(trailer), ""
	}
	if full == len(body) && len(body)+len(trailer) <= MaxResult {
		return Result{Output: body + trailer, IsError: isError}
	}
	total := full + len(trailer)
	// The note's size with the widest numbers it can hold bounds the room.
	room := MaxResult - len(trailer) - len(cutNote(total, total))
	keep := min(len(body), max(room, 0))
	for keep > 0 && keep < len(body) && !utf8.RuneStart(body[keep]) {
		keep--
	}
	shown := keep + len(trailer)
	return Result{
		Output:   body[:keep] + cutNote(shown, total) + trailer,
		IsError:  isError,
		Cut:      true,
		FullSize: total,
	}
}

func cutNote(shown, total int) string {
	return fmt.Sprintf("\n... [output cut: %d of %d bytes shown]", shown, total)
}

// capture builds a tool's output while keeping memory bounded: past a
// few times MaxResult it only counts what is written, so the cut note
// still gives the true size of a huge answer.
type capture struct {
	b     strings.Builder
	total int
}

// keepLimit is how much a capture keeps: more than a result can show, so
// the cut lands on text that was kept.
const keepLimit = 2 * MaxResult

func (c *capture) WriteString(s string) {
	c.total += len(s)
	if c.b.Len() < keepLimit {
		c.b.WriteString(s[:min(len(s), keepLimit-c.b.Len()+utf8.UTFMax)])
	}
}

func (c *capture) result(trailer string, isError bool) Result {
	return fit(c.b.String(), trailer, c.total, isError)
}
