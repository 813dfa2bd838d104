package nvimbridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// diffEnv is a Neovim with the plugin set up like a user's: a file in the
// editor window and the Claude terminal (running cat) split on the right.
type diffEnv struct {
	*nvimtest.Nvim
	b         *nvimbridge.Bridge
	decisions chan nvimbridge.DiffDecision
	file      string // main.txt in the project
	seq       int
	// gone lists diffs the host no longer waits for (set before the
	// decision): their decision is answered pending=false.
	gone sync.Map // id -> true
}

type diffEnvOpts struct {
	diff     string            // setup{diff = …} fields
	files    map[string]string // more project files
	noTerm   bool              // no Claude terminal
	contents string            // main.txt; default diffText
}

const diffText = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"

func startDiffEnv(t *testing.T, o diffEnvOpts) *diffEnv {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.contents == "" {
		o.contents = diffText
	}
	files := map[string]string{"main.txt": o.contents}
	for k, v := range o.files {
		files[k] = v
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	init := `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({ terminal_cmd = { "cat" }, diff = { ` + o.diff + ` } })
vim.cmd("edit main.txt")`
	if !o.noTerm {
		init += "\nrequire('claude.terminal').open(1, {}, false)"
	}
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	e := &diffEnv{Nvim: n, b: b, decisions: make(chan nvimbridge.DiffDecision, 16), file: filepath.Join(dir, "main.txt")}
	if err := b.HandleRequest(nvimbridge.DiffDecisionMethod, func(ctx context.Context, raw json.RawMessage) (any, error) {
		d, err := nvimbridge.DecodeDiffDecision(ctx, raw)
		if err != nil {
			t.Errorf("bad decision %s: %v", raw, err)
			return nil, err
		}
		e.decisions <- d
		return nvimbridge.DiffDecisionReply{Pending: !e.isGone(d.ID)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Record the User events.
	n.Exec(t, `_G.events = {}
for _, ev in ipairs({ "ClaudeDiffOpened", "ClaudeDiffClosed" }) do
  vim.api.nvim_create_autocmd("User", { pattern = ev, callback = function(a)
    table.insert(_G.events, { ev = ev, data = a.data or vim.NIL })
  end })
end`)
	return e
}

// open opens a diff for path with contents and returns its id and view.
func (e *diffEnv) open(t *testing.T, path, contents string) (string, nvimbridge.DiffView) {
	t.Helper()
	e.seq++
	id := "d" + string(rune('0'+e.seq))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := e.b.OpenDiff(ctx, nvimbridge.DiffRequest{
		ID:       id,
		TabName:  "✻ [Claude Code] " + filepath.Base(path) + " (" + id + ") ⧉",
		OldPath:  path,
		NewPath:  path,
		Contents: contents,
	})
	if err != nil {
		t.Fatalf("OpenDiff: %v", err)
	}
	return id, v
}

func (e *diffEnv) isGone(id string) bool {
	_, ok := e.gone.Load(id)
	return ok
}

func (e *diffEnv) decision(t *testing.T) nvimbridge.DiffDecision {
	t.Helper()
	select {
	case d := <-e.decisions:
		return d
	case <-time.After(10 * nvimtest.Slack * time.Second):
		t.Fatal("no decision arrived")
	}
	return nvimbridge.DiffDecision{}
}

func (e *diffEnv) noDecision(t *testing.T) {
	t.Helper()
	// A decision is sent synchronously from the command that makes it; a
	// round trip to Neovim flushes anything on its way.
	e.Exec(t, `return 1`)
	select {
	case d := <-e.decisions:
		t.Fatalf("unexpected decision %+v", d)
	default:
	}
}

// waitClosed waits until the diff's proposal buffer is gone.
func (e *diffEnv) waitClosed(t *testing.T, v nvimbridge.DiffView) {
	t.Helper()
	e.WaitFor(t, 10*time.Second, "not vim.api.nvim_buf_is_valid("+diffItoa(v.ProposalBuf)+")",
		diffLayoutLua, "the diff to close")
}

func diffItoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// diffLayoutState is what a user sees of the window layout: the current tab's
// windows with their buffers, sizes and diff-related options, the focus
// and the buffer list.
type diffLayoutState struct {
	Tabs int              `json:"tabs"`
	Tab  int              `json:"tab"`
	Win  int              `json:"win"`
	Mode string           `json:"mode"`
	Wins []diffLayoutWin  `json:"wins"`
	Bufs []diffLayoutBuf  `json:"bufs"`
	Alt  string           `json:"alt"`
	Opts []diffLayoutOpts `json:"opts"`
}

type diffLayoutWin struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Diff   bool   `json:"diff"`
	Cursor []int  `json:"cursor"`
}

type diffLayoutBuf struct {
	Name   string `json:"name"`
	Listed bool   `json:"listed"`
	Loaded bool   `json:"loaded"`
}

type diffLayoutOpts struct {
	Foldenable bool   `json:"foldenable"`
	Foldmethod string `json:"foldmethod"`
	Scrollbind bool   `json:"scrollbind"`
	Cursorbind bool   `json:"cursorbind"`
	Wrap       bool   `json:"wrap"`
	Foldcolumn string `json:"foldcolumn"`
}

const diffLayoutLua = `local api = vim.api
local out = { tabs = #api.nvim_list_tabpages(), tab = api.nvim_tabpage_get_number(0), win = api.nvim_get_current_win(),
  mode = api.nvim_get_mode().mode, wins = {}, bufs = {}, opts = {}, alt = vim.fn.bufname("#") }
for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
  local b = api.nvim_win_get_buf(w)
  table.insert(out.wins, { id = w, name = vim.fn.bufname(b), width = api.nvim_win_get_width(w),
    height = api.nvim_win_get_height(w), diff = vim.wo[w].diff, cursor = api.nvim_win_get_cursor(w) })
  table.insert(out.opts, { foldenable = vim.wo[w].foldenable, foldmethod = vim.wo[w].foldmethod,
    scrollbind = vim.wo[w].scrollbind, cursorbind = vim.wo[w].cursorbind, wrap = vim.wo[w].wrap,
    foldcolumn = vim.wo[w].foldcolumn })
end
for _, b in ipairs(api.nvim_list_bufs()) do
  table.insert(out.bufs, { name = vim.fn.bufname(b), listed = vim.bo[b].buflisted, loaded = api.nvim_buf_is_loaded(b) })
end
return out`

func (e *diffEnv) layout(t *testing.T) diffLayoutState {
	t.Helper()
	var l diffLayoutState
	e.Eval(t, diffLayoutLua, &l)
	return l
}

// waitSameLayout waits (a few seconds at most) for the layout to be
// before's again: a window closed by the user (:bwipeout!) is restored from
// Neovim's own events, which may run a moment after the diff is seen closed.
func (e *diffEnv) waitSameLayout(t *testing.T, what string, before diffLayoutState) {
	t.Helper()
	deadline := time.Now().Add(5 * nvimtest.Slack * time.Second)
	for {
		after := e.layout(t)
		if sameLayout(before, after) || time.Now().After(deadline) {
			diffSameLayout(t, what, before, after)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameLayout compares two layouts, but for a terminal window's cursor in
// Terminal mode: that is where the job's screen puts it (it moves as the
// terminal draws), not ours to keep.
func sameLayout(before, after diffLayoutState) bool {
	if before.Mode == "t" && after.Mode == "t" {
		for _, st := range []*diffLayoutState{&before, &after} {
			wins := append([]diffLayoutWin(nil), st.Wins...)
			for i := range wins {
				if strings.HasPrefix(wins[i].Name, "term://") {
					wins[i].Cursor = nil
				}
			}
			st.Wins = wins
		}
	}
	return reflect.DeepEqual(before, after)
}

func diffSameLayout(t *testing.T, what string, before, after diffLayoutState) {
	t.Helper()
	if !sameLayout(before, after) {
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		t.Fatalf("%s: layout not restored\nbefore: %s\nafter:  %s", what, b, a)
	}
}

func TestDiffAcceptByWrite(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	before := e.layout(t)
	proposal := strings.Replace(diffText, "three", "THREE", 1)
	_, v := e.open(t, e.file, proposal)
	during := e.layout(t)
	if len(during.Wins) != len(before.Wins)+1 {
		t.Fatalf("diff layout: %+v", during)
	}
	var diffWins int
	for _, w := range during.Wins {
		if w.Diff {
			diffWins++
		}
	}
	if diffWins != 2 {
		t.Fatalf("want 2 diff windows, got %+v", during.Wins)
	}
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 5, 6, false, { "SIX (edited)" }) vim.cmd("write")`)
	d := e.decision(t)
	want := strings.Replace(proposal, "six", "SIX (edited)", 1)
	if d.Decision != "accept" || d.Contents == nil || *d.Contents != want {
		t.Fatalf("decision = %+v, want accept with %q", d, want)
	}
	e.waitClosed(t, v)
	diffSameLayout(t, "after :w", before, e.layout(t))
	if b, _ := os.ReadFile(e.file); string(b) != diffText {
		t.Fatalf("the file was written: %q", b)
	}
}

// proposalWin / origWin find the diff's windows in the current tab.
func (e *diffEnv) winOf(t *testing.T, buf int) int {
	t.Helper()
	var w int
	e.Eval(t, `for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  if vim.api.nvim_win_get_buf(w) == ... then return w end
end
return 0`, &w, buf)
	if w == 0 {
		t.Fatalf("no window shows buffer %d", buf)
	}
	return w
}

func (e *diffEnv) notes(t *testing.T) string {
	t.Helper()
	var ns []struct {
		Msg string `json:"msg"`
	}
	e.Eval(t, `return _G.notes`, &ns)
	var sb strings.Builder
	for _, n := range ns {
		sb.WriteString(n.Msg + "\n")
	}
	return sb.String()
}

// A proposal reaches Neovim as a file the host wrote, or as a string when
// no file can be written: both must give the same buffer, byte for byte.
func TestDiffContentsRoundTrip(t *testing.T) {
	for _, mode := range []string{"file", "string"} {
		t.Run(mode, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			if mode == "string" {
				nvimbridge.UseStringProposals(e.b)
			}
			testDiffContentsRoundTrip(t, e, mode == "file")
			if dir := nvimbridge.ProposalDir(e.b); dir != "" {
				// What is left is what the watches for the CLI's write own
				// (the accepted bytes, compared in chunks); it goes with them.
				var watched []struct {
					File string `json:"file"`
				}
				e.Eval(t, `return require("claude.diff")._watches()`, &watched)
				owned := map[string]bool{}
				for _, w := range watched {
					owned[filepath.Base(w.File)] = true
				}
				left, _ := os.ReadDir(dir)
				for _, f := range left {
					if !owned[f.Name()] {
						t.Errorf("proposal file %s left after its diff closed, and no watch owns it", f.Name())
					}
				}
				if mode == "file" && len(owned) == 0 {
					t.Errorf("no watch owns an accepted file: the accepted text is held as a string again")
				}
				e.Exec(t, `require("claude.diff")._stop_watches()`)
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Errorf("proposal files left after their watches ended: %v", left)
				}
				_ = e.b.Close()
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("proposal directory %s still there after Close (err %v)", dir, err)
				}
			} else if mode == "file" {
				t.Error("no proposal file was written")
			}
		})
	}
}

// testDiffContentsRoundTrip: the proposal reaches the buffer and the
// accepted text the host, byte for byte; byFile says both went as files
// (the proposal read with :0read ++bin, the accepted text written by :write
// and read by the host), not as strings across the channel.
func testDiffContentsRoundTrip(t *testing.T, e *diffEnv, byFile bool) {
	tests := []struct {
		name     string
		contents string
		ff       string
		eol      bool
		lines    []string
	}{
		{"plain", "a\nb\n", "unix", true, []string{"a", "b"}},
		{"no final newline", "a\nb", "unix", false, []string{"a", "b"}},
		{"CRLF", "a\r\nb\r\n", "dos", true, []string{"a", "b"}},
		{"CRLF without final newline", "a\r\nb", "dos", false, []string{"a", "b"}},
		{"mixed endings stay visible", "a\r\nb\nc\n", "unix", true, []string{"a\r", "b", "c"}},
		{"empty", "", "unix", false, []string{""}},
		{"one newline", "\n", "unix", true, []string{""}},
		{"blank lines at the end", "a\n\n\n", "unix", true, []string{"a", "", ""}},
		{"multibyte", "héllo wörld €\n日本語のテキスト\n😀 emoji\tand tab  \n", "unix", true,
			[]string{"héllo wörld €", "日本語のテキスト", "😀 emoji\tand tab  "}},
		{"lone CR", "a\rb\n", "unix", true, []string{"a\rb"}},
		{"NUL byte", "a\x00b\n", "unix", true, []string{"a\x00b"}},
		{"byte order mark kept", "\ufeffbom\n", "unix", true, []string{"\ufeffbom"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(e.Dir, "new"+diffItoa(i)+".txt")
			_, v := e.open(t, path, tt.contents)
			var got struct {
				Lines []string `json:"lines"`
				FF    string   `json:"ff"`
				EOL   bool     `json:"eol"`
			}
			e.Eval(t, `local b = ... return { lines = vim.api.nvim_buf_get_lines(b, 0, -1, false), ff = vim.bo[b].fileformat, eol = vim.bo[b].eol }`, &got, v.ProposalBuf)
			if !reflect.DeepEqual(got.Lines, tt.lines) || got.FF != tt.ff || got.EOL != tt.eol {
				t.Fatalf("proposal buffer = %q %s eol %v, want lines %q ff %s eol %v", got.Lines, got.FF, got.EOL, tt.lines, tt.ff, tt.eol)
			}
			e.Exec(t, `vim.cmd("ClaudeDiffAccept")`)
			d := e.decision(t)
			if d.Decision != "accept" || d.Contents == nil || *d.Contents != tt.contents {
				t.Fatalf("accepted %+v, want exactly %q", d, tt.contents)
			}
			if (d.ContentsFile != "") != byFile {
				t.Fatalf("accepted text came in file %q; want it in a file: %v", d.ContentsFile, byFile)
			}
			e.waitClosed(t, v)
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("the new file was written (err %v)", err)
			}
		})
	}

	// What the user changes in the options is what the file gets.
	t.Run("user options", func(t *testing.T) {
		for _, c := range []struct{ cmd, want string }{
			{"setlocal ff=dos", "a\r\nb\r\n"},
			{"setlocal noeol", "a\nb"},
			{"setlocal noeol fixeol", "a\nb\n"},
			{"setlocal ff=mac", "a\rb\r"},
			{"%delete", ""},
		} {
			_, v := e.open(t, filepath.Join(e.Dir, "opts.txt"), "a\nb\n")
			e.Exec(t, `vim.cmd(...) vim.cmd("write")`, c.cmd)
			if d := e.decision(t); d.Contents == nil || *d.Contents != c.want || (d.ContentsFile != "") != byFile {
				t.Fatalf("%s: accepted %+v, want %q (in a file: %v)", c.cmd, d, c.want, byFile)
			}
			e.waitClosed(t, v)
		}
	})
}

func TestDiffAcceptRoutes(t *testing.T) {
	proposal := strings.Replace(diffText, "three", "THREE", 1)
	tests := []struct {
		name string
		lua  string // run with the proposal window current
		away bool   // the cursor left the diff before the decision: it stays where it went
	}{
		{":w", `vim.cmd("write")`, false},
		{":w!", `vim.cmd("write!")`, false},
		{":wq", `vim.cmd("wq")`, false},
		{":x after an edit", `vim.api.nvim_buf_set_lines(0, 0, 1, false, { "one" }) vim.cmd("x")`, false},
		{":ClaudeDiffAccept in the proposal", `vim.cmd("ClaudeDiffAccept")`, false},
		{":ClaudeDiffAccept on the current side", `vim.cmd("wincmd h") vim.cmd("ClaudeDiffAccept")`, false},
		{":ClaudeDiffAccept from the terminal (one diff open)", `vim.cmd("wincmd l") vim.cmd("wincmd l") vim.cmd("ClaudeDiffAccept")`, true},
		{"mapping in the proposal", `vim.api.nvim_feedkeys("\\ca", "mx", false)`, false},
		{"mapping on the current side", `vim.cmd("wincmd h") vim.api.nvim_feedkeys("\\ca", "mx", false)`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			before := e.layout(t)
			_, v := e.open(t, e.file, proposal)
			var cur int
			e.Eval(t, `return vim.api.nvim_get_current_buf()`, &cur)
			if cur != v.ProposalBuf {
				t.Fatalf("the cursor is in buffer %d, want the proposal %d", cur, v.ProposalBuf)
			}
			e.Exec(t, tt.lua)
			d := e.decision(t)
			if d.Decision != "accept" || d.Contents == nil || *d.Contents != proposal {
				t.Fatalf("decision %+v, want accept of the proposal", d)
			}
			e.waitClosed(t, v)
			e.noDecision(t)
			after := e.layout(t)
			if tt.away {
				if after.Win != before.Wins[1].ID {
					t.Fatalf("focus moved from the terminal to %d", after.Win)
				}
				after.Win, after.Mode = before.Win, before.Mode
			}
			diffSameLayout(t, tt.name, before, after)
			if b, _ := os.ReadFile(e.file); string(b) != diffText {
				t.Fatalf("the file was written: %q", b)
			}
			var maps int
			e.Eval(t, `return #vim.tbl_filter(function(m) return m.lhs:find("ca") end, vim.api.nvim_buf_get_keymap(0, "n"))`, &maps)
			if maps != 0 {
				t.Fatalf("the accept mapping was left on the file's buffer")
			}
		})
	}
}

func TestDiffRejectRoutes(t *testing.T) {
	proposal := strings.Replace(diffText, "three", "THREE", 1)
	tests := []struct {
		name string
		diff string
		lua  string // run with the proposal window current
	}{
		{":q", "", `vim.cmd("quit")`},
		{":q! after an edit", "", `vim.api.nvim_buf_set_lines(0, 0, 1, false, { "x" }) vim.cmd("quit!")`},
		{":close", "", `vim.cmd("close")`},
		{":bwipeout!", "", `vim.cmd("bwipeout!")`},
		{":bdelete!", "", `vim.cmd("bdelete!")`},
		{"another buffer in its window", "", `vim.cmd("buffer main.txt")`},
		{":ClaudeDiffReject", "", `vim.cmd("ClaudeDiffReject")`},
		{":ClaudeDiffReject on the current side", "", `vim.cmd("wincmd h") vim.cmd("ClaudeDiffReject")`},
		{"mapping", "", `vim.api.nvim_feedkeys("\\cr", "mx", false)`},
		{"custom mapping", `keymaps = { reject = "gR", accept = false }`, `vim.api.nvim_feedkeys("gR", "mx", false)`},
		{":tabclose of a diff tab", "open_in_new_tab = true", `vim.cmd("tabclose")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{diff: tt.diff})
			before := e.layout(t)
			_, v := e.open(t, e.file, proposal)
			e.Exec(t, tt.lua)
			d := e.decision(t)
			if d.Decision != "reject" || d.Contents != nil {
				t.Fatalf("decision %+v, want reject", d)
			}
			e.waitClosed(t, v)
			e.noDecision(t)
			e.waitSameLayout(t, tt.name, before)
		})
	}
}

func TestDiffCustomKeymapsOff(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{diff: `keymaps = { accept = false, reject = false, accept_hunk = false, reject_hunk = false }`})
	_, v := e.open(t, e.file, "x\n")
	var n int
	e.Eval(t, `return #vim.api.nvim_buf_get_keymap(..., "n")`, &n, v.ProposalBuf)
	if n != 0 {
		t.Fatalf("%d mappings on the proposal with keymaps off", n)
	}
}

func TestDiffUserMappingKept(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	e.Exec(t, `vim.keymap.set("n", "<leader>ca", "<cmd>let g:mine = 1<cr>", { buffer = 0 })`)
	_, v := e.open(t, e.file, "x\n")
	e.Exec(t, `vim.cmd("wincmd h") vim.api.nvim_feedkeys("\\ca", "mx", false)`)
	e.noDecision(t)
	var mine int
	e.Eval(t, `return vim.g.mine`, &mine)
	if mine != 1 {
		t.Fatal("the user's own buffer-local mapping was replaced")
	}
	e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
	e.decision(t)
	e.waitClosed(t, v)
	e.Eval(t, `return vim.fn.maparg("<leader>ca", "n", false, true).buffer`, &mine)
	if mine != 1 {
		t.Fatal("the user's own buffer-local mapping was removed")
	}
}

func TestDiffPartialAccept(t *testing.T) {
	proposal := strings.NewReplacer("two", "TWO", "eleven", "ELEVEN").Replace(diffText)
	tests := []struct{ name, lua, want string }{
		// In the proposal: take the current text back for the second hunk.
		{"do in the proposal", `vim.api.nvim_win_set_cursor(0, { 11, 0 }) vim.cmd("diffget")`,
			strings.Replace(diffText, "two", "TWO", 1)},
		// On the current side: push the current text into the first hunk.
		{"dp on the current side", `vim.cmd("wincmd h") vim.api.nvim_win_set_cursor(0, { 2, 0 }) vim.cmd("diffput")`,
			strings.Replace(diffText, "eleven", "ELEVEN", 1)},
		{"do by keys", `vim.api.nvim_win_set_cursor(0, { 2, 0 }) vim.api.nvim_feedkeys("do", "mx", false)`,
			strings.Replace(diffText, "eleven", "ELEVEN", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			_, v := e.open(t, e.file, proposal)
			e.Exec(t, tt.lua)
			e.Exec(t, `vim.cmd("ClaudeDiffAccept")`)
			d := e.decision(t)
			if d.Contents == nil || *d.Contents != tt.want {
				t.Fatalf("accepted %+v, want %q", d, tt.want)
			}
			e.waitClosed(t, v)
			// The user's file buffer is untouched (diffput changes only the proposal).
			if got := e.Lines(t, 1) + "\n"; got != diffText {
				t.Fatalf("the file's buffer changed: %q", got)
			}
		})
	}
}

func TestDiffNewFile(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	before := e.layout(t)
	path := filepath.Join(e.Dir, "sub", "new.go")
	_, v := e.open(t, path, "package sub\n")
	if !v.NewFile || v.Modified {
		t.Fatalf("view = %+v, want a new file", v)
	}
	var cur struct {
		Lines []string `json:"lines"`
		Ft    string   `json:"ft"`
		PFt   string   `json:"pft"`
	}
	e.Eval(t, `local o, p = ... return { lines = vim.api.nvim_buf_get_lines(o, 0, -1, false), ft = vim.bo[o].filetype, pft = vim.bo[p].filetype }`,
		&cur, v.OriginalBuf, v.ProposalBuf)
	if len(cur.Lines) != 1 || cur.Lines[0] != "" || cur.PFt != "go" {
		t.Fatalf("current side %+v: want empty, proposal filetype go", cur)
	}
	e.Exec(t, `vim.cmd("write")`)
	if d := e.decision(t); d.Contents == nil || *d.Contents != "package sub\n" {
		t.Fatalf("decision %+v", d)
	}
	e.waitClosed(t, v)
	diffSameLayout(t, "new file", before, e.layout(t))
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatal("we created the directory; the CLI does that")
	}
}

func TestDiffModifiedBuffer(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, 1, false, { "ONE (unsaved)" })`)
	proposal := strings.Replace(diffText, "twelve", "TWELVE", 1) // Claude edits the file on disk
	_, v := e.open(t, e.file, proposal)
	if !v.Modified || v.OriginalBuf != 1 {
		t.Fatalf("view = %+v, want the modified buffer 1 as the current side", v)
	}
	if first := strings.SplitN(e.Lines(t, v.OriginalBuf), "\n", 2)[0]; first != "ONE (unsaved)" {
		t.Fatalf("the current side shows %q, want the buffer's unsaved text", first)
	}
	if n := e.notes(t); !strings.Contains(n, "unsaved changes") || !strings.Contains(n, "main.txt") {
		t.Fatalf("the user was not told the diff is against unsaved text: %q", n)
	}
	e.Exec(t, `vim.cmd("write")`)
	if d := e.decision(t); d.Contents == nil || *d.Contents != proposal {
		t.Fatalf("decision %+v", d)
	}
	e.waitClosed(t, v)
	// The CLI writes the file: the modified buffer is not reloaded over the
	// user's work, and they are told.
	if err := os.WriteFile(e.file, []byte(proposal), 0o644); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(t, 10*time.Second, `vim.tbl_count(vim.tbl_filter(function(n) return n.msg:find("not reloaded") end, _G.notes)) > 0`,
		`return _G.notes`, "the not-reloaded notice")
	var st struct {
		First    string `json:"first"`
		Modified bool   `json:"modified"`
	}
	e.Eval(t, `return { first = vim.api.nvim_buf_get_lines(1, 0, 1, false)[1], modified = vim.bo[1].modified }`, &st)
	if st.First != "ONE (unsaved)" || !st.Modified {
		t.Fatalf("the user's unsaved buffer changed: %+v", st)
	}
}

func TestDiffReloadAfterCLIWrite(t *testing.T) {
	for _, shown := range []bool{true, false} {
		name := map[bool]string{true: "shown", false: "hidden buffer"}[shown]
		t.Run(name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{files: map[string]string{"other.txt": "other\n"}})
			if !shown {
				e.Exec(t, `vim.cmd("edit other.txt")`)
			}
			proposal := strings.Replace(diffText, "five", "FIVE", 1)
			_, v := e.open(t, e.file, proposal)
			e.Exec(t, `vim.cmd("write")`)
			e.decision(t)
			e.waitClosed(t, v)
			// Now the CLI writes what we answered.
			if err := os.WriteFile(e.file, []byte(proposal), 0o644); err != nil {
				t.Fatal(err)
			}
			e.WaitFor(t, 10*time.Second, `vim.api.nvim_buf_get_lines(1, 4, 5, false)[1] == "FIVE"`,
				`return { lines = vim.api.nvim_buf_get_lines(1, 0, -1, false), warn = vim.v.warningmsg }`, "the buffer to reload")
			var st struct {
				Modified bool   `json:"modified"`
				Warning  string `json:"warning"`
				Mode     string `json:"mode"`
				Autoread bool   `json:"autoread"`
			}
			e.Eval(t, `return { modified = vim.bo[1].modified, warning = vim.v.warningmsg, mode = vim.api.nvim_get_mode().mode, autoread = vim.api.nvim_buf_call(1, function() return vim.o.autoread end) }`, &st)
			if st.Modified || st.Warning != "" || st.Mode != "n" {
				t.Fatalf("after the reload: %+v (want unmodified, no W11, no prompt)", st)
			}
			// The reload is one undo step away.
			e.Exec(t, `vim.api.nvim_buf_call(1, function() vim.cmd("undo") end)`)
			if got := e.Lines(t, 1) + "\n"; got != diffText {
				t.Fatalf("undo after the reload: %q", got)
			}
		})
	}
}

// The Claude terminal keeps its place and size; the layout comes back
// exactly, whatever window the diff had to borrow or make.
func TestDiffLayouts(t *testing.T) {
	tests := []struct {
		name    string
		diff    string
		setup   string // Lua before the diff opens
		noTerm  bool
		newTab  bool
		swapped bool // the editor window shows another file during the diff
	}{
		{name: "vertical, file shown", diff: `layout = "vertical"`},
		{name: "horizontal, file shown", diff: `layout = "horizontal"`},
		{name: "file not shown: the editor window borrowed", setup: `vim.cmd("edit other.txt") vim.cmd("normal! 3G")`, swapped: true},
		{name: "focus in the terminal", setup: `vim.cmd("wincmd l")`},
		{name: "two editor windows", setup: `vim.cmd("split other.txt") vim.cmd("resize 10")`},
		{name: "only the terminal", setup: `vim.cmd("wincmd l") vim.cmd("only")`},
		{name: "no terminal, one window", noTerm: true},
		{name: "new tab", diff: `open_in_new_tab = true`, newTab: true},
		{name: "a user diff in the tab: new tab", setup: `vim.cmd("vsplit other.txt") vim.cmd("diffthis") vim.cmd("wincmd l") vim.cmd("diffthis")`, newTab: true},
		{name: "equalalways off", setup: `vim.o.equalalways = false`},
		{name: "the terminal as a float, focused", setup: `vim.cmd("wincmd l") vim.cmd("close")
require("claude.config").options.terminal.layout = "float" require("claude.terminal").toggle()`},
		{name: "only a float terminal over a scratch buffer", setup: `vim.cmd("wincmd l") vim.cmd("close") vim.cmd("enew") vim.bo.buftype = "nofile"
require("claude.config").options.terminal.layout = "float" require("claude.terminal").toggle()`},
		{name: "no room to split (E36): a new tab", setup: `vim.o.winwidth = 1 vim.o.winminwidth = 1 vim.o.winheight = 1 vim.o.winminheight = 1
while pcall(vim.cmd, "vsplit") do end
while pcall(vim.cmd, "split") do end`, newTab: true},
		{name: "a modified other buffer and nohidden", setup: `vim.o.hidden = false vim.cmd("edit other.txt") vim.api.nvim_buf_set_lines(0, 0, 1, false, { "x" })`, swapped: true},
	}
	for _, tt := range tests {
		for _, layoutName := range []string{"vertical", "horizontal"} {
			if strings.Contains(tt.diff, "layout") && !strings.Contains(tt.diff, layoutName) {
				continue
			}
			t.Run(tt.name+"/"+layoutName, func(t *testing.T) {
				diff := tt.diff
				if !strings.Contains(diff, "layout") {
					diff = strings.TrimPrefix(diff+`, layout = "`+layoutName+`"`, ", ")
				}
				e := startDiffEnv(t, diffEnvOpts{diff: diff, noTerm: tt.noTerm, files: map[string]string{"other.txt": "o1\no2\no3\no4\n"}})
				e.Exec(t, tt.setup)
				if strings.Contains(tt.name, "float") {
					var float bool
					e.Eval(t, `return vim.api.nvim_win_get_config(0).relative ~= ""`, &float)
					if !float {
						t.Fatal("setup: the terminal is not a float")
					}
				}
				before := e.layout(t)
				_, v := e.open(t, e.file, strings.Replace(diffText, "one", "ONE", 1))
				during := e.layout(t)
				if tt.newTab != (during.Tabs == before.Tabs+1) {
					t.Fatalf("tabs %d → %d, new tab wanted: %v", before.Tabs, during.Tabs, tt.newTab)
				}
				pw, ow := e.winOf(t, v.ProposalBuf), e.winOf(t, v.OriginalBuf)
				var pos struct {
					P []int `json:"p"`
					O []int `json:"o"`
				}
				e.Eval(t, `local p, o = ... return { p = vim.api.nvim_win_get_position(p), o = vim.api.nvim_win_get_position(o) }`, &pos, pw, ow)
				if layoutName == "vertical" && !(pos.P[1] > pos.O[1] && pos.P[0] == pos.O[0]) ||
					layoutName == "horizontal" && !(pos.P[0] > pos.O[0] && pos.P[1] == pos.O[1]) {
					t.Fatalf("%s layout: proposal at %v, current side at %v", layoutName, pos.P, pos.O)
				}
				if !tt.newTab {
					// Every window that was there keeps its size, except the
					// one the diff split.
					split := 0
					for _, b := range before.Wins {
						for _, d := range during.Wins {
							if d.ID == b.ID && (d.Width != b.Width || d.Height != b.Height) {
								split++
							}
						}
					}
					if split > 1 {
						t.Fatalf("%d windows changed size\nbefore %+v\nduring %+v", split, before.Wins, during.Wins)
					}
				}
				if tt.swapped {
					var name string
					e.Eval(t, `return vim.fn.bufname(vim.api.nvim_win_get_buf(...))`, &name, ow)
					if name != "main.txt" {
						t.Fatalf("current side shows %q", name)
					}
				}
				e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
				e.decision(t)
				e.waitClosed(t, v)
				if before.Mode == "t" { // re-entered on the next tick
					e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "t"`, diffLayoutLua, "terminal mode again")
				}
				diffSameLayout(t, tt.name, before, e.layout(t))
				if strings.Contains(tt.name, "user diff") {
					var diffs int
					e.Eval(t, `local n = 0 for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do if vim.wo[w].diff then n = n + 1 end end return n`, &diffs)
					if diffs != 2 {
						t.Fatalf("the user's diff pair lost diff mode: %d diff windows", diffs)
					}
				}
			})
		}
	}
}

