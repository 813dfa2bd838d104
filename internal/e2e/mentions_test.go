//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// mentionLines is a file of numbered lines, so a mention's lines are easy
// to check.
func mentionLines(n int) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	return sb.String()
}

func TestCLIClaudeSendShowsMention(t *testing.T) {
	s := startSession(t, sessionOpts{files: map[string]string{"src/notes.txt": mentionLines(10)}})
	s.Exec(t, `_G.sent = {} vim.api.nvim_create_autocmd("User", { pattern = "ClaudeSent", callback = function(a) table.insert(_G.sent, a.data or vim.NIL) end })`)
	s.editInOtherWindow(t, "src/notes.txt")
	s.selInput(t, "5GVjj")
	s.selInput(t, ":ClaudeSend<CR>")
	s.waitScreen(t, 20*time.Second, "@src/notes.txt#L5-7")
	// The terminal has the focus, in terminal mode, ready for typing.
	var st struct {
		Buf  int    `json:"buf"`
		Mode string `json:"mode"`
	}
	s.Eval(t, `return { buf = vim.api.nvim_get_current_buf(), mode = vim.api.nvim_get_mode().mode }`, &st)
	if st.Buf != s.st.Terminal.Bufnr || st.Mode != "t" {
		t.Errorf("after :ClaudeSend: buffer %d mode %q, want the terminal %d in mode t", st.Buf, st.Mode, s.st.Terminal.Bufnr)
	}
	s.WaitFor(t, 10*time.Second, `#_G.sent == 1`, `return _G.sent`, "the ClaudeSent event")
}

