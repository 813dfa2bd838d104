//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// reviewItem is one item of require("claude.review").items().
type reviewItem struct {
	Session  string `json:"session"`
	Label    string `json:"label"`
	Path     string `json:"path"`
	Status   string `json:"status"`
	Added    int    `json:"added"`
	Removed  int    `json:"removed"`
	Reviewed bool   `json:"reviewed"`
	Line     int    `json:"line"`
	Refused  string `json:"refused"`
}

// reviewList runs :ClaudeReview (args) and waits until the list shows n
// files.
func reviewList(t *testing.T, s *editor, args string, n int) map[string]reviewItem {
	t.Helper()
	var before int
	s.Eval(t, `return require("claude.review")._listed()`, &before)
	s.Exec(t, `vim.cmd("ClaudeReview `+args+`")`)
	s.WaitFor(t, 30*time.Second, `require("claude.review")._listed() > `+diffItoa(before)+` and #require("claude.review").items() == `+diffItoa(n)+` and #vim.fn.getqflist() == `+diffItoa(n),
		`return { items = require("claude.review").items(), qf = vim.fn.getqflist({ title = 0 }) }`, "the review list")
	var items []reviewItem
	s.Eval(t, `return require("claude.review").items()`, &items)
	out := map[string]reviewItem{}
	for _, it := range items {
		out[filepath.Base(it.Path)] = it
	}
	return out
}

// In acceptEdits mode the CLI writes without asking the IDE: a turn that
// edits two files (one in two places) and creates a third is listed by
// :ClaudeReview with exactly those three and their counts; reverting one
// hunk puts back exactly its lines; the next turn starts a new list.
func TestCLIReviewQueueAcceptEdits(t *testing.T) {
	aText := "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	bText := "alpha\nbeta\n"
	// No panel: the CLI's terminal keeps its size (a redraw on a resize
	// while a prompt is typed can garble it); the panel has its own test,
	// TestReviewQueuePanelAndThreeWay.
	s := startSession(t, sessionOpts{permissionMode: "acceptEdits", files: map[string]string{"a.txt": aText, "b.txt": bText},
		extra: `, review = { panel_height = 0 }`})
	a, b, c := filepath.Join(s.project, "a.txt"), filepath.Join(s.project, "b.txt"), filepath.Join(s.project, "c.txt")
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": a})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": a, "old_string": "two", "new_string": "TWO"})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": a, "old_string": "six\n", "new_string": "SIX\nsix and a half\n"})),
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": b})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": b, "old_string": "beta", "new_string": "BETA"})),
		fakeapi.Reply(fakeapi.ToolUse("Write", map[string]any{"file_path": c, "content": "new\nfile\n"})),
		fakeapi.Reply(fakeapi.Text("All three done.")),
	)
	s.submit(t, "change the files")
	s.waitScreen(t, 60*time.Second, "All three done.")
	// The statusline count and the event come without asking.
	s.WaitFor(t, 30*time.Second, `require("claude.review").statusline() == "3 to review"`,
		`return require("claude.review").statusline()`, "the statusline count")

	items := reviewList(t, s.editor, "", 3)
	var names []string
	for n := range items {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "a.txt,b.txt,c.txt" {
		t.Fatalf("listed %v, want a.txt, b.txt, c.txt", names)
	}
	for _, tt := range []struct {
		name           string
		status         string
		added, removed int
	}{
		{"a.txt", "modified", 3, 2},
		{"b.txt", "modified", 1, 1},
		{"c.txt", "new", 2, 0},
	} {
		it := items[tt.name]
		if it.Status != tt.status || it.Added != tt.added || it.Removed != tt.removed || it.Reviewed || !strings.HasPrefix(it.Label, "terminal ") {
			t.Errorf("%s: %+v, want %s +%d -%d, not reviewed, named by its terminal session", tt.name, it, tt.status, tt.added, tt.removed)
		}
	}

	// The diff of a.txt against its baseline; revert the second hunk only.
	s.Exec(t, `local r = require("claude.review")
for _, it in ipairs(r.items()) do if it.path == ... then r.open_diff(it) end end`, a)
	var diffWins int
	s.Eval(t, `local n = 0 for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do if vim.wo[w].diff then n = n + 1 end end return n`, &diffWins)
	if diffWins != 2 {
		t.Fatalf("%d diff windows in the review tab, want 2", diffWins)
	}
	s.Exec(t, `vim.api.nvim_win_set_cursor(0, { 7, 0 }) vim.cmd("normal gr")`)
	want := "one\nTWO\nthree\nfour\nfive\nsix\nseven\n"
	var got string
	s.Eval(t, `return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n"`, &got)
	if got != want {
		t.Fatalf("after reverting the second hunk the buffer is %q, want %q", got, want)
	}
	// Undoable, as a buffer change is.
	s.Exec(t, `vim.cmd("undo")`)
	s.Eval(t, `return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n"`, &got)
	if got != "one\nTWO\nthree\nfour\nfive\nSIX\nsix and a half\nseven\n" {
		t.Fatalf("undo left %q", got)
	}
	s.Exec(t, `vim.cmd("redo") vim.cmd("write")`)
	if disk, _ := os.ReadFile(a); string(disk) != want {
		t.Fatalf("a.txt on disk %q, want %q", disk, want)
	}
	items = reviewList(t, s.editor, "", 3)
	if it := items["a.txt"]; it.Added != 1 || it.Removed != 1 {
		t.Fatalf("a.txt after the revert: %+v, want +1 -1", it)
	}

	// The next turn starts a new list.
	s.Exec(t, `vim.cmd("tabclose")`)
	var tabs int
	s.Eval(t, `return #vim.api.nvim_list_tabpages()`, &tabs)
	if tabs != 1 || len(s.Lines(t, s.st.Terminal.Bufnr)) == 0 {
		t.Fatalf("%d tabs after closing the review's", tabs)
	}
	var termShown bool
	s.Eval(t, `return #vim.fn.win_findbuf(...) == 1`, &termShown, s.st.Terminal.Bufnr)
	if !termShown {
		t.Fatal("the CLI's terminal is not shown after the review tab closed")
	}
	s.api.Script(fakeapi.Reply(fakeapi.Text("Nothing to change.")))
	// One word: with "⧉ In a.txt" appearing in the prompt box's border as
	// the prompt is typed, the CLI may draw the border's line through its
	// spaces.
	s.submit(t, "nothing_more")
	s.waitScreen(t, 60*time.Second, "Nothing to change.")
	s.WaitFor(t, 30*time.Second, `require("claude.review").statusline() == ""`,
		`return require("claude.review").statusline()`, "the count of the new turn")
	reviewList(t, s.editor, "", 0)
	// The session still has them.
	if got := reviewList(t, s.editor, "session", 3); got["a.txt"].Added != 1 {
		t.Fatalf("the session's a.txt: %+v", got["a.txt"])
	}
}

