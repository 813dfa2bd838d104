package selection

import (
	"encoding/json"
	"testing"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// BenchmarkSelCoalescer measures the per-observation cost of the selection
// coalescer (run with -benchmem): a cursor moving through a file (each
// observation sent), the same state pulled again (dropped as a duplicate),
// and an observation older than the last (dropped as stale). All three must
// stay allocation-free: they run for every pull and pushed update.
func BenchmarkSelCoalescer(b *testing.B) {
	const path = "/home/user/project/internal/server/handler.go"
	b.Run("moving", func(b *testing.B) {
		var c selCoalescer
		st := nvimbridge.SelectionState{Kind: "selection", Path: path, Empty: true}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			st.Seq = int64(i + 1)
			st.Start.Line, st.End.Line = i%500, i%500
			if _, send := c.observe(&st); !send && i > 0 {
				b.Fatal("a moved cursor was not sent")
			}
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		var c selCoalescer
		st := nvimbridge.SelectionState{Kind: "selection", Path: path, Text: "func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n", Start: nvimbridge.SelectionPos{Line: 41}, End: nvimbridge.SelectionPos{Line: 42}}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			st.Seq = int64(i + 1)
			if _, send := c.observe(&st); send != (i == 0) {
				b.Fatal("duplicate sent")
			}
		}
	})
	b.Run("stale", func(b *testing.B) {
		var c selCoalescer
		st := nvimbridge.SelectionState{Seq: 1 << 40, Kind: "selection", Path: path}
		c.observe(&st)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			st.Seq = int64(i + 1)
			if _, send := c.observe(&st); send {
				b.Fatal("stale sent")
			}
		}
	})
}

// BenchmarkSelUpdateDecode is the cost of decoding one selection_update
// from Lua (a 3-line selection), the host's share of a pushed selection.
func BenchmarkSelUpdateDecode(b *testing.B) {
	raw := []byte(`{"state":{"seq":42,"kind":"selection","path":"/home/user/project/internal/server/handler.go","text":"func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\tctx := r.Context()\n\th.mu.Lock()\n","start":{"line":41,"character":0},"end":{"line":44,"character":0},"empty":false}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for i := 0; i < b.N; i++ {
		var p struct {
			State nvimbridge.SelectionState `json:"state"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			b.Fatal(err)
		}
	}
}
