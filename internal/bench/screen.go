//go:build linux

package main

import (
	"strings"
	"sync"

	"github.com/nvim-claude/nvim-claude/internal/bench/chatwire"
)

// screen is what a UI attached to Neovim (ext_linegrid, one grid) shows:
// it applies the redraw events as a terminal UI would and, at each
// "flush" (the moment a real UI paints), notes the time of the first
// flush at which each marker word (chatwire.Markers) was on screen, and
// offers the rows to waiters.
//
// The time noted is when the redraw notification reached the bench's
// go-client handler (CLOCK_MONOTONIC µs): Neovim has drawn and sent it,
// the UI has received and decoded it — what a terminal UI would paint next.
type screen struct {
	mu      sync.Mutex
	rows    [][]string // cells
	seen    map[int]int64
	flushes int
	// waiters are checked at every flush (under mu) and dropped when
	// they return true.
	waiters []func(rows []string, at int64) bool
}

func newScreen(cols, rows int) *screen {
	s := &screen{seen: map[int]int64{}}
	s.resize(cols, rows)
	return s
}

func (s *screen) resize(cols, rows int) {
	s.rows = make([][]string, rows)
	for i := range s.rows {
		s.rows[i] = blank(cols)
	}
}

func blank(n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = " "
	}
	return r
}

// redraw is the go-client handler of Neovim's "redraw" notification.
func (s *screen) redraw(updates ...[]any) {
	at := chatwire.Mono()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range updates {
		if len(u) == 0 {
			continue
		}
		name, _ := u[0].(string)
		for _, a := range u[1:] {
			args, _ := a.([]any)
			switch name {
			case "grid_resize":
				if len(args) >= 3 {
					s.resize(toInt(args[1]), toInt(args[2]))
				}
			case "grid_clear":
				for _, r := range s.rows {
					for i := range r {
						r[i] = " "
					}
				}
			case "grid_line":
				s.line(args)
			case "grid_scroll":
				s.scroll(args)
			case "flush":
				s.flush(at)
			}
		}
	}
}

// line applies grid_line [grid, row, col_start, cells, wrap]; a cell is
// [text, hl_id?, repeat?].
func (s *screen) line(args []any) {
	if len(args) < 4 {
		return
	}
	row, col := toInt(args[1]), toInt(args[2])
	if row < 0 || row >= len(s.rows) {
		return
	}
	r := s.rows[row]
	cells, _ := args[3].([]any)
	for _, c := range cells {
		cell, _ := c.([]any)
		if len(cell) == 0 {
			continue
		}
		text, _ := cell[0].(string)
		n := 1
		if len(cell) >= 3 {
			n = toInt(cell[2])
		}
		for ; n > 0 && col < len(r); n-- {
			r[col] = text
			col++
		}
	}
}

// scroll applies grid_scroll [grid, top, bot, left, right, rows, cols]:
// the region's lines move up by rows (down when negative).
func (s *screen) scroll(args []any) {
	if len(args) < 6 {
		return
	}
	top, bot, left, right, n := toInt(args[1]), toInt(args[2]), toInt(args[3]), toInt(args[4]), toInt(args[5])
	if top < 0 || bot > len(s.rows) || left < 0 {
		return
	}
	if n > 0 {
		for r := top; r+n < bot; r++ {
			copy(s.rows[r][left:right], s.rows[r+n][left:right])
		}
	} else if n < 0 {
		for r := bot - 1; r+n >= top; r-- {
			copy(s.rows[r][left:right], s.rows[r+n][left:right])
		}
	}
}

func (s *screen) flush(at int64) {
	s.flushes++
	rows := s.textRows()
	for _, r := range rows {
		chatwire.Markers(r, func(n int) {
			if _, ok := s.seen[n]; !ok {
				s.seen[n] = at
			}
		})
	}
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if !w(rows, at) {
			kept = append(kept, w)
		}
	}
	s.waiters = kept
}

func (s *screen) textRows() []string {
	out := make([]string, len(s.rows))
	for i, r := range s.rows {
		out[i] = strings.Join(r, "")
	}
	return out
}

// region is the text of rows [row, row+h) between columns [col, col+w),
// joined: a window's lines, wrapped.
func region(rows []string, row, col, h, w int) string {
	var b strings.Builder
	for r := row; r < row+h && r < len(rows); r++ {
		cells := []rune(rows[r])
		if col >= len(cells) {
			continue
		}
		end := min(col+w, len(cells))
		b.WriteString(string(cells[col:end]))
	}
	return b.String()
}

// seenAt is when marker n was first on screen (0: not yet).
func (s *screen) seenAt(n int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[n]
}

// wait returns a channel that gets the flush time once cond holds at a
// flush (checked from the next flush on).
func (s *screen) wait(cond func(rows []string) bool) <-chan int64 {
	ch := make(chan int64, 1)
	s.mu.Lock()
	s.waiters = append(s.waiters, func(rows []string, at int64) bool {
		if !cond(rows) {
			return false
		}
		ch <- at
		return true
	})
	s.mu.Unlock()
	return ch
}

func toInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case uint64:
		return int(x)
	case int:
		return x
	case int8:
		return int(x)
	case int16:
		return int(x)
	case int32:
		return int(x)
	case uint8:
		return int(x)
	case uint16:
		return int(x)
	case uint32:
		return int(x)
	case float64:
		return int(x)
	}
	return 0
}
