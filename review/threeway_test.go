package review

import (
	"math/rand"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func lines(s string) []string { return splitText(s) }

// apply applies hunks of a→b to a and must give b: the diff is a real one.
func applyHunks(a, b []string, hs []hunk) []string {
	var out []string
	i := 0
	for _, h := range hs {
		out = append(out, a[i:h.A0]...)
		out = append(out, b[h.B0:h.B1]...)
		i = h.A1
	}
	return append(out, a[i:]...)
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want []hunk
	}{
		{"same", "a\nb\n", "a\nb\n", nil},
		{"one changed", "a\nb\nc\n", "a\nB\nc\n", []hunk{{1, 2, 1, 2}}},
		{"two apart", "a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n", []hunk{{0, 1, 0, 1}, {4, 5, 4, 5}}},
		{"insert", "a\nc\n", "a\nb\nc\n", []hunk{{1, 1, 1, 2}}},
		{"delete", "a\nb\nc\n", "a\nc\n", []hunk{{1, 2, 1, 1}}},
		{"from empty", "", "x\ny\n", []hunk{{0, 0, 0, 2}}},
		{"to empty", "x\n", "", []hunk{{0, 1, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffLines(lines(tt.a), lines(tt.b))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("diff = %v, want %v", got, tt.want)
			}
		})
	}
	// Random texts: applying the hunks gives the new text, and no hunk is
	// empty or touches the next.
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		a, b := randLines(r), randLines(r)
		hs := diffLines(a, b)
		if got := applyHunks(a, b, hs); !reflect.DeepEqual(got, b) && !(len(got) == 0 && len(b) == 0) {
			t.Fatalf("%q → %q: hunks %v give %q", a, b, hs, got)
		}
		for j, h := range hs {
			if h.A0 == h.A1 && h.B0 == h.B1 {
				t.Fatalf("empty hunk %v", h)
			}
			if j > 0 && (hs[j-1].A1 == h.A0 && hs[j-1].B1 == h.B0) {
				t.Fatalf("hunks %v and %v touch", hs[j-1], h)
			}
		}
	}
}

func randLines(r *rand.Rand) []string {
	n := r.Intn(12)
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a' + r.Intn(4)))
	}
	return out
}