// The chat's turns feed the queue too: an edit in acceptEdits mode is
// listed with its session, reverting the file puts the baseline back on
// disk, User ClaudeReviewChanged fires, and the chat's next turn starts a
// new list.
func TestChatCLIReviewQueue(t *testing.T) {
	s := startChatSession(t, map[string]string{"hello.txt": chatFileText}, "")
	file := filepath.Join(s.project, "hello.txt")
	s.Exec(t, `_G.review_events = {}
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeReviewChanged", callback = function(ev)
  table.insert(_G.review_events, ev.data or {}) end })`)
	s.focus(t, "1", "p")
	s.feed(t, "<S-Tab>")
	s.WaitFor(t, 10*time.Second, `require("claude.chat").get("1").mode == "acceptEdits"`,
		`return { require("claude.chat").get("1").mode, _G.notes }`, "the chat in acceptEdits")
	s.scriptEdit(file, "beta", "BETA", "Applied.")
	s.send(t, "1", "make beta loud")
	s.waitFile(t, file, "alpha\nBETA\ngamma\n")
	s.waitTurns(t, 1)
	s.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1 and #_G.review_events > 0 and _G.review_events[#_G.review_events].count == 1`,
		`return { count = require("claude.review").count(), events = _G.review_events }`, "User ClaudeReviewChanged with one file to review")

	items := reviewList(t, s.editor, "", 1)
	it, ok := items["hello.txt"]
	if !ok || it.Status != "modified" || it.Added != 1 || it.Removed != 1 || !strings.HasPrefix(it.Label, "chat ") {
		t.Fatalf("listed %+v, want hello.txt modified +1 -1 named by its chat session", items)
	}
	s.Exec(t, `local r = require("claude.review") r.revert_file(r.items()[1])`)
	s.waitFile(t, file, chatFileText)

	s.api.Script(fakeapi.Reply(fakeapi.Text("Nothing more.")))
	s.send(t, "1", "anything else?")
	s.waitTurns(t, 2)
	s.WaitFor(t, 30*time.Second, `require("claude.review").count() == 0`,
		`return require("claude.review").count()`, "the new turn's empty list")
	reviewList(t, s.editor, "", 0)
}

