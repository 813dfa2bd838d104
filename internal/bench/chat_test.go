//go:build linux

package main

import "testing"

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{20: "20", 200: "200", 2000: "2,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// The screen applies redraw events as a UI does and notes when each marker
// first showed.
func TestScreen(t *testing.T) {
	s := newScreen(10, 3)
	cell := func(text string, rest ...any) []any { return append([]any{text}, rest...) }
	s.redraw(
		[]any{"grid_line",
			[]any{int64(1), int64(0), int64(0), []any{cell("w"), cell("1", int64(1)), cell(" ", int64(1), int64(8))}, false},
			[]any{int64(1), int64(1), int64(2), []any{cell("w"), cell("2"), cell("2")}, false}},
		[]any{"flush", []any{}},
	)
	if s.seenAt(1) == 0 || s.seenAt(22) == 0 || s.seenAt(2) != 0 {
		t.Fatalf("seen: w1 %d, w22 %d, w2 %d", s.seenAt(1), s.seenAt(22), s.seenAt(2))
	}
	rows := s.textRows()
	if rows[0] != "w1        " || rows[1] != "  w22     " || rows[2] != "          " {
		t.Fatalf("rows %q", rows)
	}
	// Scroll the whole grid up one row: row 1 moves to row 0.
	s.redraw([]any{"grid_scroll", []any{int64(1), int64(0), int64(3), int64(0), int64(10), int64(1), int64(0)}}, []any{"flush", []any{}})
	if rows := s.textRows(); rows[0] != "  w22     " {
		t.Errorf("after scroll: %q", rows)
	}
	if got := region([]string{"abcdef", "ghijkl"}, 0, 2, 2, 3); got != "cdeijk" {
		t.Errorf("region = %q", got)
	}
	done := s.wait(func(rows []string) bool { return rows[2] == "xx        " })
	s.redraw([]any{"grid_line", []any{int64(1), int64(2), int64(0), []any{cell("x", int64(1), int64(2))}, false}}, []any{"flush", []any{}})
	select {
	case <-done:
	default:
		t.Error("the waiter was not told at the flush that satisfied it")
	}
}

// A marker that never showed is timed by the next one shown; markers after
// which nothing showed are missing.
func TestScreenLatencies(t *testing.T) {
	s := newScreen(1, 1)
	s.seen[100] = 10_000 // µs
	s.seen[102] = 20_000
	lat, scrolled, missing := screenLatencies(s, 100, []int64{9_000, 9_500, 19_000, 19_500})
	if scrolled != 1 || missing != 1 || len(lat) != 3 || lat[0] != 1 || lat[1] != 10.5 || lat[2] != 1 {
		t.Errorf("lat %v, scrolled %d, missing %d", lat, scrolled, missing)
	}
}
