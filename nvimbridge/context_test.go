package nvimbridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// ctxEnv is a Neovim with the plugin on 'runtimepath', a project directory
// (its cwd) with some files, and a Bridge on it.
type ctxEnv struct {
	*nvimtest.Nvim
	b   *nvimbridge.Bridge
	dir string
}

func startCtxEnv(t *testing.T, files map[string]string) *ctxEnv {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	return &ctxEnv{Nvim: n, b: b, dir: dir}
}

func (e *ctxEnv) path(name string) string { return filepath.Join(e.dir, name) }

// edit opens a file in the current window; returns its buffer number.
func (e *ctxEnv) edit(t *testing.T, name string) int {
	t.Helper()
	var buf int
	e.Eval(t, `vim.cmd("edit " .. vim.fn.fnameescape(...)) return vim.api.nvim_get_current_buf()`, &buf, e.path(name))
	return buf
}

func (e *ctxEnv) eval(t *testing.T, code string, args ...any) string {
	t.Helper()
	var out any
	e.Eval(t, code, &out, args...)
	b, _ := json.Marshal(out)
	return string(b)
}

func ctxBg() context.Context { return context.Background() }

func TestContextEditors(t *testing.T) {
	e := startCtxEnv(t, map[string]string{"a.go": "package a\n", "b.txt": "b\n", "c.md": "# c\n"})
	a := e.edit(t, "a.go")
	e.edit(t, "b.txt")
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, {"changed"})`)
	e.Exec(t, `vim.cmd("edit c.md") vim.api.nvim_win_set_cursor(0, {1, 2})`)
	// Not listed, not files: help, a scratch buffer, an unlisted file.
	e.Exec(t, `local s = vim.api.nvim_create_buf(false, true) vim.api.nvim_buf_set_name(s, "scratch")`)
	e.Exec(t, `local u = vim.fn.bufadd(...) vim.fn.bufload(u)`, e.path("b.txt")+".unlisted")

	eds, err := e.b.Editors(ctxBg())
	if err != nil {
		t.Fatal(err)
	}
	want := []nvimbridge.Buffer{
		{Bufnr: a, Path: e.path("a.go"), Filetype: "go", Loaded: true, LineCount: 1},
		{Bufnr: a + 1, Path: e.path("b.txt"), Filetype: "text", Modified: true, Loaded: true, LineCount: 1},
		{Bufnr: a + 2, Path: e.path("c.md"), Filetype: "markdown", Active: true, Loaded: true, LineCount: 1},
	}
	if got, w := mustJSON(eds.Buffers), mustJSON(want); got != w {
		t.Fatalf("buffers:\n got %s\nwant %s", got, w)
	}
	wantCur := &nvimbridge.CurrentFile{Path: e.path("c.md"), Filetype: "markdown", LineCount: 1, Line: 0, Character: 2}
	if got, w := mustJSON(eds.Current), mustJSON(wantCur); got != w {
		t.Fatalf("current:\n got %s\nwant %s", got, w)
	}

	// From the Claude terminal, the active editor is the window used last.
	e.Exec(t, `vim.cmd("vsplit | enew") vim.bo.buftype = "nofile" vim.b.claude_terminal = true`)
	eds, err = e.b.Editors(ctxBg())
	if err != nil {
		t.Fatal(err)
	}
	if eds.Current == nil || eds.Current.Path != e.path("c.md") || !eds.Buffers[2].Active {
		t.Fatalf("from the terminal: current %+v, buffers %+v", eds.Current, eds.Buffers)
	}

	// A multibyte line: the cursor's character counts UTF-16 units.
	e.Exec(t, `vim.cmd("wincmd p") vim.api.nvim_buf_set_lines(0, 0, -1, false, {"é😀x"}) vim.api.nvim_win_set_cursor(0, {1, 6})`)
	eds, err = e.b.Editors(ctxBg())
	if err != nil {
		t.Fatal(err)
	}
	if eds.Current.Character != 3 {
		t.Fatalf("character after é😀 = %d, want 3", eds.Current.Character)
	}
}

func TestContextDocument(t *testing.T) {
	e := startCtxEnv(t, map[string]string{"a.txt": "a\n", "real.txt": "r\n"})
	if err := os.Symlink(e.path("real.txt"), e.path("link.txt")); err != nil {
		t.Fatal(err)
	}
	e.edit(t, "a.txt")
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, {"x"})`)
	e.edit(t, "real.txt")
	tests := []struct {
		path string
		want nvimbridge.Document
	}{
		{e.path("a.txt"), nvimbridge.Document{Open: true, Path: e.path("a.txt"), Modified: true}},
		{e.path("real.txt"), nvimbridge.Document{Open: true, Path: e.path("real.txt")}},
		{e.path("link.txt"), nvimbridge.Document{Open: true, Path: e.path("real.txt")}}, // through the symlink
		{e.path("missing.txt"), nvimbridge.Document{}},
	}
	for _, tt := range tests {
		got, err := e.b.Document(ctxBg(), tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("Document(%s) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

const ctxText = "first line\nsecond: héllo wörld\nthird line\nfourth line\n"

// visual is the Visual selection of the current window: mode and the 1-based
// row / 0-based byte col of both ends.
type visual struct {
	Mode  string `json:"mode"`
	Start [2]int `json:"start"`
	End   [2]int `json:"end"`
	File  string `json:"file"`
}

const visualLua = `local v = vim.fn.getpos("v") local c = vim.api.nvim_win_get_cursor(0)
return { mode = vim.api.nvim_get_mode().mode, start = { v[2], v[3] - 1 }, ["end"] = c,
  file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":t") }`

func TestContextOpenFileSelection(t *testing.T) {
	tests := []struct {
		name string
		o    nvimbridge.OpenFileOptions
		want visual
	}{
		{"no text: cursor only", nvimbridge.OpenFileOptions{}, visual{Mode: "n", Start: [2]int{1, 0}, End: [2]int{1, 0}}},
		{"start text alone selects itself", nvimbridge.OpenFileOptions{StartText: "héllo"},
			visual{Mode: "v", Start: [2]int{2, 8}, End: [2]int{2, 13}}},
		{"start to end text", nvimbridge.OpenFileOptions{StartText: "second", EndText: "third"},
			visual{Mode: "v", Start: [2]int{2, 0}, End: [2]int{3, 4}}},
		{"end text before start is looked for after it", nvimbridge.OpenFileOptions{StartText: "third", EndText: "line"},
			visual{Mode: "v", Start: [2]int{3, 0}, End: [2]int{3, 9}}},
		{"to end of line", nvimbridge.OpenFileOptions{StartText: "héllo", EndText: "wö", SelectToEndOfLine: true},
			visual{Mode: "v", Start: [2]int{2, 8}, End: [2]int{2, 20}}},
		{"start text missing: just opened", nvimbridge.OpenFileOptions{StartText: "nowhere"},
			visual{Mode: "n", Start: [2]int{1, 0}, End: [2]int{1, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startCtxEnv(t, map[string]string{"f.txt": ctxText})
			o := tt.o
			o.Path, o.Focus = e.path("f.txt"), true
			got, err := e.b.OpenFile(ctxBg(), o)
			if err != nil {
				t.Fatal(err)
			}
			want := nvimbridge.OpenedFile{Path: e.path("f.txt"), Filetype: "text", LineCount: 4, Found: o.StartText != "" && o.StartText != "nowhere"}
			if got != want {
				t.Fatalf("OpenFile = %+v, want %+v", got, want)
			}
			var v visual
			e.Eval(t, visualLua, &v)
			tt.want.File = "f.txt"
			if tt.want.Mode == "n" {
				v.Start = tt.want.Start // getpos("v") is the cursor outside Visual mode
			}
			if v != tt.want {
				t.Fatalf("selection = %+v, want %+v", v, tt.want)
			}
			var listed bool
			e.Eval(t, `return vim.bo.buflisted`, &listed)
			if !listed {
				t.Fatal("the opened buffer is not listed")
			}
		})
	}
}

// layoutOf describes the current tab: per window its file (or role) and
// which one has the focus.
const ctxLayoutLua = `local out = {}
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  local b = vim.api.nvim_win_get_buf(w)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":t")
  if vim.b[b].claude_terminal then name = "TERM" end
  if vim.api.nvim_win_get_config(w).relative ~= "" then name = "FLOAT:" .. name end
  if w == vim.api.nvim_get_current_win() then name = "*" .. name end
  table.insert(out, name)
end
return table.concat(out, " ")`

func TestContextOpenFileWindow(t *testing.T) {
	// The Claude terminal stand-in: a terminal buffer marked as ours.
	const term = `vim.cmd("botright vsplit") vim.cmd("terminal") vim.b.claude_terminal = true vim.cmd("startinsert")`
	tests := []struct {
		name  string
		setup string
		want  string
	}{
		{"current editing window", `vim.cmd("edit a.txt")`, "*f.txt"},
		{"from the terminal: the window used last", `vim.cmd("edit a.txt")` + "\n" + term, "*f.txt TERM"},
		{"only the terminal: a split beside it", term + "\nvim.cmd('wincmd o')", "*f.txt TERM"},
		{"diff, sidebar, quickfix and help windows are skipped",
			`vim.cmd("edit a.txt | diffthis | vsplit b.txt | diffthis")
			vim.cmd("topleft vnew") vim.bo.buftype = "nofile" vim.bo.filetype = "NvimTree" vim.cmd("vertical resize 30")
			vim.cmd("copen")`,
			"NvimTree *f.txt b.txt a.txt "},
		{"a left-hand sidebar beside the terminal: a split right of the sidebar",
			term + "\nvim.cmd('wincmd o | topleft vnew | vertical resize 30') vim.bo.buftype = 'nofile' vim.bo.filetype = 'neo-tree'",
			"NvimTree *f.txt TERM"},
		{"a float is not used", `vim.cmd("edit a.txt")
			local b = vim.api.nvim_create_buf(false, true)
			vim.api.nvim_open_win(b, true, { relative = "editor", row = 1, col = 1, width = 10, height = 3 })`,
			"*f.txt FLOAT:"},
		{"a window already showing the file", `vim.cmd("edit f.txt | vsplit a.txt")`, "a.txt *f.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startCtxEnv(t, map[string]string{"f.txt": ctxText, "a.txt": "a\n", "b.txt": "b\n"})
			e.Exec(t, `vim.o.columns = 200 vim.o.lines = 50`)
			e.Exec(t, tt.setup)
			if _, err := e.b.OpenFile(ctxBg(), nvimbridge.OpenFileOptions{Path: e.path("f.txt"), Focus: true, StartText: "third"}); err != nil {
				t.Fatal(err)
			}
			// From Terminal mode the focus moves once that mode is left.
			e.WaitFor(t, 10*time.Second, `vim.api.nvim_get_mode().mode == "v"`, ctxLayoutLua, "the selection")
			var got string
			e.Eval(t, ctxLayoutLua, &got)
			want := strings.ReplaceAll(tt.want, "NvimTree", "")
			if got != want {
				t.Fatalf("layout = %q, want %q", got, want)
			}
		})
	}
}

// openFile while the user types in the Claude terminal (Terminal mode),
// in another file (Insert mode), or on the command line.
func TestContextOpenFileFromModes(t *testing.T) {
	tests := []struct {
		name  string
		setup string
		want  string // Lua condition once settled
	}{
		{"terminal mode", `vim.cmd("botright vsplit | terminal") vim.b.claude_terminal = true vim.cmd("startinsert")`,
			`vim.api.nvim_get_mode().mode == "v" and vim.fn.expand("%:t") == "f.txt" and vim.fn.line("v") == 2 and vim.fn.line(".") == 3`},
		{"insert mode", `vim.cmd("edit g.txt") vim.cmd("startinsert")`,
			`vim.api.nvim_get_mode().mode == "v" and vim.fn.expand("%:t") == "f.txt" and vim.fn.line("v") == 2 and vim.fn.line(".") == 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startCtxEnv(t, map[string]string{"f.txt": ctxText, "g.txt": "g\n"})
			e.Exec(t, tt.setup)
			if _, err := e.b.OpenFile(ctxBg(), nvimbridge.OpenFileOptions{Path: e.path("f.txt"), Focus: true, StartText: "second", EndText: "third"}); err != nil {
				t.Fatal(err)
			}
			e.WaitFor(t, 10*time.Second, tt.want, `return { vim.api.nvim_get_mode().mode, vim.fn.expand("%:t"), vim.fn.line("v"), vim.fn.line(".") }`, "the selection")
		})
	}
	// Typing a command: the file is shown, the command line is left alone.
	t.Run("command line", func(t *testing.T) {
		e := startCtxEnv(t, map[string]string{"f.txt": ctxText, "g.txt": "g\n"})
		e.edit(t, "g.txt")
		if _, err := e.Input(":echo"); err != nil {
			t.Fatal(err)
		}
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "c"`, "", "command-line mode")
		if _, err := e.b.OpenFile(ctxBg(), nvimbridge.OpenFileOptions{Path: e.path("f.txt"), Focus: true, StartText: "third"}); err != nil {
			t.Fatal(err)
		}
		var st []any
		e.Eval(t, `return { vim.api.nvim_get_mode().mode, vim.fn.getcmdline(), vim.fn.expand("%:t") }`, &st)
		if mustJSON(st) != `["c","echo","f.txt"]` {
			t.Fatalf("after openFile: %v", st)
		}
	})
}

func TestContextOpenFileBackground(t *testing.T) {
	e := startCtxEnv(t, map[string]string{"f.txt": ctxText, "a.txt": "a\n"})
	e.edit(t, "a.txt")
	for _, preview := range []bool{false, true} {
		name := map[bool]string{false: "f.txt", true: "p.txt"}[preview]
		if err := os.WriteFile(e.path(name), []byte(ctxText), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := e.b.OpenFile(ctxBg(), nvimbridge.OpenFileOptions{Path: e.path(name), StartText: "second", EndText: "third", Preview: preview})
		if err != nil {
			t.Fatal(err)
		}
		if got.LineCount != 4 || !got.Found {
			t.Fatalf("OpenFile = %+v", got)
		}
		var st struct {
			Cur    string `json:"cur"`
			Listed bool   `json:"listed"`
			Loaded bool   `json:"loaded"`
			Marks  [2][]int
		}
		e.Eval(t, `local b = vim.fn.bufnr(...)
			return { cur = vim.fn.expand("%:t"), listed = vim.bo[b].buflisted, loaded = vim.api.nvim_buf_is_loaded(b),
				Marks = { vim.api.nvim_buf_get_mark(b, "<"), vim.api.nvim_buf_get_mark(b, ">") } }`, &st, e.path(name))
		if st.Cur != "a.txt" || !st.Loaded || st.Listed == preview {
			t.Fatalf("%s: %+v (want focus kept on a.txt, loaded, listed=%v)", name, st, !preview)
		}
		if mustJSON(st.Marks) != "[[2,0],[3,4]]" {
			t.Fatalf("%s: '< '> = %v", name, st.Marks)
		}
	}
	// A previewed buffer becomes listed once edited.
	e.Exec(t, `local b = vim.fn.bufnr(...) vim.api.nvim_buf_call(b, function() vim.cmd("normal! x") vim.cmd("doautocmd TextChanged") end)`, e.path("p.txt"))
	var listed bool
	e.Eval(t, `return vim.bo[vim.fn.bufnr(...)].buflisted`, &listed, e.path("p.txt"))
	if !listed {
		t.Fatal("the previewed buffer stayed unlisted after an edit")
	}
}

func TestContextOpenFiles(t *testing.T) {
	e := startCtxEnv(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	e.Exec(t, `vim.cmd("botright vsplit | terminal") vim.b.claude_terminal = true`)
	got, err := e.b.OpenFiles(ctxBg(), []string{e.path("a.txt"), e.path("b.txt")})
	if err != nil {
		t.Fatal(err)
	}
	want := []nvimbridge.OpenOutcome{{Path: e.path("a.txt"), OK: true}, {Path: e.path("b.txt"), OK: true}}
	if mustJSON(got) != mustJSON(want) {
		t.Fatalf("OpenFiles = %+v", got)
	}
	var layout string
	e.Eval(t, ctxLayoutLua, &layout)
	if layout != "b.txt *TERM" {
		t.Fatalf("layout = %q, want the last file shown and the focus kept in the terminal", layout)
	}
}

// ctxConflict makes path's file differ from what its buffer read: another
// size, and a later mtime.
func ctxConflict(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

func TestContextSaveDocument(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(e *ctxEnv)
		want    nvimbridge.SaveResult
		disk    string // the file afterwards
		message string // in Message
	}{
		{"saves unsaved changes", func(e *ctxEnv) {
			e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, 1, false, {"saved"})`)
		}, nvimbridge.SaveResult{OK: true}, "saved\n", ""},
		{"no changes: nothing written", func(e *ctxEnv) {}, nvimbridge.SaveResult{OK: true, Unchanged: true}, "old\n", ""},
		{"changed on disk since read: refused, disk kept", func(e *ctxEnv) {
			e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, 1, false, {"mine"})`)
			ctxConflict(t, e.path("f.txt"), "theirs, longer\n")
		}, nvimbridge.SaveResult{Reason: nvimbridge.ReasonConflict}, "theirs, longer\n", "changed on disk since it was read"},
		{"created on disk after opening a new file: refused", func(e *ctxEnv) {
			e.Exec(t, `vim.cmd("edit new.txt") vim.api.nvim_buf_set_lines(0, 0, 1, false, {"mine"})`)
			ctxConflict(t, e.path("new.txt"), "theirs\n")
		}, nvimbridge.SaveResult{Reason: nvimbridge.ReasonConflict}, "old\n", "created on disk"},
		{"read-only buffer: refused", func(e *ctxEnv) {
			e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, 1, false, {"mine"}) vim.bo.readonly = true`)
		}, nvimbridge.SaveResult{Reason: nvimbridge.ReasonReadOnly}, "old\n", "read-only"},
		{"write fails: Neovim's error", func(e *ctxEnv) {
			e.Exec(t, `vim.cmd("edit nodir/x.txt") vim.api.nvim_buf_set_lines(0, 0, 1, false, {"mine"})`)
		}, nvimbridge.SaveResult{Reason: nvimbridge.ReasonFailed}, "old\n", "E212"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startCtxEnv(t, map[string]string{"f.txt": "old\n"})
			// The bridge (and its record of what each buffer read) is loaded
			// before the buffer, as when the host runs.
			if _, err := e.b.Editors(ctxBg()); err != nil {
				t.Fatal(err)
			}
			e.edit(t, "f.txt")
			tt.setup(e)
			var path string
			e.Eval(t, `return vim.api.nvim_buf_get_name(0)`, &path)
			got, err := e.b.SaveDocument(ctxBg(), path)
			if err != nil {
				t.Fatal(err)
			}
			if got.OK != tt.want.OK || got.Reason != tt.want.Reason || got.Unchanged != tt.want.Unchanged || !strings.Contains(got.Message, tt.message) {
				t.Fatalf("SaveDocument = %+v, want %+v with message %q", got, tt.want, tt.message)
			}
			if b, _ := os.ReadFile(e.path("f.txt")); string(b) != tt.disk {
				t.Fatalf("f.txt = %q, want %q", b, tt.disk)
			}
			var mode string
			e.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode)
			if mode != "n" {
				t.Fatalf("mode = %q after the save: a prompt is waiting", mode)
			}
		})
	}

	t.Run("not open", func(t *testing.T) {
		e := startCtxEnv(t, map[string]string{"f.txt": "old\n"})
		got, err := e.b.SaveDocument(ctxBg(), e.path("f.txt"))
		if err != nil || got.OK || got.Reason != nvimbridge.ReasonNotOpen {
			t.Fatalf("SaveDocument = %+v, %v", got, err)
		}
	})

	// A buffer read before the host started has no record: Neovim's own
	// timestamp check finds the change, and keeps refusing after.
	t.Run("changed on disk, buffer older than the host", func(t *testing.T) {
		e := startCtxEnv(t, map[string]string{"f.txt": "old\n"})
		e.edit(t, "f.txt")
		e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, 1, false, {"mine"})`)
		ctxConflict(t, e.path("f.txt"), "theirs, longer\n")
		for i := 0; i < 2; i++ {
			got, err := e.b.SaveDocument(ctxBg(), e.path("f.txt"))
			if err != nil || got.OK || got.Reason != nvimbridge.ReasonConflict {
				t.Fatalf("save %d: %+v, %v", i+1, got, err)
			}
		}
		if b, _ := os.ReadFile(e.path("f.txt")); string(b) != "theirs, longer\n" {
			t.Fatalf("f.txt = %q", b)
		}
		// After :edit! the buffer is based on the disk again: saving works.
		e.Exec(t, `vim.cmd("edit!") vim.api.nvim_buf_set_lines(0, 0, 1, false, {"again"})`)
		if got, err := e.b.SaveDocument(ctxBg(), e.path("f.txt")); err != nil || !got.OK {
			t.Fatalf("after :edit!: %+v, %v", got, err)
		}
		if b, _ := os.ReadFile(e.path("f.txt")); string(b) != "again\n" {
			t.Fatalf("f.txt = %q", b)
		}
	})
}

func TestContextReadWriteDocument(t *testing.T) {
	e := startCtxEnv(t, map[string]string{"f.txt": "one\ntwo\nthree\n", "dos.txt": "a\r\nb\r\n", ".env": "SECRET=1\n"})
	if _, err := e.b.Editors(ctxBg()); err != nil {
		t.Fatal(err)
	}
	f := e.edit(t, "f.txt")
	e.Exec(t, `require("claude").setup({})`)

	// Unmodified: the host reads the file itself.
	got, err := e.b.ReadDocument(ctxBg(), e.path("f.txt"), e.path("f.txt"))
	if err != nil || got != (nvimbridge.BufferText{Loaded: true}) {
		t.Fatalf("ReadDocument = %+v, %v", got, err)
	}
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 1, 2, false, {"TWO"})`)
	got, err = e.b.ReadDocument(ctxBg(), e.path("f.txt"), e.path("f.txt"))
	if err != nil || got != (nvimbridge.BufferText{Loaded: true, Modified: true, Text: "one\nTWO\nthree\n"}) {
		t.Fatalf("ReadDocument modified = %+v, %v", got, err)
	}
	if got, _ := e.b.ReadDocument(ctxBg(), e.path(".env"), e.path(".env")); !got.Denied {
		t.Fatalf(".env not denied: %+v", got)
	}
	if got, _ := e.b.ReadDocument(ctxBg(), e.path("none.txt"), e.path("none.txt")); got.Loaded || got.Denied {
		t.Fatalf("not open: %+v", got)
	}

	tests := []struct {
		content string
		lines   string
		opts    string
	}{
		{"one\nTWO!\nthree\nfour\n", `["one","TWO!","three","four"]`, "unix eol nobomb"},
		{"no newline at end", `["no newline at end"]`, "unix noeol nobomb"},
		{"x\r\ny\r\n", `["x","y"]`, "dos eol nobomb"},
		{"\ufeffbom\n", `["bom"]`, "unix eol bomb"},
		{"", `[""]`, "unix noeol nobomb"},
	}
	for _, tt := range tests {
		res, err := e.b.WriteDocument(ctxBg(), e.path("f.txt"), tt.content)
		if err != nil || !res.Loaded || !res.OK {
			t.Fatalf("WriteDocument(%q) = %+v, %v", tt.content, res, err)
		}
		if b, _ := os.ReadFile(e.path("f.txt")); string(b) != tt.content {
			t.Fatalf("disk after WriteDocument(%q) = %q", tt.content, b)
		}
		if got := e.eval(t, `return vim.api.nvim_buf_get_lines(...)`, f, 0, -1, false); got != tt.lines {
			t.Fatalf("buffer after WriteDocument(%q) = %s, want %s", tt.content, got, tt.lines)
		}
		var opts string
		e.Eval(t, `local b = ... return vim.bo[b].fileformat .. " " .. (vim.bo[b].eol and "eol" or "noeol") .. " " .. (vim.bo[b].bomb and "bomb" or "nobomb")`, &opts, f)
		if opts != tt.opts {
			t.Fatalf("options after WriteDocument(%q) = %q, want %q", tt.content, opts, tt.opts)
		}
	}
	// Each write is one undo step: undo brings back the text before it.
	e.Exec(t, `vim.cmd("undo")`)
	if got := e.eval(t, `return vim.api.nvim_buf_get_lines(0, 0, -1, false)`); got != `["bom"]` {
		t.Fatalf("after undo: %s", got)
	}
	// Only the lines that differ change: a mark on an untouched line stays.
	if _, err := e.b.WriteDocument(ctxBg(), e.path("f.txt"), "a\nb\nc\nd\n"); err != nil {
		t.Fatal(err)
	}
	e.Exec(t, `vim.api.nvim_buf_set_mark(0, "m", 4, 0, {})`)
	if _, err := e.b.WriteDocument(ctxBg(), e.path("f.txt"), "a\nB\nc\nd\n"); err != nil {
		t.Fatal(err)
	}
	if got := e.eval(t, `return vim.api.nvim_buf_get_mark(0, "m")`); got != "[4,0]" {
		t.Fatalf("mark after a one-line change = %s", got)
	}
	// A read-only buffer is not written.
	e.Exec(t, `vim.bo.readonly = true`)
	res, err := e.b.WriteDocument(ctxBg(), e.path("f.txt"), "nope\n")
	if err != nil || res.OK || !strings.Contains(res.Message, "read-only") {
		t.Fatalf("read-only: %+v, %v", res, err)
	}
	// Not loaded: the caller writes.
	res, err = e.b.WriteDocument(ctxBg(), e.path("dos.txt"), "x\n")
	if err != nil || res.Loaded {
		t.Fatalf("not loaded: %+v, %v", res, err)
	}
}

func TestContextSyncDiagnosticsReloads(t *testing.T) {
	e := startCtxEnv(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	if _, err := e.b.Editors(ctxBg()); err != nil {
		t.Fatal(err)
	}
	a := e.edit(t, "a.txt")
	b := e.edit(t, "b.txt")
	e.edit(t, "c.txt")
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, {"unsaved"})`)
	// A fake linter that looks at the text on every (re)load.
	e.Exec(t, `local ns = vim.api.nvim_create_namespace("fakelint")
		_G.linted = 0
		vim.api.nvim_create_autocmd("BufReadPost", { callback = function(a) _G.linted = _G.linted + 1 end })`)
	res, err := e.b.SyncDiagnostics(ctxBg())
	if err != nil || res.Reloaded != 0 {
		t.Fatalf("nothing changed: %+v, %v", res, err)
	}
	ctxConflict(t, e.path("a.txt"), "a changed\n")
	ctxConflict(t, e.path("c.txt"), "c changed\n")
	res, err = e.b.SyncDiagnostics(ctxBg())
	if err != nil || res.Reloaded != 1 || res.Seq != nil || len(res.Wait) != 0 {
		t.Fatalf("after changes on disk: %+v, %v (want a.txt reloaded, c.txt with unsaved changes left)", res, err)
	}
	lines := e.eval(t, `return { vim.api.nvim_buf_get_lines(..., 0, -1, false), vim.api.nvim_buf_get_lines(3, 0, -1, false), _G.linted, vim.api.nvim_get_mode().mode }`, a)
	if lines != `[["a changed"],["unsaved"],1,"n"]` {
		t.Fatalf("after the sync: %s", lines)
	}
	_ = b
	// The reload is undoable, like Neovim's own.
	e.Exec(t, `vim.api.nvim_buf_call(..., function() vim.cmd("undo") end)`, a)
	if got := e.eval(t, `return vim.api.nvim_buf_get_lines(..., 0, -1, false)`, a); got != `["a"]` {
		t.Fatalf("undo of the reload: %s", got)
	}
}