// Part 1 in the chat's diff review: ga/gr work in the diff a chat's Edit
// permission opens, and an allow from the chat carries them — the
// hunks the user rejected stay out of the file; with every hunk rejected
// the allow is a "no".
func TestChatCLIDiffHunks(t *testing.T) {
	s := startChatSession(t, map[string]string{"hello.txt": "alpha\nbeta\ngamma\ndelta\n"}, "")
	file := filepath.Join(s.project, "hello.txt")
	for _, tt := range []struct {
		name   string
		reject []int // proposal lines to press gr on
		want   string
		done   string
	}{
		{"one of two rejected", []int{1}, "alpha\nbeta\nGAMMA\ndelta\n", "One kept."},
		{"both rejected", []int{1, 3}, "alpha\nbeta\nGAMMA\ndelta\n", "Both refused."},
	} {
		before, _ := os.ReadFile(file)
		old, repl := "alpha\nbeta\ngamma", "ALPHA\nbeta\nGAMMA"
		if tt.name == "both rejected" {
			old, repl = "alpha\nbeta\nGAMMA\ndelta", "ALPHA\nbeta\nGAMMA\nDELTA"
		}
		s.api.Script(
			fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": file})),
			fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": file, "old_string": old, "new_string": repl})),
			fakeapi.Reply(fakeapi.Text(tt.done)),
		)
		s.send(t, "1", tt.name)
		s.WaitFor(t, 60*time.Second, `#require("claude.diff").pending() == 1`, `return { require("claude.diff").pending(), _G.notes }`, tt.name+": the diff review")
		var d []pendingDiff
		s.Eval(t, `return require("claude.diff").pending()`, &d)
		for _, l := range tt.reject {
			line := l
			if tt.name == "both rejected" && l == 3 {
				line = 4
			}
			s.Exec(t, `local buf, line = ...
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
vim.api.nvim_win_set_cursor(0, { line, 0 }) vim.cmd("normal gr")`, d[0].ProposalBuf, line)
		}
		// Answer from the chat, not from the diff.
		s.focus(t, "1", "t")
		s.feed(t, "a")
		s.waitTranscript(t, "1", tt.done)
		if tt.name == "both rejected" {
			s.mainRequestWith(t, "rejected every hunk")
			if got, _ := os.ReadFile(file); string(got) != string(before) {
				t.Fatalf("%s: the file changed to %q", tt.name, got)
			}
			continue
		}
		s.waitFile(t, file, tt.want)
	}
}

// In default mode an accepted diff lands in the queue too, as accepted:
// with the user's own tweak of the proposal (the CLI records it as
// userModified, and the queue reads the file for it).
func TestCLIReviewQueueAcceptedDiff(t *testing.T) {
	s := startDiffSession(t, `, review = { panel_height = 0 }`)
	s.scriptEdit(s.file, "beta", "BETA", "Edited.")
	s.submit(t, "make_beta_loud")
	d := s.waitDiff(t)
	want := "alpha\nBETA\ngamma (tweaked)\ndelta\n"
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])
vim.api.nvim_buf_set_lines(0, 2, 3, false, { "gamma (tweaked)" })
vim.cmd("write")`, d.ProposalBuf)
	s.waitFileText(t, want)
	s.waitScreen(t, 30*time.Second, "Edited.")
	s.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`,
		`return require("claude.review").count()`, "the accepted diff in the queue")
	items := reviewList(t, s.editor, "", 1)
	if it := items["hello.txt"]; it.Status != "modified" || it.Added != 2 || it.Removed != 2 {
		t.Fatalf("hello.txt listed as %+v, want modified +2 -2", it)
	}
}

