package yamledit

import (
	"bytes"
	"strings"

	"github.com/switchyard/switchyard/yamlflow"
)

// restoreLines applies a restoreLines edit: the text old at line e.Line is
// replaced by e.Text. It checks that old is still there, whole lines, and
// that the result is still an editable workflow file; it does not compare
// trees (the edit says the text, not the tree).
func (d *Doc) restoreLines(e Edit, fail func(int, string, ...any) error) error {
	t := d.t
	// t.start holds the offset of each line's start, and len(src) after a
	// final line break: the places a whole-line range can start.
	if e.Line < 1 || e.Line > len(t.start) {
		return fail(0, "line %d is not a line of the file (it has %d)", e.Line, t.lines())
	}
	start := t.start[e.Line-1]
	end := start + len(e.Old)
	if end > len(t.src) || !bytes.Equal(t.src[start:end], []byte(e.Old)) {
		return fail(e.Line, "the text at line %d is not the text old this edit replaces (the file changed since the edit was made)", e.Line)
	}
	if end < len(t.src) && end > start && t.src[end-1] != '\n' {
		return fail(e.Line, "old must be whole lines, line breaks included")
	}
	if e.Text != "" && !strings.HasSuffix(e.Text, "\n") && end < len(t.src) {
		return fail(e.Line, "text must be whole lines, ending with a line break (it would join the next line)")
	}
	if e.Old == "" && e.Text == "" {
		return nil
	}
	out := make([]byte, 0, len(t.src)-len(e.Old)+len(e.Text))
	out = append(out, t.src[:start]...)
	out = append(out, e.Text...)
	out = append(out, t.src[end:]...)
	if len(out) > yamlflow.MaxFileSize {
		return fail(e.Line, "the result would be larger than %d bytes", yamlflow.MaxFileSize)
	}
	root, err := decode(out)
	if err != nil {
		return fail(e.Line, "the result is not an editable workflow file: %v", err)
	}
	d.t = newText(out)
	d.root = root
	return nil
}

// restoreEdits are the restoreLines edits that turn text from into text
// to: one per run of lines that differ (a line diff), the last one first
// so that each edit's line is still where it was in from. Each must leave
// a file that parses (a workflow file between two of them): where one
// does not (a run inside a block scalar whose other lines did not
// change), it is joined with the run above it.
func restoreEdits(from, to []byte) ([]Edit, error) {
	a, b := splitLines(from), splitLines(to)
	hunks := withContext(lineHunks(a, b), len(a))
	d, err := Parse(from)
	if err != nil {
		return nil, err
	}
	var out []Edit
	for k := len(hunks) - 1; k >= 0; k-- {
		h := hunks[k]
		e := Edit{Op: OpRestoreLines, Line: h[0] + 1,
			Old:  strings.Join(a[h[0]:h[1]], ""),
			Text: strings.Join(b[h[2]:h[3]], "")}
		if err := d.Apply(e); err != nil {
			if k == 0 {
				// The last step gives to, which parses when to does.
				return nil, err
			}
			hunks[k-1][1], hunks[k-1][3] = h[1], h[3]
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// withContext gives each run that only inserts lines the line above it
// (for one at the start of the file, the line below), so that its
// restoreLines edit checks that it goes where it was made: an insertion
// alone would go in at its line in any text. Runs that then overlap are
// joined.
func withContext(hunks [][4]int, lines int) [][4]int {
	var out [][4]int
	for _, h := range hunks {
		switch {
		case h[0] != h[1]:
		case h[0] > 0:
			h[0], h[2] = h[0]-1, h[2]-1
		case h[1] < lines:
			h[1], h[3] = h[1]+1, h[3]+1
		}
		if n := len(out); n > 0 && h[0] < out[n-1][1] {
			out[n-1][1], out[n-1][3] = h[1], h[3]
			continue
		}
		out = append(out, h)
	}
	return out
}

// maxDiffCells bounds the table of the line diff: past it (an edit that
// changed thousands of lines) the differing middle is one hunk.
const maxDiffCells = 4 << 20

// lineHunks are the runs of lines that differ between a and b, as
// [aStart, aEnd, bStart, bEnd), in order: the lines the two share at
// their start and end, then a longest common subsequence of the rest.
func lineHunks(a, b []string) [][4]int {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	x, y := a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(x), len(y)
	if n == 0 && m == 0 {
		return nil
	}
	if n == 0 || m == 0 || (n+1)*(m+1) > maxDiffCells {
		return [][4]int{{p, p + n, p, p + m}}
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var hunks [][4]int
	i, j := 0, 0
	for i < n || j < m {
		if i < n && j < m && x[i] == y[j] {
			i++
			j++
			continue
		}
		h := [4]int{p + i, 0, p + j, 0}
		for i < n || j < m {
			if i < n && j < m && x[i] == y[j] {
				break
			}
			if j == m || i < n && lcs[i+1][j] >= lcs[i][j+1] {
				i++
			} else {
				j++
			}
		}
		h[1], h[3] = p+i, p+j
		hunks = append(hunks, h)
	}
	return hunks
}

// splitLines is src's lines, each with its line break (the last one
// without, when the file does not end with one).
func splitLines(src []byte) []string {
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