// ctxPushes collects the notifications claude.diagnostics sends, with the
// module attached to the test's channel as it is to the host's.
type ctxPushes struct {
	ch chan ctxPush
}

type ctxPush struct {
	method string
	params json.RawMessage
}

func attachDiagnostics(t *testing.T, e *ctxEnv) *ctxPushes {
	t.Helper()
	p := &ctxPushes{ch: make(chan ctxPush, 64)}
	for _, m := range []string{"diagnostics_changed", "workspace_folders"} {
		m := m
		if err := e.b.HandleNotification(m, func(raw json.RawMessage) { p.ch <- ctxPush{m, raw} }); err != nil {
			t.Fatal(err)
		}
	}
	e.Exec(t, `require("claude.server").state().chan = ... require("claude.diagnostics").attach()`, e.ChannelID())
	t.Cleanup(func() { _ = e.TryEval(`require("claude.diagnostics").detach()`, nil) })
	return p
}

// next returns the next notification of method, skipping others.
func (p *ctxPushes) next(t *testing.T, method string) string {
	t.Helper()
	timeout := time.After(10 * nvimtest.Slack * time.Second)
	for {
		select {
		case n := <-p.ch:
			if n.method == method {
				return string(n.params)
			}
		case <-timeout:
			t.Fatalf("no %s notification", method)
			return ""
		}
	}
}