// A chat forked after a turn that wrote a file: the CLI copies the
// parent's records into the fork's transcript (their uuids kept, under
// the fork's first prompt id), which are not the fork's writes — before,
// the fork's first turn listed the parent's file as its own change.
func TestChatCLIReviewQueueFork(t *testing.T) {
	s := startChatSession(t, map[string]string{"hello.txt": chatFileText}, "")
	file, other := filepath.Join(s.project, "hello.txt"), filepath.Join(s.project, "other.txt")
	acceptEdits := func(chat string) {
		s.focus(t, chat, "p")
		s.feed(t, "<S-Tab>")
		s.WaitFor(t, 10*time.Second, `require("claude.chat").get("`+chat+`").mode == "acceptEdits"`,
			`return { require("claude.chat").get("`+chat+`").mode, _G.notes }`, "the chat in acceptEdits")
	}
	acceptEdits("1")
	s.scriptEdit(file, "beta", "BETA", "Applied.")
	s.send(t, "1", "make beta loud")
	s.waitFile(t, file, "alpha\nBETA\ngamma\n")
	s.waitTurns(t, 1)
	s.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return require("claude.review").count()`, "the parent's file to review")
	var parent string
	s.Eval(t, `return require("claude.chat").get("1").session_id or ""`, &parent)

	s.Exec(t, `_G.selects = { "beta", "Fork" }`)
	s.Exec(t, `vim.cmd("ClaudeChatSessions")`)
	s.waitTranscript(t, "2", "make beta loud")
	acceptEdits("2")
	// The fork's turn writes a file of its own: once it is listed, the
	// queue has read the copies before it in the fork's transcript.
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Write", map[string]any{"file_path": other, "content": "other\n"})),
		fakeapi.Reply(fakeapi.Text("Wrote it.")),
	)
	s.send(t, "2", "write other")
	s.waitFile(t, other, "other\n")
	s.WaitFor(t, 30*time.Second, `require("claude.review").count() >= 2`, `return require("claude.review").count()`, "the fork's file to review")
	for _, scope := range []string{"", "session"} {
		items := reviewList(t, s.editor, scope, 2)
		if it := items["hello.txt"]; it.Session != parent || items["other.txt"].Session == parent {
			t.Fatalf("%q: %+v, want hello.txt of the parent session (%s) and other.txt of the fork", scope, items, parent)
		}
	}
}

// A CRLF file edited by the real CLI across lines (the model's old_string
// has "\n" ends): the queue lists its counts and a whole-file revert puts
// back the file's exact bytes.
func TestChatCLIReviewQueueCRLF(t *testing.T) {
	orig := "alpha\r\nbeta\r\ngamma\r\ndelta\r\n"
	s := startChatSession(t, map[string]string{"crlf.txt": orig}, "")
	file := filepath.Join(s.project, "crlf.txt")
	s.focus(t, "1", "p")
	s.feed(t, "<S-Tab>")
	s.WaitFor(t, 10*time.Second, `require("claude.chat").get("1").mode == "acceptEdits"`,
		`return { require("claude.chat").get("1").mode, _G.notes }`, "the chat in acceptEdits")
	s.scriptEdit(file, "beta\ngamma", "BETA\nGAMMA", "Applied.")
	s.send(t, "1", "make two lines loud")
	s.waitFile(t, file, "alpha\r\nBETA\r\nGAMMA\r\ndelta\r\n")
	s.waitTurns(t, 1)
	s.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return require("claude.review").count()`, "crlf.txt to review")
	items := reviewList(t, s.editor, "", 1)
	if it := items["crlf.txt"]; it.Added != 2 || it.Removed != 2 || it.Line != 2 {
		t.Fatalf("crlf.txt: %+v, want +2 -2 from line 2", it)
	}
	s.Exec(t, `local r = require("claude.review") r.revert_file(r.items()[1])`)
	s.waitFile(t, file, orig)
}