func TestDiffFocus(t *testing.T) {
	t.Run("the terminal keeps terminal mode with keep_terminal_focus", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{diff: `keep_terminal_focus = true`})
		e.Exec(t, `vim.cmd("wincmd l") vim.cmd("startinsert")`)
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "t"`, "", "terminal mode")
		before := e.layout(t)
		_, v := e.open(t, e.file, "x\n")
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "t"`, diffLayoutLua, "terminal mode kept")
		if l := e.layout(t); l.Win != before.Win {
			t.Fatalf("focus moved from %d to %d", before.Win, l.Win)
		}
		e.Exec(t, `require("claude.diff").reject()`)
		e.decision(t)
		e.waitClosed(t, v)
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "t"`, diffLayoutLua, "terminal mode after the diff")
	})
	t.Run("back to the terminal in terminal mode after :w", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{})
		e.Exec(t, `vim.cmd("wincmd l") vim.cmd("startinsert")`)
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "t"`, "", "terminal mode")
		before := e.layout(t)
		_, v := e.open(t, e.file, "x\n")
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "n" and vim.api.nvim_get_current_buf() == `+diffItoa(v.ProposalBuf),
			diffLayoutLua, "the cursor in the proposal, normal mode")
		e.Exec(t, `vim.cmd("write")`)
		e.decision(t)
		e.waitClosed(t, v)
		e.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "t"`, diffLayoutLua, "terminal mode again")
		if l := e.layout(t); l.Win != before.Win {
			t.Fatalf("focus in %d, want the terminal %d", l.Win, before.Win)
		}
	})
	t.Run("the cursor on the first change", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{})
		_, _ = e.open(t, e.file, strings.Replace(diffText, "eleven", "ELEVEN", 1))
		var cur []int
		e.Eval(t, `return vim.api.nvim_win_get_cursor(0)`, &cur)
		if cur[0] != 11 {
			t.Fatalf("cursor at %v, want line 11", cur)
		}
	})
	t.Run("a close from the host leaves the focus where the user is", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{files: map[string]string{"other.txt": "o\n"}})
		id, v := e.open(t, e.file, "x\n")
		e.Exec(t, `vim.cmd("wincmd l") vim.cmd("wincmd l")`) // the terminal
		var term int
		e.Eval(t, `return vim.api.nvim_get_current_win()`, &term)
		n, err := e.b.CloseDiffs(context.Background(), []string{id}, "closed")
		if err != nil || n != 1 {
			t.Fatalf("CloseDiffs = %d, %v", n, err)
		}
		e.waitClosed(t, v)
		var cur int
		e.Eval(t, `return vim.api.nvim_get_current_win()`, &cur)
		if cur != term {
			t.Fatalf("focus moved to %d, want the terminal %d", cur, term)
		}
	})
}