// none checks that no notification of method is pending after Neovim has
// processed everything queued so far (and its flush timer has run).
func (p *ctxPushes) none(t *testing.T, e *ctxEnv, method string) {
	t.Helper()
	e.Exec(t, `vim.wait(100, function() return false end)`)
	for {
		select {
		case n := <-p.ch:
			if n.method == method {
				t.Fatalf("unexpected %s: %s", method, n.params)
			}
		default:
			return
		}
	}
}

// canonical re-encodes JSON with sorted keys, so Lua's key order does not
// matter.
func canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func TestContextDiagnosticsPush(t *testing.T) {
	e := startCtxEnv(t, map[string]string{
		"a.txt":      "héllo 😀 wörld\nsecond\n",
		"b.txt":      "b\n",
		"closed.txt": "x 😀 y\n",
	})
	a := e.edit(t, "a.txt")
	e.Exec(t, `_G.ns = vim.api.nvim_create_namespace("fakelint")
		vim.diagnostic.set(_G.ns, 0, {{ lnum = 1, col = 0, message = "before attach", severity = 4 }})`)
	p := attachDiagnostics(t, e)

	// On attach: everything there is, as a snapshot, and the folders.
	want := `{"files":[{"bufnr":1,"diagnostics":[{"message":"before attach","range":{"end":{"character":0,"line":1},"start":{"character":0,"line":1}},"severity":"Hint","source":"fakelint"}],"path":"` + e.path("a.txt") + `"}],"seq":1,"snapshot":true}`
	if got := canonical(t, p.next(t, "diagnostics_changed")); got != want {
		t.Fatalf("snapshot:\n got %s\nwant %s", got, want)
	}
	if got := p.next(t, "workspace_folders"); canonical(t, got) != `{"folders":["`+e.dir+`"]}` {
		t.Fatalf("workspace_folders = %s", got)
	}

	// Two changes in one go: one push with the last state. Columns in UTF-16
	// units (é is 2 bytes / 1 unit, 😀 4 bytes / 2 units), severities by
	// name, an LSP code kept in user_data (Neovim 0.7) found, sorted by line.
	e.Exec(t, `vim.diagnostic.set(_G.ns, 0, {{ lnum = 0, col = 0, message = "replaced" }})
		vim.diagnostic.set(_G.ns, 0, {
			{ lnum = 1, col = 0, end_col = 6, message = "second", severity = vim.diagnostic.severity.INFO, source = "lint", code = "E1" },
			{ lnum = 0, col = 12, end_lnum = 0, end_col = 18, message = "wörld <here>", severity = vim.diagnostic.severity.WARN,
			  user_data = { lsp = { code = 42 } } },
		})`)
	want = `{"files":[{"bufnr":1,"diagnostics":[` +
		`{"code":42,"message":"wörld <here>","range":{"end":{"character":14,"line":0},"start":{"character":9,"line":0}},"severity":"Warning","source":"fakelint"},` +
		`{"code":"E1","message":"second","range":{"end":{"character":6,"line":1},"start":{"character":0,"line":1}},"severity":"Info","source":"lint"}],` +
		`"path":"` + e.path("a.txt") + `"}],"seq":2}`
	if got := canonical(t, p.next(t, "diagnostics_changed")); got != want {
		t.Fatalf("push:\n got %s\nwant %s", got, want)
	}

	// A buffer that is not a file: no push. A file never reported and still
	// without diagnostics: none either.
	e.Exec(t, `local s = vim.api.nvim_create_buf(false, true)
		vim.diagnostic.set(_G.ns, s, {{ lnum = 0, col = 0, message = "scratch" }})
		vim.cmd("edit b.txt") vim.diagnostic.set(_G.ns, 0, {})`)
	p.none(t, e, "diagnostics_changed")

	// An unloaded buffer (language servers publish for closed files): the
	// columns come from the file.
	e.Exec(t, `local u = vim.fn.bufadd(...) vim.diagnostic.set(_G.ns, u, {{ lnum = 0, col = 7, message = "closed" }})`, e.path("closed.txt"))
	if got := p.next(t, "diagnostics_changed"); !strings.Contains(got, `"character":5`) || !strings.Contains(got, "closed.txt") {
		t.Fatalf("unloaded buffer push: %s", got)
	}

	// Cleared, then wiped: the host is told to drop them.
	e.Exec(t, `vim.diagnostic.reset(_G.ns, ...)`, a)
	if got := canonical(t, p.next(t, "diagnostics_changed")); got != `{"files":[{"bufnr":1,"diagnostics":[],"path":"`+e.path("a.txt")+`"}],"seq":4}` {
		t.Fatalf("reset push: %s", got)
	}
	e.Exec(t, `vim.diagnostic.set(_G.ns, ..., {{ lnum = 0, col = 0, message = "again" }})`, a)
	p.next(t, "diagnostics_changed")
	e.Exec(t, `vim.cmd("bwipeout! " .. ...)`, a)
	if got := canonical(t, p.next(t, "diagnostics_changed")); got != `{"files":[{"bufnr":1,"diagnostics":[]}],"seq":6}` {
		t.Fatalf("wipe push: %s", got)
	}

	// A fake linter run on every (re)load: the sync reloads the file changed
	// on disk, and its diagnostics are pushed before the sync answers.
	e.Exec(t, `vim.cmd("edit b.txt")
		-- (Neovim 0.7 drops diagnostics set in BufReadPost of a reload;
		-- FileChangedShellPost comes after that.)
		vim.api.nvim_create_autocmd({ "BufReadPost", "FileChangedShellPost" }, { pattern = "*.txt", callback = function(a)
			local msgs = {}
			for i, l in ipairs(vim.api.nvim_buf_get_lines(a.buf, 0, -1, false)) do
				if l:find("TODO") then table.insert(msgs, { lnum = i - 1, col = 0, message = "TODO found" }) end
			end
			vim.diagnostic.set(_G.ns, a.buf, msgs)
		end })`)
	if _, err := e.b.SyncDiagnostics(ctxBg()); err != nil { // the sync notes the files as they are
		t.Fatal(err)
	}
	ctxConflict(t, e.path("b.txt"), "b\nTODO fix\n")
	res, err := e.b.SyncDiagnostics(ctxBg())
	if err != nil || res.Seq == nil || *res.Seq != 7 || res.Reloaded != 1 || len(res.Wait) != 0 {
		seq := int64(-1)
		if res.Seq != nil {
			seq = *res.Seq
		}
		t.Fatalf("sync: %+v (seq %d), %v", res, seq, err)
	}
	if got := p.next(t, "diagnostics_changed"); !strings.Contains(got, `"seq":7`) || !strings.Contains(got, "TODO found") {
		t.Fatalf("push of the sync: %s", got)
	}

	// Detached: nothing more is sent.
	e.Exec(t, `require("claude.diagnostics").detach() vim.diagnostic.set(_G.ns, 0, {{ lnum = 0, col = 0, message = "late" }})`)
	p.none(t, e, "diagnostics_changed")
}

