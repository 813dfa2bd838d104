package nvimbridge_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// Regression tests for the review of diff review (defects 1, 2, 3, 6, 7,
// 8, 9). Each fails on the code before its fix.

// A borrowed window hides the buffer it showed, never unloads it: with
// 'nohidden' (0.7's default) :buffer! unloaded it and lost its undo history.
func TestDiffBorrowKeepsUndo(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{files: map[string]string{"other.txt": "other\n"}})
	e.Exec(t, `vim.o.hidden = false
vim.cmd("edit other.txt")
vim.api.nvim_buf_set_lines(0, 0, 1, false, { "other, edited" })
vim.cmd("write")`)
	var other int
	e.Eval(t, `return vim.api.nvim_get_current_buf()`, &other)
	_, v := e.open(t, e.file, strings.Replace(diffText, "one", "ONE", 1))
	var st struct {
		Loaded bool `json:"loaded"`
		Seq    int  `json:"seq"`
	}
	state := `local b = ... return { loaded = vim.api.nvim_buf_is_loaded(b),
  seq = vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_call(b, function() return vim.fn.undotree().seq_last end) or 0 }`
	e.Eval(t, state, &st, other)
	if !st.Loaded || st.Seq == 0 {
		t.Fatalf("while the diff borrows its window, other.txt: %+v (want loaded, with its undo history)", st)
	}
	e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
	e.decision(t)
	e.waitClosed(t, v)
	e.Eval(t, state, &st, other)
	if !st.Loaded || st.Seq == 0 {
		t.Fatalf("after the diff, other.txt: %+v (want loaded, with its undo history)", st)
	}
	var shown int
	e.Eval(t, `return vim.api.nvim_win_get_buf(vim.fn.win_getid(1))`, &shown)
	if shown != other {
		t.Fatalf("window 1 shows buffer %d, want other.txt (%d) back", shown, other)
	}
}

// :e! in a proposal puts Claude's text back byte for byte: final newline
// (or none) and line endings included.
func TestDiffReloadProposalKeepsBytes(t *testing.T) {
	for _, contents := range []string{"a\nb", "x\r\ny", "p\r\nq\r\n", "no newline at all"} {
		t.Run(strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(contents), func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			_, v := e.open(t, e.file, contents)
			e.Exec(t, `local buf = ...
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "edited" })
vim.cmd("set eol fileformat=unix")
vim.cmd("edit!")`, v.ProposalBuf)
			var modified bool
			e.Eval(t, `return vim.bo[...].modified`, &modified, v.ProposalBuf)
			if modified {
				t.Fatal(":e! left the proposal modified")
			}
			e.Exec(t, `vim.cmd("write")`)
			if d := e.decision(t); d.Decision != "accept" || d.Contents == nil || *d.Contents != contents {
				got := "<nil>"
				if d.Contents != nil {
					got = *d.Contents
				}
				t.Fatalf("after :e! and :w: %s %q, want accept %q", d.Decision, got, contents)
			}
			e.waitClosed(t, v)
		})
	}
}

// A decision for a diff the host no longer waits for (the CLI cancelled it,
// closeAllDiffTabs ended it before Lua heard) is not reported as accepted:
// the user is told nothing will be written.
func TestDiffDecisionNoLongerPending(t *testing.T) {
	for _, kind := range []string{"accept", "reject"} {
		t.Run(kind, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			id, v := e.open(t, e.file, "changed\n")
			e.gone.Store(id, true)
			cmd := map[string]string{"accept": "write", "reject": "ClaudeDiffReject"}[kind]
			e.Exec(t, `vim.cmd(...)`, cmd)
			if d := e.decision(t); d.Decision != kind {
				t.Fatalf("decision %+v", d)
			}
			e.waitClosed(t, v)
			var events []struct {
				Ev   string         `json:"ev"`
				Data map[string]any `json:"data"`
			}
			e.WaitFor(t, 5*time.Second, `#_G.events == 2`, `return _G.events`, "two events")
			e.Eval(t, `return _G.events`, &events)
			var nv8 int
			e.Eval(t, `return vim.fn.has("nvim-0.8")`, &nv8) // (0.7's User events carry no data)
			if last := events[1]; last.Ev != "ClaudeDiffClosed" || (nv8 == 1 && last.Data["outcome"] != "closed") {
				t.Fatalf("events %+v: want ClaudeDiffClosed with outcome closed", events)
			}
			warned := strings.Contains(e.notes(t), "no longer waiting for this diff; nothing was written")
			if warned != (kind == "accept") {
				t.Fatalf("notes %q: the warning is for an accept only", e.notes(t))
			}
		})
	}
}

// Two diffs of one file share one local 'autoread' on its buffer; closing
// them in either order gives the user's value back.
func TestDiffSameFileAutoread(t *testing.T) {
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		t.Run(map[int]string{0: "first closes first", 1: "second closes first"}[order[0]], func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			read := `return vim.fn.getbufvar(1, "&l:autoread")`
			var before, after any
			e.Eval(t, read, &before)
			id1, v1 := e.open(t, e.file, strings.Replace(diffText, "one", "ONE", 1))
			id2, v2 := e.open(t, e.file, strings.Replace(diffText, "two", "TWO", 1))
			ids := []string{id1, id2}
			for _, i := range order {
				if n, err := e.b.CloseDiffs(context.Background(), []string{ids[i]}, "closed"); err != nil || n != 1 {
					t.Fatalf("CloseDiffs(%s) = %d, %v", ids[i], n, err)
				}
			}
			e.waitClosed(t, v1)
			e.waitClosed(t, v2)
			e.Eval(t, read, &after)
			if after != before {
				t.Fatalf("local 'autoread' of main.txt: %v after the diffs, %v before", after, before)
			}
		})
	}
}