func TestDiffCloseFromHost(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	before := e.layout(t)
	id, v := e.open(t, e.file, "x\n")
	var pending []map[string]any
	e.Eval(t, `return require("claude.diff").pending()`, &pending)
	if len(pending) != 1 || pending[0]["file"] != e.file || int(pending[0]["proposal_bufnr"].(float64)) != v.ProposalBuf {
		t.Fatalf("pending() = %v", pending)
	}
	ctx := context.Background()
	if n, err := e.b.CloseDiffs(ctx, []string{id, "nope"}, "closed"); err != nil || n != 1 {
		t.Fatalf("CloseDiffs = %d, %v; want 1", n, err)
	}
	e.waitClosed(t, v)
	if n, err := e.b.CloseDiffs(ctx, []string{id}, "closed"); err != nil || n != 0 {
		t.Fatalf("second CloseDiffs = %d, %v; want 0", n, err)
	}
	e.noDecision(t)
	diffSameLayout(t, "CloseDiffs", before, e.layout(t))
	e.Eval(t, `return require("claude.diff").pending()`, &pending)
	if len(pending) != 0 {
		t.Fatalf("pending() after close = %v", pending)
	}

	var nv8 int
	e.Eval(t, `return vim.fn.has("nvim-0.8")`, &nv8)
	var events []struct {
		Ev   string         `json:"ev"`
		Data map[string]any `json:"data"`
	}
	e.WaitFor(t, 5*time.Second, `#_G.events == 2`, `return _G.events`, "two events")
	e.Eval(t, `return _G.events`, &events)
	if events[0].Ev != "ClaudeDiffOpened" || events[1].Ev != "ClaudeDiffClosed" {
		t.Fatalf("events = %+v", events)
	}
	if nv8 == 1 {
		o, c := events[0].Data, events[1].Data
		if o["file"] != e.file || o["tab_name"] == "" || int(o["proposal_bufnr"].(float64)) != v.ProposalBuf ||
			int(o["original_bufnr"].(float64)) != v.OriginalBuf {
			t.Fatalf("ClaudeDiffOpened data = %v", o)
		}
		if c["outcome"] != "closed" || c["file"] != e.file || c["tab_name"] != o["tab_name"] {
			t.Fatalf("ClaudeDiffClosed data = %v", c)
		}
	}
}