// TestCLIClaudeSendStartsClaude: with nothing running, :ClaudeSend starts
// the server and the CLI like :ClaudeStart, and the mention waits for the
// CLI to connect.
func TestCLIClaudeSendStartsClaude(t *testing.T) {
	cli := clienv.Binary(t)
	api := fakeapi.New(t)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte(mentionLines(10)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := clienv.New(t, api.URL(), project)
	e := startEditor(t, editorOpts{
		dir:   project,
		env:   env.Map(),
		extra: fmt.Sprintf(`, terminal_cmd = { %q, "--permission-mode", "default" }, terminal = { width = 0.6 }`, cli),
	})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("edit notes.txt")`)
	e.selInput(t, "5GVjj:ClaudeSend<CR>")
	st := e.status(t)
	if !st.Running || st.Terminal == nil {
		t.Fatalf(":ClaudeSend did not start Claude: %+v notes %+v", st, e.notes(t))
	}
	killOnCleanup(t, st.Terminal.PID)
	killOnCleanup(t, e.hostPID(t))
	s := &session{editor: e, api: api, env: env, project: project, st: st}
	s.waitScreen(t, 60*time.Second, "@notes.txt#L5-7")
}

// mentionProject is a small project for the :ClaudeAdd tests.
func mentionProject(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"src/a.go":         mentionLines(10),
		"src/b.go":         mentionLines(3),
		"docs/readme.md":   "# docs\n",
		"docs/sub/deep.md": "deep\n",
		".env":             "SECRET=1\n",
		"with space.txt":   "x\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mentionEditor is Neovim with the server running in dir and a stand-in
// CLI connected and greeted (ready for mentions).
func mentionEditor(t *testing.T, dir, extra string) (*editor, *ideFrames) {
	t.Helper()
	e := startEditor(t, editorOpts{dir: dir, extra: extra})
	e.Exec(t, `vim.cmd("edit src/a.go")`)
	st := e.serve(t)
	f := e.connectIDE(t, st, 4242)
	// Nothing moves before it, so the first selection_changed is the
	// greeting: from then on mentions go straight to this CLI.
	f.next(t, "selection_changed")
	return e, f
}

type wireMention struct {
	FilePath  string `json:"filePath"`
	LineStart *int   `json:"lineStart"`
	LineEnd   *int   `json:"lineEnd"`
}

func (m wireMention) String() string {
	if m.LineStart == nil {
		return m.FilePath
	}
	return fmt.Sprintf("%s:%d-%d", m.FilePath, *m.LineStart, *m.LineEnd)
}

func (f *ideFrames) mention(t *testing.T) string {
	t.Helper()
	var m wireMention
	if err := json.Unmarshal(f.next(t, "at_mentioned"), &m); err != nil {
		t.Fatal(err)
	}
	return m.String()
}

type mentionCase struct {
	name    string
	lua     string   // run in Neovim (the current buffer is src/a.go at line 1)
	want    []string // mentions, "path" or "path:start-end" (0-based), in order
	wantErr string   // an error message containing this (and nothing sent)
}

// runMentionCases runs the cases in order. Nothing may arrive for a case
// that fails: the next case's mentions must come next.
func runMentionCases(t *testing.T, e *editor, f *ideFrames, cases []mentionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Logf("case %s", tc.name)
		e.Exec(t, `_G.notes = {}`)
		e.Exec(t, tc.lua)
		if tc.wantErr != "" {
			e.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, tc.name+": an error message")
			ns := e.notes(t)
			if !strings.Contains(ns[0].Msg, tc.wantErr) || ns[0].Level != 4 {
				t.Errorf("%s: messages %+v, want an error containing %q", tc.name, ns, tc.wantErr)
			}
		}
		for _, want := range tc.want {
			if got := f.mention(t); got != want {
				t.Fatalf("%s: at_mentioned %s, want %s", tc.name, got, want)
			}
		}
		e.Exec(t, `vim.cmd("silent! only") vim.cmd("edit! " .. vim.fn.fnameescape(...)) vim.api.nvim_win_set_cursor(0, {1, 0})`, filepath.Join(e.Dir, "src/a.go"))
	}
}

func TestClaudeAddAndSend(t *testing.T) {
	dir := mentionProject(t)
	e, f := mentionEditor(t, dir, "")
	a := filepath.Join(dir, "src/a.go")
	b := filepath.Join(dir, "src/b.go")
	docs := filepath.Join(dir, "docs")
	runMentionCases(t, e, f, []mentionCase{
		{"file", `vim.cmd("ClaudeAdd src/a.go")`, []string{a}, ""},
		{"one line", `vim.cmd("ClaudeAdd src/a.go 3")`, []string{a + ":2-2"}, ""},
		{"lines", `vim.cmd("ClaudeAdd src/a.go 3 5")`, []string{a + ":2-4"}, ""},
		{"end clamped to the file", `vim.cmd("ClaudeAdd src/a.go 8 500")`, []string{a + ":7-9"}, ""},
		{"directory", `vim.cmd("ClaudeAdd docs")`, []string{docs}, ""},
		{"path normalized", `vim.cmd("ClaudeAdd ./src/../docs/")`, []string{docs}, ""},
		{"space escaped", `vim.cmd([[ClaudeAdd with\ space.txt]])`, []string{filepath.Join(dir, "with space.txt")}, ""},
		{"several and a glob", `vim.cmd("ClaudeAdd docs src/*.go")`, []string{docs, a, b}, ""},
		{"environment variable", `vim.env.PROJ = vim.fn.getcwd() vim.cmd("ClaudeAdd $PROJ/src/b.go")`, []string{b}, ""},
		{"percent", `vim.cmd("ClaudeAdd %")`, []string{a}, ""},
		{"current file", `vim.cmd("ClaudeAdd")`, []string{a}, ""},
		{"current file, lines by number", `vim.cmd("ClaudeAdd 2 3")`, []string{a + ":1-2"}, ""},
		{"current file, range", `vim.cmd("3,4ClaudeAdd")`, []string{a + ":2-3"}, ""},
		{"missing path", `vim.cmd("ClaudeAdd nope.txt")`, nil, "no such file or directory: " + filepath.Join(dir, "nope.txt")},
		{"lines backwards", `vim.cmd("ClaudeAdd src/a.go 5 3")`, nil, "bad line range 5-3"},
		{"start past the end", `vim.cmd("ClaudeAdd src/a.go 50")`, nil, "line 50 is past the end of src/a.go (10 lines)"},
		{"lines of a directory", `vim.cmd("ClaudeAdd docs 1 2")`, nil, "is a directory"},
		{"lines for several", `vim.cmd("ClaudeAdd src/a.go src/b.go 1 2")`, nil, "line numbers apply to a single file"},
		{"denied", `vim.cmd("ClaudeAdd .env")`, nil, ".env matches security.deny"},
		{"denied among others", `vim.cmd("ClaudeAdd .env src/b.go")`, []string{b}, ".env matches security.deny"},
		{"send: current line", `vim.api.nvim_win_set_cursor(0, {4, 0}) vim.cmd("ClaudeSend")`, []string{a + ":3-3"}, ""},
		{"send: range", `vim.cmd("2,5ClaudeSend")`, []string{a + ":1-4"}, ""},
		{"send: visual mapping", `vim.keymap.set("x", "<F5>", "<Plug>(claude-send)") vim.api.nvim_input("6GVjj<F5>")`, []string{a + ":5-7"}, ""},
		{"send: a terminal", `vim.cmd("terminal") vim.cmd("ClaudeSend")`, nil, ":ClaudeSend: this buffer is not a file (terminal)"},
		{"send: help", `vim.cmd("help") vim.cmd("ClaudeSend")`, nil, ":ClaudeSend: this buffer is not a file (help)"},
		{"send: denied", `vim.cmd("edit .env") vim.cmd("ClaudeSend")`, nil, ".env matches security.deny"},
		{"send: unsaved changes warn", `vim.api.nvim_buf_set_lines(0, 0, 1, false, {"changed"}) vim.cmd("ClaudeSend")`, []string{a + ":0-0"}, ""},
	})
	// The last case warned about unsaved changes.
	var warned bool
	e.Eval(t, `for _, n in ipairs(_G.notes) do if n.msg:find("unsaved changes", 1, true) and n.level == 3 then return true end end return false`, &warned)
	if !warned {
		t.Errorf("no warning about unsaved changes: %+v", e.notes(t))
	}
}

// TestClaudeSendQueuesUntilConnect: mentions made before a CLI connects
// wait for it, are delivered on connect and fire ClaudeSent; if none
// connects in time the user is told which were not delivered.
func TestClaudeSendQueuesUntilConnect(t *testing.T) {
	dir := mentionProject(t)
	e := startEditor(t, editorOpts{dir: dir})
	st := e.serve(t)
	e.Exec(t, `_G.sent = {} vim.api.nvim_create_autocmd("User", { pattern = "ClaudeSent", callback = function(a) table.insert(_G.sent, a.data or vim.NIL) end })`)
	e.Exec(t, `vim.cmd("edit src/a.go") _G.notes = {} vim.cmd("2,3ClaudeSend")`)
	e.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, "the queued message")
	if ns := e.notes(t); !strings.Contains(ns[0].Msg, "no Claude CLI is connected yet; @src/a.go#L2-3 will be delivered when one connects") {
		t.Fatalf("messages %+v", ns)
	}
	f := e.connectIDE(t, st, 4242)
	f.next(t, "selection_changed")
	if got, want := f.mention(t), filepath.Join(dir, "src/a.go")+":1-2"; got != want {
		t.Fatalf("at_mentioned %s, want %s", got, want)
	}
	e.WaitFor(t, 10*time.Second, `#_G.sent == 1`, `return _G.sent`, "ClaudeSent")

	// Nobody connects in time.
	e2 := startEditor(t, editorOpts{dir: dir})
	e2.serve(t)
	e2.Exec(t, `require("claude.mentions")._queue_timeout_ms = 300
vim.cmd("edit src/b.go") vim.cmd("ClaudeAdd 1 2") vim.cmd("3ClaudeSend")`)
	const want = "no Claude CLI connected within 0.3 s; not delivered: @src/b.go#L1-2, @src/b.go#L3"
	e2.WaitFor(t, 10*time.Second, fmt.Sprintf(`(function() for _, n in ipairs(_G.notes) do if n.msg:find(%q, 1, true) and n.level == 3 then return true end end end)()`, want),
		`return _G.notes`, "the undelivered message")
}

// explorerFixtures reproduce, for the explorers no registry here offers,
// the buffer contract :ClaudeAdd relies on: the filetype, the buffer name,
// and each plugin's public function that maps a line to its entry
// (nvim-tree's api.tree.get_node_under_cursor, neo-tree's manager state
// tree:get_node(line), oil's get_current_dir/get_entry_on_line, mini.files'
// get_fs_entry). _G.fixture[buf][line] holds the entry, in each plugin's
// own shape.
var explorerFixtures = map[string]string{
	"lua/nvim-tree/api.lua": `local M = { tree = {} }
function M.tree.get_node_under_cursor()
  local buf = vim.api.nvim_get_current_buf()
  return (_G.fixture[buf] or {})[vim.api.nvim_win_get_cursor(0)[1]]
end
return M`,
	"lua/neo-tree/sources/manager.lua": `local M = {}
function M.get_state(source)
  local buf = vim.api.nvim_get_current_buf()
  local nodes = _G.fixture[buf] or {}
  return { name = source, tree = { get_node = function(_, id)
    local line = type(id) == "number" and id or vim.api.nvim_win_get_cursor(0)[1]
    return nodes[line]
  end } }
end
return M`,
	"lua/oil/init.lua": `local M = {}
function M.get_current_dir(buf)
  return vim.api.nvim_buf_get_name(buf or 0):match("^oil://(.*)$")
end
function M.get_entry_on_line(buf, lnum)
  if buf == 0 then buf = vim.api.nvim_get_current_buf() end
  return (_G.fixture[buf] or {})[lnum]
end
return M`,
	"lua/mini/files.lua": `local M = {}
function M.get_fs_entry(buf, line)
  if buf == nil or buf == 0 then buf = vim.api.nvim_get_current_buf() end
  line = line or vim.api.nvim_win_get_cursor(0)[1]
  return (_G.fixture[buf] or {})[line]
end
return M`,
}

// makeExplorer is Lua that opens an explorer buffer: make(filetype, name,
// lines, entries by line).
const makeExplorer = `_G.fixture = _G.fixture or {}
_G.make_explorer = function(ft, name, lines, entries)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.bo[b].filetype == ft then vim.api.nvim_buf_delete(b, { force = true }) end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  _G.fixture[buf] = {}
  for l, e in pairs(entries) do _G.fixture[buf][tonumber(l)] = e end
  vim.api.nvim_set_current_buf(buf)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].filetype = ft
  return buf
end`

func TestClaudeAddExplorers(t *testing.T) {
	dir := mentionProject(t)
	rtp := t.TempDir()
	for name, src := range explorerFixtures {
		p := filepath.Join(rtp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, f := mentionEditor(t, dir, "")
	e.Exec(t, `vim.opt.rtp:prepend(...) `+makeExplorer+`
vim.keymap.set("x", "<F5>", "<Plug>(claude-send)")`, rtp)
	p := func(rel string) string { return filepath.Join(dir, rel) }

	// Each explorer shows: a header line, docs/, src/a.go, .env, src/b.go.
	// The entry tables are in each plugin's shape.
	explorers := []struct {
		name  string
		setup string
	}{
		{"nvim-tree", fmt.Sprintf(`make_explorer("NvimTree", "NvimTree_1", { "  ~/project", "  docs", "    a.go", "  .env", "    b.go" }, {
  ["1"] = { name = ".." },
  ["2"] = { name = "docs", type = "directory", absolute_path = %q },
  ["3"] = { name = "a.go", type = "file", absolute_path = %q },
  ["4"] = { name = ".env", type = "file", absolute_path = %q },
  ["5"] = { name = "b.go", type = "file", absolute_path = %q },
})`, p("docs"), p("src/a.go"), p(".env"), p("src/b.go"))},
		{"neo-tree", fmt.Sprintf(`local b = make_explorer("neo-tree", "neo-tree filesystem [1]", { " project", " docs", "  a.go", " .env", "  b.go" }, {
  ["1"] = { type = "message", name = "project" },
  ["2"] = { type = "directory", path = %q },
  ["3"] = { type = "file", path = %q },
  ["4"] = { type = "file", path = %q },
  ["5"] = { type = "file", get_id = function() return %q end },
})
vim.b[b].neo_tree_source = "filesystem"`, p("docs"), p("src/a.go"), p(".env"), p("src/b.go"))},
		{"oil", fmt.Sprintf(`make_explorer("oil", "oil://%s/", { "../", "docs/", "src/a.go", ".env", "src/b.go" }, {
  ["2"] = { name = "docs", type = "directory" },
  ["3"] = { name = "src/a.go", type = "file" },
  ["4"] = { name = ".env", type = "file" },
  ["5"] = { name = "src/b.go", type = "file" },
})`, dir)},
		{"mini.files", fmt.Sprintf(`make_explorer("minifiles", "minifiles://1/%s", { "project", "docs", "a.go", ".env", "b.go" }, {
  ["2"] = { fs_type = "directory", name = "docs", path = %q },
  ["3"] = { fs_type = "file", name = "a.go", path = %q },
  ["4"] = { fs_type = "file", name = ".env", path = %q },
  ["5"] = { fs_type = "file", name = "b.go", path = %q },
})`, dir, p("docs"), p("src/a.go"), p(".env"), p("src/b.go"))},
	}
	for _, ex := range explorers {
		t.Run(ex.name, func(t *testing.T) {
			at := func(line int, cmd string) string {
				return ex.setup + fmt.Sprintf(` vim.api.nvim_win_set_cursor(0, {%d, 0}) %s`, line, cmd)
			}
			runMentionCases(t, e, f, []mentionCase{
				{"entry under the cursor", at(3, `vim.cmd("ClaudeAdd")`), []string{p("src/a.go")}, ""},
				{"a directory", at(2, `vim.cmd("ClaudeAdd")`), []string{p("docs")}, ""},
				{"no entry on the line", at(1, `vim.cmd("ClaudeAdd")`), nil, "no file or directory under the cursor"},
				{"a range: entries only, denied refused", at(1, `vim.cmd("1,5ClaudeAdd")`), []string{p("docs"), p("src/a.go"), p("src/b.go")}, ".env matches security.deny"},
				{":ClaudeSend adds the entry", at(5, `vim.cmd("ClaudeSend")`), []string{p("src/b.go")}, ""},
				{"the visual mapping", at(2, `vim.api.nvim_input("Vj<F5>")`), []string{p("docs"), p("src/a.go")}, ""},
				{"a path still wins", at(3, `vim.cmd("ClaudeAdd src/b.go")`), []string{p("src/b.go")}, ""},
			})
		})
	}
}

// TestClaudeAddNetrw: netrw ships with Neovim, so it is tested for real, in
// each of its listing styles.
func TestClaudeAddNetrw(t *testing.T) {
	dir := mentionProject(t)
	e, f := mentionEditor(t, dir, "")
	e.Exec(t, `vim.keymap.set("x", "<F5>", "<Plug>(claude-send)")`)
	p := func(rel string) string { return filepath.Join(dir, rel) }
	// open lists the project in style, then puts the cursor on the line
	// matching pat (and on the name in it).
	open := func(style int, pat, then string) string {
		return fmt.Sprintf(`for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.bo[b].filetype == "netrw" then vim.cmd("silent! bwipeout! " .. b) end
end
vim.g.netrw_liststyle = %d vim.w.netrw_liststyle = nil
vim.cmd("edit " .. vim.fn.fnameescape(%q))
local l = vim.fn.search(%q, "w") assert(l > 0, "no line matches " .. %q)
%s`, style, dir, pat, pat, then)
	}
	for _, style := range []struct {
		n    int
		name string
		src  string // pattern of the src/ entry
		env  string
	}{{0, "thin", `^src/$`, `^\.env$`}, {1, "long", `^src/ `, `^\.env `}, {2, "wide", `src/`, `\.env`}, {3, "tree", `^| src/$`, `^| \.env$`}} {
		t.Run(style.name, func(t *testing.T) {
			cases := []mentionCase{
				{"directory", open(style.n, style.src, `vim.cmd("ClaudeAdd")`), []string{p("src")}, ""},
				{"file", open(style.n, `with space`, `vim.cmd("ClaudeAdd")`), []string{p("with space.txt")}, ""},
				{"denied", open(style.n, style.env, `vim.cmd("ClaudeAdd")`), nil, ".env matches security.deny"},
				{"banner", open(style.n, `Netrw Directory Listing`, `vim.cmd("ClaudeAdd")`), nil, "no file or directory under the cursor"},
				{"parent", open(style.n, `^\.\./`, `vim.cmd("ClaudeAdd")`), []string{filepath.Dir(dir)}, ""},
			}
			if style.n != 2 { // wide lists several entries on one line
				cases = append(cases,
					mentionCase{"range", open(style.n, style.src, `vim.cmd(".-1,.ClaudeAdd")`), []string{p("docs"), p("src")}, ""},
					mentionCase{"visual mapping", open(style.n, style.src, `vim.api.nvim_input("kVj<F5>")`), []string{p("docs"), p("src")}, ""},
				)
			}
			if style.n == 3 {
				// Expanded subdirectories: the entry's path comes from the tree.
				cases = append(cases, mentionCase{"nested", open(3, `^| docs/$`, `local cr = vim.api.nvim_replace_termcodes("<CR>", true, false, true)
vim.api.nvim_feedkeys(cr, "mx", false)
assert(vim.fn.search("^| | sub/$", "w") > 0, "docs/ did not expand")
vim.api.nvim_feedkeys(cr, "mx", false)`) + ` vim.fn.search("deep.md", "w") vim.cmd("ClaudeAdd")`, []string{p("docs/sub/deep.md")}, ""})
			}
			runMentionCases(t, e, f, cases)
		})
	}
}