// TestEditorsUnmarshal: ctx_editors packs its buffers in one string; the
// plain JSON encoding of Editors decodes too.
func TestEditorsUnmarshal(t *testing.T) {
	cur := &nvimbridge.CurrentFile{Path: "/p/a.go", Filetype: "go", LineCount: 3, Line: 1, Character: 2}
	tests := []struct {
		name    string
		in      string
		want    nvimbridge.Editors
		wantErr bool
	}{
		{"packed", `{"packed":"3 42 6 go\u0000/p/a.go\u00007 0 1 \u0000/p/odd name\nwith ü\u0000","current":{"path":"/p/a.go","filetype":"go","line_count":3,"line":1,"character":2}}`,
			nvimbridge.Editors{Buffers: []nvimbridge.Buffer{
				{Bufnr: 3, Path: "/p/a.go", Filetype: "go", Active: true, Loaded: true, LineCount: 42},
				{Bufnr: 7, Path: "/p/odd name\nwith ü", Modified: true},
			}, Current: cur}, false},
		{"packed, none", `{"packed":""}`, nvimbridge.Editors{Buffers: []nvimbridge.Buffer{}}, false},
		{"plain", `{"buffers":[{"bufnr":1,"path":"/p/a.go","filetype":"go","modified":true,"active":false,"loaded":true,"line_count":5}],"current":null}`,
			nvimbridge.Editors{Buffers: []nvimbridge.Buffer{{Bufnr: 1, Path: "/p/a.go", Filetype: "go", Modified: true, Loaded: true, LineCount: 5}}}, false},
		{"packed, no path", `{"packed":"3 42 6 go"}`, nvimbridge.Editors{}, true},
		{"packed, unterminated path", `{"packed":"3 42 6 go\u0000/p/a.go"}`, nvimbridge.Editors{}, true},
		{"packed, short record", `{"packed":"3 42\u0000/p/a.go\u0000"}`, nvimbridge.Editors{}, true},
		{"packed, bad number", `{"packed":"x 42 6 go\u0000/p/a.go\u0000"}`, nvimbridge.Editors{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got nvimbridge.Editors
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if g, w := mustJSON(got), mustJSON(tt.want); g != w {
				t.Fatalf("got  %s\nwant %s", g, w)
			}
		})
	}
}