func TestDiffEditReloadAndWriteElsewhere(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	_, v := e.open(t, e.file, "claude\n")
	// :e! puts Claude's text back and decides nothing.
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, { "mine" }) vim.cmd("edit!")`)
	e.noDecision(t)
	if got := e.Lines(t, v.ProposalBuf); got != "claude" {
		t.Fatalf("after :e! the proposal reads %q", got)
	}
	// :w to another name does not accept.
	other := filepath.Join(e.Dir, "copy.txt")
	e.Exec(t, `pcall(vim.cmd, "write " .. vim.fn.fnameescape(...))`, other)
	e.noDecision(t)
	if n := e.notes(t); !strings.Contains(n, "cannot be written under another name") {
		t.Fatalf("notes = %q", n)
	}
	e.Exec(t, `vim.cmd("write")`)
	if d := e.decision(t); d.Decision != "accept" {
		t.Fatalf("decision %+v", d)
	}
	e.waitClosed(t, v)
}

func TestDiffCommandsWithoutDiff(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	e.Exec(t, `vim.cmd("ClaudeDiffAccept") vim.cmd("ClaudeDiffReject")`)
	if n := e.notes(t); strings.Count(n, "no Claude diff is waiting") != 2 {
		t.Fatalf("notes = %q", n)
	}
	// Two diffs, the cursor in neither: the command asks which.
	_, v1 := e.open(t, filepath.Join(e.Dir, "a.txt"), "a\n")
	_, v2 := e.open(t, filepath.Join(e.Dir, "b.txt"), "b\n")
	e.Exec(t, `vim.cmd("tabfirst") vim.cmd("wincmd l") vim.cmd("wincmd l") vim.cmd("wincmd l") vim.cmd("ClaudeDiffAccept")`)
	e.noDecision(t)
	if n := e.notes(t); !strings.Contains(n, "2 Claude diffs are open") {
		t.Fatalf("notes = %q", n)
	}
	for _, v := range []nvimbridge.DiffView{v2, v1} {
		e.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("ClaudeDiffReject")`, v.ProposalBuf)
		e.decision(t)
		e.waitClosed(t, v)
	}
	var tabs int
	e.Eval(t, `return #vim.api.nvim_list_tabpages()`, &tabs)
	if tabs != 1 {
		t.Fatalf("%d tabs left", tabs)
	}
}