func TestSplitText(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"a\nb\n", []string{"a", "b"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\r\nb", []string{"a", "b"}},
		{"a\r\nb\n", []string{"a\r", "b"}}, // mixed: kept as it is
	}
	for _, tt := range tests {
		if got := splitText(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRevertHunk(t *testing.T) {
	base := "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	res := "one\nTWO\nthree\nfour\nfive\nSIX\nsix and a half\nseven\n"
	tests := []struct {
		name    string
		cur     string
		line    int  // 1-based
		onBase  bool // line is the baseline's (the diff's left side)
		want    string
		wantErr string
	}{
		{"first hunk", res, 2, false, "one\ntwo\nthree\nfour\nfive\nSIX\nsix and a half\nseven\n", ""},
		{"second hunk", res, 7, false, "one\nTWO\nthree\nfour\nfive\nsix\nseven\n", ""},
		{"no hunk there", res, 4, false, "", "no change of Claude's"},
		{"user lines above shift it", "zero\n" + res, 8, false, "zero\none\nTWO\nthree\nfour\nfive\nsix\nseven\n", ""},
		{"user edit elsewhere kept", "one\nTWO\nthree\nFOUR (mine)\nfive\nSIX\nsix and a half\nseven\n", 2, false,
			"one\ntwo\nthree\nFOUR (mine)\nfive\nSIX\nsix and a half\nseven\n", ""},
		{"user changed Claude's lines", "one\nTWO!\nthree\nfour\nfive\nSIX\nsix and a half\nseven\n", 2, false, "", "line 2 changed after Claude's edit"},
		// On the left, lines are the baseline's: "six" is baseline line 6
		// but the file's line 6 is "SIX", and with the user's line above
		// the file's line 7 is it.
		{"baseline side", "zero\n" + res, 6, true, "zero\none\nTWO\nthree\nfour\nfive\nsix\nseven\n", ""},
		{"baseline side, a line Claude left", res, 4, true, "", "no change of Claude's"},
		{"baseline side, the user's change", "one\nTWO!\nthree\nfour\nfive\nSIX\nsix and a half\nseven\n", 2, true, "", "line 2 changed after Claude's edit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := lines(tt.cur)
			e, err := revertHunk(lines(base), lines(res), cur, tt.line-1, tt.onBase)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := append(append(append([]string{}, cur[:e.Start]...), e.Lines...), cur[e.End:]...)
			if strings.Join(got, "\n")+"\n" != tt.want {
				t.Fatalf("after the edit %+v: %q, want %q", e, strings.Join(got, "\n")+"\n", tt.want)
			}
		})
	}
}

func TestRevertAll(t *testing.T) {
	base := "a\nb\nc\nd\n"
	res := "A\nb\nc\nD\nE\n"
	tests := []struct {
		name, cur, want, wantErr string
	}{
		{"untouched", res, base, ""},
		{"user line kept", "A\nb\nmine\nc\nD\nE\n", "a\nb\nmine\nc\nd\n", ""},
		{"conflict refused", "A\nb\nc\nD!\nE\n", "", "changed after Claude's edit"},
		{"a hunk reverted already is skipped", "a\nb\nc\nD\nE\n", base, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := lines(tt.cur)
			edits, err := revertAll(lines(base), lines(res), cur)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range edits {
				cur = append(append(append([]string{}, cur[:e.Start]...), e.Lines...), cur[e.End:]...)
			}
			if got := strings.Join(cur, "\n") + "\n"; got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Texts that differ throughout are one hunk past maxEdits (the search
// stays bounded); a small change in a large file stays exact.
func TestDiffLinesLarge(t *testing.T) {
	var a, b, c []string
	for i := 0; i < 3000; i++ {
		a = append(a, "a"+strconv.Itoa(i))
		b = append(b, "b"+strconv.Itoa(i))
		c = append(c, "a"+strconv.Itoa(i))
	}
	if got := diffLines(a, b); !reflect.DeepEqual(got, []hunk{{0, 3000, 0, 3000}}) {
		t.Fatalf("all different: %v", got)
	}
	c[100], c[2900] = "changed", "changed too"
	if got := diffLines(a, c); !reflect.DeepEqual(got, []hunk{{100, 101, 100, 101}, {2900, 2901, 2900, 2901}}) {
		t.Fatalf("two lines changed: %v", got)
	}
}

// The search's memory follows the edits, not the files: a change at
// each end of two large files (the whole file between them is the
// middle) allocates little more than the hunks. Before, one int per line
// of both files: 16 MB for this pair, for each of the list's and a
// revert's diffs.
func TestDiffLinesMemory(t *testing.T) {
	var a, b []string
	for i := 0; i < 500000; i++ {
		a = append(a, "line "+strconv.Itoa(i))
	}
	b = append(b, a...)
	b[0], b[len(b)-1] = "first", "last"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	hs := diffLines(a, b)
	runtime.ReadMemStats(&after)
	if !reflect.DeepEqual(hs, []hunk{{0, 1, 0, 1}, {499999, 500000, 499999, 500000}}) {
		t.Fatalf("hunks %v", hs)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("diffLines allocated %d bytes for two edits", n)
	}
}

// splice applied in order (edits come last first).
func applyEdits(cur []string, es []Edit) []string {
	for _, e := range es {
		cur = splice(cur, e)
	}
	return cur
}

// Reverting hunk by hunk (gr, on the file's side or the baseline's) ends
// at the baseline, each press bringing the text closer to it, whatever
// the texts' repeated lines. Before, a hunk put back next to another was
// lined up elsewhere by the next diff and put back again: a line more at
// each press (base "a c c b", Claude's "c b c": gr at the top gave
// "a c b c", "a c c b c", "a c c c b c", ...).
func TestRevertHunkByHunk(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	cases := [][2][]string{{lines("a\nc\nc\nb\n"), lines("c\nb\nc\n")}}
	for i := 0; i < 5000; i++ {
		base, res := make([]string, r.Intn(10)), make([]string, r.Intn(10))
		for j := range base {
			base[j] = string(rune('a' + r.Intn(3)))
		}
		for j := range res {
			res[j] = string(rune('a' + r.Intn(3)))
		}
		cases = append(cases, [2][]string{base, res})
	}
	for _, tc := range cases {
		base, res := tc[0], tc[1]
		for _, onBase := range []bool{false, true} {
			cur := append([]string{}, res...)
			for presses := 0; ; presses++ {
				if presses > len(base)+len(res) {
					t.Fatalf("base %q, Claude's %q (baseline side %v): still reverting after %d presses: %q", base, res, onBase, presses, cur)
				}
				var e Edit
				var err error
				n := len(cur)
				if onBase {
					n = len(base)
				}
				conflict := false
				for l := 0; l <= n; l++ {
					if e, err = revertHunk(base, res, cur, l, onBase); err == nil {
						break
					}
					conflict = conflict || err != errNoHunk
				}
				if err != nil {
					// Nothing more to revert: the baseline, or a place
					// refused (hunks put back one by one can look like
					// the user's change: refused, never guessed).
					if !conflict && !reflect.DeepEqual(cur, base) && !(len(cur) == 0 && len(base) == 0) {
						t.Fatalf("base %q, Claude's %q (baseline side %v): stopped at %q", base, res, onBase, cur)
					}
					break
				}
				next := splice(cur, e)
				if distance(base, next) >= distance(base, cur) {
					t.Fatalf("base %q, Claude's %q: the press %+v took %q to %q, no closer to the baseline", base, res, e, cur, next)
				}
				cur = next
			}
		}
	}
}

// A line the user added since Claude's change is never lost by a
// whole-file revert: refused, or the baseline with that line.
func TestRevertAllKeepsTheUsersLine(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 5000; i++ {
		base, res := make([]string, r.Intn(10)), make([]string, r.Intn(10))
		for j := range base {
			base[j] = string(rune('a' + r.Intn(3)))
		}
		for j := range res {
			res[j] = string(rune('a' + r.Intn(3)))
		}
		p := r.Intn(len(res) + 1)
		cur := append(append(append([]string{}, res[:p]...), "MINE"), res[p:]...)
		es, err := revertAll(base, res, cur)
		if err != nil {
			continue
		}
		got := applyEdits(cur, es)
		var rest []string
		mine := 0
		for _, l := range got {
			if l == "MINE" {
				mine++
			} else {
				rest = append(rest, l)
			}
		}
		if mine != 1 || (!reflect.DeepEqual(rest, base) && len(rest)+len(base) > 0) {
			t.Fatalf("base %q, Claude's %q, now %q: reverted to %q", base, res, cur, got)
		}
	}
}