// TestActiveEditorAgrees pins this: getOpenEditors' active file (and
// isActive) and getCurrentSelection read the same window, claude.editor's
// active editor, also where the old pickers differed (a file window in
// diff mode or the preview window has the focus).
func TestActiveEditorAgrees(t *testing.T) {
	tests := []struct {
		name  string
		setup string
		want  string
	}{
		{"current file window", ``, "b.txt"},
		{"file window in diff mode", `vim.wo.diff = true`, "b.txt"},
		{"preview window", `vim.wo.previewwindow = true`, "b.txt"},
		{"from the Claude terminal", `vim.cmd("botright vsplit | enew") vim.bo.buftype = "nofile" vim.b.claude_terminal = true`, "b.txt"},
		{"from a sidebar, then the terminal", `vim.cmd("wincmd p | topleft vsplit | enew") vim.bo.buftype = "nofile" vim.bo.filetype = "NvimTree"
vim.cmd("wincmd b | botright vsplit | enew") vim.bo.buftype = "nofile" vim.b.claude_terminal = true`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startCtxEnv(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
			e.edit(t, "a.txt")
			e.Exec(t, `vim.cmd("vsplit " .. vim.fn.fnameescape(...))`, e.path("b.txt"))
			if tt.setup != "" {
				e.Exec(t, tt.setup)
			}
			eds, err := e.b.Editors(ctxBg())
			if err != nil {
				t.Fatal(err)
			}
			sel, err := e.b.CurrentSelection(ctxBg())
			if err != nil {
				t.Fatal(err)
			}
			if eds.Current == nil || sel.Kind != nvimbridge.SelectionKindSelection {
				t.Fatalf("current %+v, selection %+v: want both", eds.Current, sel)
			}
			var active []string
			for _, b := range eds.Buffers {
				if b.Active {
					active = append(active, b.Path)
				}
			}
			if len(active) != 1 || active[0] != eds.Current.Path || sel.Path != eds.Current.Path {
				t.Fatalf("isActive %v, getOpenEditors' current %s, getCurrentSelection %s: want one window", active, eds.Current.Path, sel.Path)
			}
			if tt.want != "" && sel.Path != e.path(tt.want) {
				t.Fatalf("active editor %s, want %s", sel.Path, e.path(tt.want))
			}
		})
	}
}

// TestEditorColumns pins claude.editor's one byte <-> code-unit conversion.
func TestEditorColumns(t *testing.T) {
	e := startCtxEnv(t, nil)
	var got []int
	e.Eval(t, `local E = require("claude.editor")
local s = "é😀x" -- 2 + 4 + 1 bytes
return {
  E.units(s, 0), E.units(s, 2), E.units(s, 6), E.units(s, 7), E.units(s, 99),
  E.units(s, 4),                                   -- inside 😀: points at it
  E.units(s, 6, "utf-32"), E.units(s, 6, "utf-8"),
  E.units("\233ab", 3), E.units("\128ab", 3),      -- invalid bytes: one each
  E.byte_col(s, 1), E.byte_col(s, 3), E.byte_col(s, 2), E.byte_col(s, 99),
  E.byte_col(s, 2, "utf-32"),
}`, &got)
	want := []int{0, 1, 3, 4, 4, 1, 2, 6, 3, 3, 2, 6, 6, 7, 6}
	if mustJSON(got) != mustJSON(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