// A 5 MB proposal crosses as one string and opens with one set_lines.
func TestDiffLarge(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 5<<20; i++ {
		sb.WriteString("line ")
		sb.WriteString(diffItoa(i))
		sb.WriteString(" of a large generated file, with some text to make it wide\n")
	}
	big := sb.String()
	e := startDiffEnv(t, diffEnvOpts{contents: big})
	proposal := strings.Replace(big, "line 70000 of", "LINE 70000 OF", 1)
	_, v := e.open(t, e.file, proposal)
	e.Exec(t, `vim.cmd("write")`)
	d := e.decision(t)
	if d.Contents == nil || *d.Contents != proposal {
		t.Fatalf("accepted %d bytes, want the %d-byte proposal", len(*d.Contents), len(proposal))
	}
	e.waitClosed(t, v)
}

// Two diffs of one file (two CLIs): each opens and closes on its own, and
// the keys keep working on the one left.
func TestDiffSameFileTwice(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	before := e.layout(t)
	first := strings.Replace(diffText, "one", "ONE", 1)
	second := strings.Replace(diffText, "two", "TWO", 1)
	_, v1 := e.open(t, e.file, first)
	_, v2 := e.open(t, e.file, second)
	var tabs int
	e.Eval(t, `return #vim.api.nvim_list_tabpages()`, &tabs)
	if tabs != 2 {
		t.Fatalf("%d tabs: the second diff must not merge into the first", tabs)
	}
	e.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("ClaudeDiffReject")`, v1.ProposalBuf)
	if d := e.decision(t); d.Decision != "reject" {
		t.Fatalf("first: %+v", d)
	}
	e.waitClosed(t, v1)
	// The second diff's current side still has the accept key.
	e.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("wincmd h") vim.api.nvim_feedkeys("\\ca", "mx", false)`, v2.ProposalBuf)
	if d := e.decision(t); d.Decision != "accept" || *d.Contents != second {
		t.Fatalf("second: %+v", d)
	}
	e.waitClosed(t, v2)
	diffSameLayout(t, "two diffs of one file", before, e.layout(t))
}

