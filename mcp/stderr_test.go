package mcp

import (
	"os"
	"strings"
	"testing"
)

// TestStderrReader: long lines are cut, a flood is logged up to its
// budget then noted once, invalid UTF-8 is replaced, and the tail keeps
// the last lines.
func TestStderrReader(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var log stderrLog
	sr := newStderrReader("srv", r, log.add)
	go sr.run()
	var in strings.Builder
	in.WriteString("first\r\n")
	in.WriteString(strings.Repeat("L", 40<<10) + "\n") // past the reader's 16 KiB buffer
	in.WriteString("bad \xff byte\n")
	for i := 0; i < 400; i++ { // 400 KiB: past the 256 KiB budget
		in.WriteString(strings.Repeat("f", 1023) + "\n")
	}
	in.WriteString("last line without a newline")
	go func() {
		w.WriteString(in.String())
		w.Close()
	}()
	<-sr.done

	log.mu.Lock()
	lines := append([]string(nil), log.lines...)
	log.mu.Unlock()
	if lines[0] != "srv: first" {
		t.Errorf("first line %q", lines[0])
	}
	if want := "srv: " + strings.Repeat("L", maxStderrLine) + " [line cut]"; lines[1] != want {
		t.Errorf("long line: %d bytes, ends %q", len(lines[1]), lines[1][len(lines[1])-20:])
	}
	if lines[2] != "srv: bad \uFFFD byte" {
		t.Errorf("invalid UTF-8: %q", lines[2])
	}
	total := 0
	for _, l := range lines {
		total += len(l) - len("srv: ")
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "more than 256 KiB; the rest is not logged") || total > maxStderrStreamed+200 {
		t.Errorf("budget: %d lines, %d bytes, last %q", len(lines), total, last)
	}
	tail := sr.tail()
	if !strings.HasSuffix(tail, "\nlast line without a newline") || len(tail) > maxTailBytes+len("…") {
		t.Errorf("tail: %d bytes, ends %q", len(tail), tail[max(0, len(tail)-40):])
	}
}
