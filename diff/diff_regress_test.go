package diff

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/verdict"
)

// diffComponent is the harness's diff review.
func (h *diffHarness) diffComponent(*testing.T) *Reviews { return h.rev }

// The user accepts a diff the host has just stopped waiting for (the CLI
// cancelled it, or closeAllDiffTabs answered it, before Lua heard): the
// user is told nothing will be written instead of seeing it accepted.
func TestDiffDecisionAfterHostEnded(t *testing.T) {
	h := startDiffHarness(t, "")
	cli := h.connect(t, 4242)
	h.run(t, []*diffCLI{cli}, diffLines(
		"-> "+diffOpenCall(1, "$FILE", diffTab, "changed\n"),
		`?? #require("claude.diff").pending() == 1`,
	))
	// What closeAllDiffTabs does, minus telling Lua, once the review waits
	// with the windows open: ended earlier, the review closes them itself
	// (TestOpenDiffEndedWhileOpening), and Lua hears.
	waitShown(t, h.diffComponent(t), 1)
	for _, s := range h.diffComponent(t).take(func(*diffSession) bool { return true }) {
		s.resolve(verdict.Verdict{Text: verdict.Rejected})
	}
	h.run(t, []*diffCLI{cli}, diffLines(
		"<- "+diffTextResult(1, "DIFF_REJECTED"),
		`!! vim.cmd("write")`,
		`?? #require("claude.diff").pending() == 0 and #_G.notes > 0 and _G.notes[#_G.notes].msg:find("no longer waiting for this diff; nothing was written", 1, true)`,
		"..",
	))
	if b, _ := os.ReadFile(filepath.Join(h.dir, "main.txt")); string(b) != diffMainText {
		t.Fatalf("main.txt was written: %q", b)
	}
}

// waitShown waits until n of c's diffs are shown: open in Neovim, with
// their review waiting for the answer.
func waitShown(t *testing.T, c *Reviews, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		k := 0
		for _, s := range c.open {
			if s.shown {
				k++
			}
		}
		c.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d diffs shown after 30 s", k, n)
		}
	}
}

// openDiffGate is an Editor whose OpenDiff waits at a gate: the diff is
// still opening when the CLI's next message arrives.
type openDiffGate struct {
	Editor
	entered chan struct{}
	release chan struct{}
	opened  chan struct{} // closed once Neovim has opened the diff
}

func (g *openDiffGate) OpenDiff(ctx context.Context, req nvimbridge.DiffRequest) (nvimbridge.DiffView, error) {
	g.entered <- struct{}{}
	<-g.release
	// Neovim opens the windows whatever happened meanwhile.
	defer close(g.opened)
	return g.Editor.OpenDiff(context.WithoutCancel(ctx), req)
}

// close_tab, closeAllDiffTabs or a cancel arriving while Neovim is still
// opening the diff: the windows close once open, not never.
func TestOpenDiffEndedWhileOpening(t *testing.T) {
	tests := []struct {
		name  string
		end   string // what the CLI sends while the diff opens
		ended string // its answer (none for a notification)
		diff  string // the answer openDiff then gets ("" for none)
	}{
		{"close_tab", diffCloseTabCall(2, diffTab), diffTextResult(2, "TAB_CLOSED"), diffTextResult(1, "TAB_CLOSED")},
		{"closeAllDiffTabs", diffToolCall(2, "closeAllDiffTabs", map[string]string{}), diffTextResult(2, "CLOSED_0_DIFF_TABS"), diffTextResult(1, "DIFF_REJECTED")},
		{"cancel", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user interrupted"}}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := &openDiffGate{entered: make(chan struct{}, 1), release: make(chan struct{}), opened: make(chan struct{})}
			h := startDiffHarnessWith(t, "", func(e Editor) Editor { gate.Editor = e; return gate })
			released := false
			t.Cleanup(func() {
				if !released {
					close(gate.release)
				}
			})
			cli := h.connect(t, 4242)
			cli.Send(t, diffOpenCall(1, filepath.Join(h.dir, "main.txt"), diffTab, "changed\n"))
			select {
			case <-gate.entered:
			case <-time.After(20 * time.Second):
				t.Fatal("OpenDiff was not called")
			}
			cli.Send(t, tt.end)
			if tt.ended != "" {
				if got := cli.next(t); got != tt.ended {
					t.Fatalf("got %s\nwant %s", got, tt.ended)
				}
			}
			released = true
			close(gate.release)
			select {
			case <-gate.opened:
			case <-time.After(20 * time.Second):
				t.Fatal("OpenDiff did not return")
			}
			if tt.diff != "" {
				if got := cli.next(t); got != tt.diff {
					t.Fatalf("got %s\nwant %s", got, tt.diff)
				}
			}
			h.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 0 and #vim.api.nvim_list_wins() == 2`,
				`return { pending = require("claude.diff").pending(), wins = #vim.api.nvim_list_wins() }`, "the diff windows to close")
			cli.quiet(t)
			if n := h.diffWindows(t); n != 0 {
				t.Fatalf("%d diff windows left", n)
			}
			var names []string
			h.Eval(t, `return vim.tbl_map(function(b) return vim.fn.bufname(b) end, vim.api.nvim_list_bufs())`, &names)
			for _, name := range names {
				if strings.Contains(name, "Claude Code") {
					t.Fatalf("proposal buffer left behind: %v", names)
				}
			}
		})
	}
}