// The CLI writes the file while the diff is still open (the user answered
// in its terminal): a checktime then (a user's CursorHold autocmd, focus)
// reloads without asking, even with 'noautoread'; the option is the
// user's again afterwards.
func TestDiffCLIWritesWhileOpen(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	e.Exec(t, `vim.o.autoread = false`)
	var arBefore any
	e.Eval(t, `return vim.fn.getbufvar(1, "&l:autoread")`, &arBefore)
	proposal := strings.Replace(diffText, "seven", "SEVEN", 1)
	id, v := e.open(t, e.file, proposal)
	if err := os.WriteFile(e.file, []byte(proposal), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Nvim.Input(":checktime<CR>"); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(t, 10*time.Second, `vim.api.nvim_buf_get_lines(1, 6, 7, false)[1] == "SEVEN"`,
		`return { mode = vim.api.nvim_get_mode(), warn = vim.v.warningmsg }`, "a quiet reload")
	var mode struct {
		Blocking bool `json:"blocking"`
	}
	e.Eval(t, `return vim.api.nvim_get_mode()`, &mode)
	if mode.Blocking {
		_, _ = e.Nvim.Input("<CR>")
		t.Fatal("checktime asked (W11)")
	}
	if _, err := e.b.CloseDiffs(context.Background(), []string{id}, "closed"); err != nil {
		t.Fatal(err)
	}
	e.waitClosed(t, v)
	var arAfter any
	e.Eval(t, `return vim.fn.getbufvar(1, "&l:autoread")`, &arAfter)
	if arAfter != arBefore {
		t.Fatalf("local 'autoread' %v after the diff, %v before", arAfter, arBefore)
	}
}

// TestDiffOpenYieldsBetweenStages: loading the two texts, computing the
// diff and the first look at it (each seconds of work for a proposal of
// 20 MB that Neovim cannot interrupt) are separate turns of Neovim's main
// loop, so a key typed meanwhile waits for the longest of them, not for
// their sum. A callback scheduled as each call starts runs between them:
// after the load with no window in diff mode yet, after the compare with
// both in diff mode and the cursor not yet moved to the proposal.
func TestDiffOpenYieldsBetweenStages(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	e.Exec(t, `_G.turns = {}
local diff = require("claude.diff")
local open = diff.open
diff.open = function(args)
  local stage = args.stage or "whole"
  vim.schedule(function()
    local n = 0
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.wo[w].diff then n = n + 1 end
    end
    local focused = vim.api.nvim_get_current_buf() == vim.fn.bufnr("✻*")
    table.insert(_G.turns, string.format("after %s: %d in diff mode, proposal focused %s", stage, n, tostring(focused)))
  end)
  return open(args)
end`)
	_, v := e.open(t, e.file, strings.Replace(diffText, "eleven", "ELEVEN", 1))
	var turns []string
	e.Eval(t, `return _G.turns`, &turns)
	got := strings.Join(turns, "\n")
	want := "after load: 0 in diff mode, proposal focused false\nafter compare: 2 in diff mode, proposal focused false\nafter show: 2 in diff mode, proposal focused true"
	if got != want {
		t.Errorf("turns of the main loop during the open:\n%s\nwant\n%s", got, want)
	}
	e.Exec(t, `vim.cmd("write")`)
	e.decision(t)
	e.waitClosed(t, v)
}
