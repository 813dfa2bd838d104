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
}
