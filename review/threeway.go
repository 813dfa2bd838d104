package review

import (
	"errors"
	"fmt"
	"strings"
)

// splitText is a file's text as lines, the way a buffer holds them: no line
// ends, "\r" dropped from a CRLF file, no UTF-8 byte order mark (a buffer
// keeps it in 'bomb', not in line 1).
func splitText(s string) []string {
	s = strings.TrimPrefix(s, "\ufeff")
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

// chunk is one place where Claude's change (baseline → result) or the
// user's since (result → now) or both touch the result, as diff3 groups
// them: hunks of either side that overlap or touch go together. A chunk
// of Claude's alone is reverted; one of the user's alone is theirs; one of
// both is put back already when its text now is the baseline's, else
// refused.
type chunk struct {
	r0, r1 int // in Claude's result
	b0, b1 int // in the baseline
	c0, c1 int // in the text now
	claude bool
	user   bool
	shown  bool // it touches a difference of the diff shown (baseline, now)
}

// touches reports whether [a0, a1) and [b0, b1) overlap, or touch where
// either is empty (an insertion point next to a change is the same place:
// refused rather than guessed).
func touches(a0, a1, b0, b1 int) bool {
	if a0 == a1 || b0 == b1 {
		return a0 <= b1 && b0 <= a1
	}
	return a0 < b1 && b0 < a1
}

// chunks merges Claude's hunks and the user's into chunks, in order.
//
// Each chunk also says whether the diff the user sees (baseline against
// now) shows a difference there. Diffs line repeated lines up as they
// may: once a hunk of Claude's is put back, the user's diff can match its
// lines elsewhere and leave Claude's hunk looking untouched; reverting it
// "again" added its lines once more at every press. A chunk whose lines
// are no difference in the diff shown is reverted only when that brings
// the text closer to the baseline.
func chunks(base, res, cur []string) []chunk {
	type side struct {
		hs    []hunk // A: result, B: the side's text
		i     int    // the next hunk
		delta int    // lines the side's hunks before i add
	}
	// (Claude's hunks as the diff shown lines them up, baseline first.)
	cl := &side{hs: transpose(diffLines(base, res))}
	us := &side{hs: diffLines(res, cur)}
	var out []chunk
	for cl.i < len(cl.hs) || us.i < len(us.hs) {
		first := cl
		if cl.i >= len(cl.hs) || (us.i < len(us.hs) && us.hs[us.i].A0 < cl.hs[cl.i].A0) {
			first = us
		}
		h := first.hs[first.i]
		ch := chunk{r0: h.A0, r1: h.A1}
		bd, cd := cl.delta, us.delta // the sides' offsets at the chunk's start
		for grew := true; grew; {
			grew = false
			for _, sd := range []*side{cl, us} {
				for sd.i < len(sd.hs) && touches(sd.hs[sd.i].A0, sd.hs[sd.i].A1, ch.r0, ch.r1) {
					x := sd.hs[sd.i]
					ch.r0, ch.r1 = min(ch.r0, x.A0), max(ch.r1, x.A1)
					sd.delta += (x.B1 - x.B0) - (x.A1 - x.A0)
					sd.i++
					if sd == cl {
						ch.claude = true
					} else {
						ch.user = true
					}
					grew = true
				}
			}
		}
		ch.b0, ch.b1 = ch.r0+bd, ch.r1+cl.delta
		ch.c0, ch.c1 = ch.r0+cd, ch.r1+us.delta
		out = append(out, ch)
	}
	shown := diffLines(base, cur)
	for i := range out {
		for _, d := range shown {
			if touches(d.B0, d.B1, out[i].c0, out[i].c1) {
				out[i].shown = true
				break
			}
		}
	}
	return out
}

// transpose swaps the two sides of hunks.
func transpose(hs []hunk) []hunk {
	for i, h := range hs {
		hs[i] = hunk{h.B0, h.B1, h.A0, h.A1}
	}
	return hs
}

// revertable says what to do with a chunk: leave it (skip), refuse
// (conflict), or revert it. strict: every revert must bring the text
// closer to the baseline (where the user changed the text, or hunks were
// put back one by one, diffs may line repeated lines up differently).
func (c chunk) revertable(base, cur []string, strict bool) (skip, conflict bool) {
	switch {
	case !c.claude:
		return true, false // the user's alone
	case c.user && equal(cur[c.c0:c.c1], base[c.b0:c.b1]):
		return true, false // put back already
	case c.user:
		return false, true
	case (strict || !c.shown) && distance(base, splice(cur, c.edit(base))) >= distance(base, cur):
		// Reverting it would not bring the text closer to the baseline:
		// it is put back already, lined up elsewhere.
		return true, false
	}
	return false, false
}

// edit is the chunk's revert.
func (c chunk) edit(base []string) Edit {
	return Edit{Start: c.c0, End: c.c1, Lines: base[c.b0:c.b1]}
}

// distance is how many lines differ between a and b.
func distance(a, b []string) int {
	n := 0
	for _, h := range diffLines(a, b) {
		n += (h.A1 - h.A0) + (h.B1 - h.B0)
	}
	return n
}

// splice is cur with e made.
func splice(cur []string, e Edit) []string {
	out := make([]string, 0, len(cur)-(e.End-e.Start)+len(e.Lines))
	out = append(append(append(out, cur[:e.Start]...), e.Lines...), cur[e.End:]...)
	return out
}

// within reports whether line is in [a, b); an empty range (the other
// side's lines show as filler between two lines) takes either line.
func within(line, a, b int) bool {
	if a == b {
		return line == a || line == a-1
	}
	return line >= a && line < b
}

// lineRange names lines [a, b) 1-based for a person.
func lineRange(a, b int) string {
	if b-a <= 1 {
		return fmt.Sprintf("line %d", a+1)
	}
	return fmt.Sprintf("lines %d–%d", a+1, b)
}

// revertHunk is the edit that puts back the baseline of the Claude hunk
// on line (0-based, in cur; in base when onBase: the cursor is on the
// diff's left side), or why it cannot: the user changed those lines since
// Claude did.
func revertHunk(base, res, cur []string, line int, onBase bool) (Edit, error) {
	for _, c := range chunks(base, res, cur) {
		hit := within(line, c.c0, c.c1)
		if onBase {
			hit = within(line, c.b0, c.b1)
		}
		if !hit {
			continue
		}
		skip, conflict := c.revertable(base, cur, true)
		if skip {
			continue
		}
		if conflict {
			return Edit{}, fmt.Errorf("%s changed after Claude's edit: reverting it would lose your change; revert it by hand (the baseline is on the left)",
				lineRange(c.c0, c.c1))
		}
		return c.edit(base), nil
	}
	return Edit{}, errNoHunk
}

// revertAll is every edit that puts the baseline back, last first (so
// that each applies to the text as the earlier left it), or why it
// cannot.
func revertAll(base, res, cur []string) ([]Edit, error) {
	cs := chunks(base, res, cur)
	strict := false // untouched since Claude: Claude's hunks, exactly
	for _, c := range cs {
		strict = strict || c.user
	}
	var edits []Edit
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		skip, conflict := c.revertable(base, cur, strict)
		if skip {
			continue
		}
		if conflict {
			return nil, fmt.Errorf("%s changed after Claude's edit: reverting the whole file would lose your change; revert hunk by hunk, or by hand",
				lineRange(c.c0, c.c1))
		}
		edits = append(edits, c.edit(base))
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
