package review

// hunk is one difference between two line slices: a[A0:A1] became
// b[B0:B1]. An empty range is an insertion or deletion point.
type hunk struct {
	A0, A1, B0, B1 int
}

// diffLines is Myers' O(ND) line diff of a and b, as hunks in order.
func diffLines(a, b []string) []hunk {
	// Common prefix and suffix first: most edits are small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var out []hunk
	for _, h := range myers(ma, mb) {
		out = append(out, hunk{h.A0 + pre, h.A1 + pre, h.B0 + pre, h.B1 + pre})
	}
	return out
}

// maxEdits bounds Myers' search: beyond this many inserted and deleted
// lines the texts differ throughout, and the middle (between the common
// start and end) is one hunk. The walk keeps O(maxEdits²) numbers.
const maxEdits = 1000

// myers diffs a and b with Myers' algorithm, keeping each round's
// frontier to walk the edit script back.
func myers(a, b []string) []hunk {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil
	}
	if n == 0 || m == 0 {
		return []hunk{{0, n, 0, m}}
	}
	limit := min(n+m, maxEdits)
	// Diagonals k stay in [-limit, limit]: v holds those, not n+m of them
	// (two files of a million lines changed at both ends are a middle of
	// two million lines, and a few edits).
	off := limit + 1
	v := make([]int, 2*off+2)
	// trace[d] is v[off-d-1 .. off+d+1] as it was before round d.
	var trace [][]int
	found := false
	for d := 0; d <= limit && !found; d++ {
		lo, hi := max(off-d-1, 0), min(off+d+2, len(v))
		trace = append(trace, append([]int(nil), v[lo:hi]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return []hunk{{0, n, 0, m}}
	}
	// Walk back from (n, m): round d's frontier names the point each
	// snake started from.
	type edit struct {
		del  bool // a[x] deleted; else b[y] inserted before a[x]
		x, y int
	}
	var edits []edit
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		lo := max(off-d-1, 0)
		at := func(k int) int { return trace[d][off+k-lo] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
		}
		if d > 0 {
			edits = append(edits, edit{del: x != px, x: px, y: py})
		}
		x, y = px, py
	}
	// edits are in reverse order; merge adjacent ones into hunks.
	var out []hunk
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		h := hunk{e.x, e.x, e.y, e.y}
		if e.del {
			h.A1++
		} else {
			h.B1++
		}
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.A1 == h.A0 && last.B1 == h.B0 {
				last.A1, last.B1 = h.A1, h.B1
				continue
			}
		}
		out = append(out, h)
	}
	return out
}
