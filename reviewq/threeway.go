package reviewq

import (
	"errors"
	"fmt"
	"strings"
)

// splitText is a file's text as lines, the way a buffer holds them: no line
// ends, "\r" dropped from a CRLF file.
func splitText(s string) []string {
	if s == "" {
		return []string{}
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	crlf := len(lines) > 0
	for i, l := range lines {
		// The last line of a file without an end of line has no "\r".
		if !strings.HasSuffix(l, "\r") && !(i == len(lines)-1 && !strings.HasSuffix(s, "\n")) {
			crlf = false
			break
		}
	}
	if crlf {
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	return lines
}

// isBinary reports text that is not shown as lines: a NUL byte, as Git
// decides.
func isBinary(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// Edit replaces the buffer's lines [Start, End) (0-based) with Lines.
type Edit struct {
	Start int      `json:"start"`
	End   int      `json:"end"`
	Lines []string `json:"lines"`
}

// errNoHunk is the answer for a cursor on no change of Claude's.
var errNoHunk = errors.New("no change of Claude's under the cursor (]c and [c move between the diff's hunks)")

// claudeHunk is one of Claude's hunks (baseline → result) and where it is
// in the text now.
type claudeHunk struct {
	h        hunk // A: baseline, B: Claude's result
	cur0     int  // its first line in the current text
	conflict *hunk
	reverted bool // the user's change there put the baseline back already
}

// overlaps reports whether the user's hunk u (A: result, B: current)
// touches Claude's result lines [b0, b1).
func overlaps(u hunk, b0, b1 int) bool {
	if u.A0 == u.A1 || b0 == b1 {
		return u.A0 <= b1 && b0 <= u.A1
	}
	return u.A0 < b1 && b0 < u.A1
}

// locate finds each of Claude's hunks in the current text: where it is,
// and the user's change that overlaps it since, if any.
func locate(base, res, cur []string) []claudeHunk {
	user := diffLines(res, cur)
	var out []claudeHunk
	for _, h := range diffLines(base, res) {
		ch := claudeHunk{h: h}
		delta := 0
		for i := range user {
			u := user[i]
			if overlaps(u, h.B0, h.B1) {
				if u.A0 == h.B0 && u.A1 == h.B1 && equal(cur[u.B0:u.B1], base[h.A0:h.A1]) {
					ch.reverted = true
				} else {
					ch.conflict = &user[i]
				}
				break
			}
			if u.A1 <= h.B0 {
				delta += (u.B1 - u.B0) - (u.A1 - u.A0)
			}
		}
		ch.cur0 = h.B0 + delta
		out = append(out, ch)
	}
	return out
}

// lineRange names lines [a, b) 1-based for a person.
func lineRange(a, b int) string {
	if b-a <= 1 {
		return fmt.Sprintf("line %d", a+1)
	}
	return fmt.Sprintf("lines %d–%d", a+1, b)
}

// revertHunk is the edit that puts back the baseline of the Claude hunk
// on line (0-based, in cur), or why it cannot: the user changed those
// lines since Claude did.
func revertHunk(base, res, cur []string, line int) (Edit, error) {
	hs := locate(base, res, cur)
	for _, c := range hs {
		if c.reverted {
			continue
		}
		if c.conflict != nil {
			u := *c.conflict
			if line >= u.B0 && line < max(u.B1, u.B0+1) {
				return Edit{}, fmt.Errorf("%s changed after Claude's edit: reverting it would lose your change; revert it by hand (the baseline is on the left)",
					lineRange(u.B0, u.B1))
			}
			continue
		}
		n := c.h.B1 - c.h.B0
		hit := line >= c.cur0 && line < c.cur0+n
		if n == 0 {
			// A deletion shows as filler between two lines: either one.
			hit = line == c.cur0 || line == c.cur0-1
		}
		if hit {
			return Edit{Start: c.cur0, End: c.cur0 + n, Lines: base[c.h.A0:c.h.A1]}, nil
		}
	}
	return Edit{}, errNoHunk
}

// revertAll is every edit that puts the baseline back, last first (so
// that each applies to the text as the earlier left it), or why it
// cannot.
func revertAll(base, res, cur []string) ([]Edit, error) {
	hs := locate(base, res, cur)
	var edits []Edit
	for i := len(hs) - 1; i >= 0; i-- {
		c := hs[i]
		if c.reverted {
			continue
		}
		if c.conflict != nil {
			u := *c.conflict
			return nil, fmt.Errorf("%s changed after Claude's edit: reverting the whole file would lose your change; revert hunk by hunk, or by hand",
				lineRange(u.B0, u.B1))
		}
		edits = append(edits, Edit{Start: c.cur0, End: c.cur0 + c.h.B1 - c.h.B0, Lines: base[c.h.A0:c.h.A1]})
	}
	return edits, nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