// In the command-line window (q:) nothing can open or close: opening is a
// plain error that leaves nothing behind, and the host's close waits for
// the command-line window to close.
func TestDiffCmdwin(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{files: map[string]string{"other.txt": "other\n"}})
	id, v := e.open(t, e.file, "changed\n")
	e.Exec(t, `vim.api.nvim_input("q:")`)
	e.WaitFor(t, 10*time.Second, `vim.fn.getcmdwintype() ~= ""`, `return vim.fn.getcmdwintype()`, "the command-line window")
	other := strings.Replace(e.file, "main.txt", "other.txt", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := e.b.OpenDiff(ctx, nvimbridge.DiffRequest{ID: "o1", TabName: "✻ [Claude Code] other.txt (o1) ⧉",
		OldPath: other, NewPath: other, Contents: "x\n"})
	if err == nil || !strings.Contains(err.Error(), "close the command-line window (q:)") || strings.Contains(err.Error(), "stack traceback") {
		t.Fatalf("OpenDiff in q: = %v, want a plain error about the command-line window", err)
	}
	var left int
	e.Eval(t, `return vim.fn.bufnr(...)`, &left, other)
	if left != -1 {
		t.Fatalf("buffer %d for other.txt left behind", left)
	}
	// The host ends the open diff meanwhile: it closes once q: is gone.
	if n, err := e.b.CloseDiffs(ctx, []string{id}, "closed"); err != nil || n != 1 {
		t.Fatalf("CloseDiffs in q: = %d, %v; want 1, nil", n, err)
	}
	e.Exec(t, `vim.api.nvim_input("<Esc>:quit<CR>")`)
	e.WaitFor(t, 10*time.Second, `vim.fn.getcmdwintype() == ""`, `return vim.fn.getcmdwintype()`, "q: to close")
	e.waitClosed(t, v)
	e.noDecision(t)
	// and diffs open again
	_, v2 := e.open(t, other, "x\n")
	e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
	e.decision(t)
	e.waitClosed(t, v2)
}

// :wall, :wqa and autosave plugins write a modified proposal from another
// window: that is not the user accepting it.
func TestDiffWriteFromElsewhere(t *testing.T) {
	cases := []struct{ name, lua string }{
		{":wall from the current side", `vim.api.nvim_set_current_win(vim.fn.win_findbuf(1)[1]) pcall(vim.cmd, "wall")`},
		{":wall from the terminal", `vim.api.nvim_set_current_win(vim.fn.win_findbuf(require("claude.terminal").info().bufnr)[1]) pcall(vim.cmd, "wall")`},
		{"an autosave plugin", `vim.api.nvim_set_current_win(vim.fn.win_findbuf(1)[1]) vim.api.nvim_buf_call(..., function() pcall(vim.cmd, "silent! write") end)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			proposal := strings.Replace(diffText, "one", "ONE", 1)
			_, v := e.open(t, e.file, proposal)
			e.Exec(t, `vim.api.nvim_buf_set_lines(..., 1, 2, false, { "TWO, by the user" })`, v.ProposalBuf)
			e.Exec(t, c.lua, v.ProposalBuf)
			e.noDecision(t)
			var modified bool
			e.Eval(t, `return vim.bo[...].modified`, &modified, v.ProposalBuf)
			if !modified {
				t.Fatal("the proposal is no longer modified: :wqa would quit and lose it")
			}
			if !strings.Contains(e.notes(t), "was not accepted by a write from another window") {
				t.Fatalf("notes %q: the user must learn why nothing happened", e.notes(t))
			}
			// :w in the proposal still accepts, edits included.
			e.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, v.ProposalBuf)
			want := strings.Replace(proposal, "two", "TWO, by the user", 1)
			if d := e.decision(t); d.Decision != "accept" || *d.Contents != want {
				t.Fatalf("decision %+v", d)
			}
			e.waitClosed(t, v)
		})
	}
}

// The CLI's write is seen in two steps (an in-place write caught half
// way): the buffer ends up with the whole file, not the half.
func TestDiffReloadAfterPartialWrite(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	proposal := strings.Replace(diffText, "twelve", "TWELVE", 1)
	_, v := e.open(t, e.file, proposal)
	e.Exec(t, `vim.cmd("write")`)
	e.decision(t)
	e.waitClosed(t, v)
	half := proposal[:len(proposal)/2]
	if err := os.WriteFile(e.file, []byte(half), 0o644); err != nil {
		t.Fatal(err)
	}
	// Let the watcher see the half-written file (not an assertion: the
	// test passes either way once the fix is in; before it, a watcher that
	// saw the half stopped there).
	time.Sleep(400 * time.Millisecond)
	if err := os.WriteFile(e.file, []byte(proposal), 0o644); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(t, 10*time.Second, `table.concat(vim.api.nvim_buf_get_lines(1, 0, -1, false), "\n") .. "\n" == `+luaQuote(proposal),
		`return vim.api.nvim_buf_get_lines(1, 0, -1, false)`, "the buffer to show the whole file")
	var modified bool
	e.Eval(t, `return vim.bo[1].modified`, &modified)
	if modified {
		t.Fatal("main.txt is modified after the reloads")
	}
}

// luaQuote is s as a Lua string literal (JSON's escapes are Lua's for this
// text).
func luaQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
