package nvimbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// selLines is a buffer that exercises the text extraction: tabs, wide CJK
// characters, a 4-byte emoji (two UTF-16 units), a combining accent,
// control characters and empty lines.
var selLines = []string{
	"hello world",                  // 1
	"\tindented\tline",             // 2
	"wide 日本語 text",                // 3
	"emoji 😀 and e\u0301 here",     // 4  (e + combining acute)
	"",                             // 5
	"short",                        // 6
	"a\x01b control",               // 7
	"last line of the buffer ends", // 8
}

// startSelNvim opens a file with selLines in a Neovim that has the plugin.
func startSelNvim(t *testing.T) (*nvimtest.Nvim, *nvimbridge.Bridge, string) {
	t.Helper()
	n := nvimtest.Start(t, nvimtest.Options{})
	path := filepath.Join(n.Dir, "sample.txt")
	if err := os.WriteFile(path, []byte(strings.Join(selLines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.Exec(t, `vim.cmd("edit " .. vim.fn.fnameescape(...)) vim.o.tabstop = 4`, path)
	var real string
	n.Eval(t, `return vim.api.nvim_buf_get_name(0)`, &real)
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	return n, b, real
}

func selInput(t *testing.T, n *nvimtest.Nvim, keys string) {
	t.Helper()
	if _, err := n.Input(keys); err != nil {
		t.Fatal(err)
	}
	// nvim_input is queued: a request after it runs once the keys are processed.
	var mode string
	n.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode)
}

// TestSelectionTextMatchesYank checks, for each selection, that the text
// shared while in visual mode and the one pushed when it ends (from the
// marks) are exactly what `y` yanks.
func TestSelectionTextMatchesYank(t *testing.T) {
	n, _, _ := startSelNvim(t)
	// Tracking on (its notifications go unanswered to the test's channel):
	// it notes `$` in a block before an operator moves the cursor.
	ignoreSelectionNotifications(t, n)
	n.Exec(t, `require("claude.selection").attach(...)`, n.ChannelID())
	tests := []struct {
		name  string
		start string // keys in normal mode to place the cursor
		sel   string // keys that make the selection
		opts  string // Lua run first
	}{
		{"charwise one char", "1G1|", "v", ""},
		{"charwise in line", "1G3|", "vll", ""},
		{"charwise across lines", "1G7|", "vjj", ""},
		{"charwise backwards", "3G8|", "vkh", ""},
		{"charwise wide chars", "3G6|", "vlll", ""},
		{"charwise emoji", "4G7|", "vl", ""},
		{"charwise combining", "4G14|", "vl", ""},
		{"charwise to end of line", "1G3|", "v$", ""},
		{"charwise to end of last line", "8G3|", "v$", ""},
		{"charwise empty line", "5G", "v", ""},
		{"charwise onto empty line", "4G3|", "vj", ""},
		{"charwise tab", "2G1|", "vll", ""},
		{"charwise control char", "7G1|", "vll", ""},
		{"linewise one", "2G", "V", ""},
		{"linewise several", "3G", "Vjj", ""},
		{"linewise to empty last", "4G", "Vj", ""},
		{"blockwise ascii", "1G2|", "<C-v>jjll", ""},
		{"blockwise over wide chars", "3G7|", "<C-v>jl", ""},
		{"blockwise cutting a wide char", "2G1|", "<C-v>jjjlllll", ""},
		{"blockwise tabs", "1G3|", "<C-v>jl", ""},
		{"blockwise dollar", "2G3|", "<C-v>jj$", ""},
		{"blockwise short lines", "4G10|", "<C-v>jjl", ""},
		{"blockwise lines before the block", "1G3|", "<C-v>6jl", `vim.api.nvim_buf_set_lines(0, 0, -1, false, {"abcdefgh", "", "a", "ab", "abc", "abcd", "abcdefgh"})`},
		{"blockwise dollar ending on a shorter line", "1G2|", "<C-v>jj$", `vim.api.nvim_buf_set_lines(0, 0, -1, false, {"abcdefgh", "abc", "abcdef"})`},
		{"blockwise dollar short lines", "1G3|", "<C-v>6j$", `vim.api.nvim_buf_set_lines(0, 0, -1, false, {"abcdefgh", "", "a", "ab", "abc", "abcd", "abcdefgh"})`},
		{"blockwise backwards", "4G9|", "<C-v>khh", ""},
		{"exclusive charwise", "1G3|", "vll", `vim.o.selection = "exclusive"`},
		{"exclusive charwise same pos", "1G3|", "v", `vim.o.selection = "exclusive"`},
		{"exclusive across lines to col 1", "1G3|", "vj0", `vim.o.selection = "exclusive"`},
		{"exclusive blockwise", "1G2|", "<C-v>jll", `vim.o.selection = "exclusive"`},
		{"select mode", "1G2|", "gh<S-Right><S-Right>", `vim.o.keymodel = "startsel,stopsel"`},
		{"list without tab chars", "1G3|", "<C-v>jl", `vim.wo.list = true vim.wo.listchars = "eol:$"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selInput(t, n, "<Esc>")
			n.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)`, selLines)
			n.Exec(t, `vim.o.selection = "inclusive" vim.o.keymodel = "" vim.wo.list = false vim.cmd("set listchars&")`)
			if tt.opts != "" {
				n.Exec(t, tt.opts)
			}
			selInput(t, n, tt.start+tt.sel)
			var live struct {
				Text string `json:"text"`
			}
			n.Eval(t, `return require("claude.selection").get()`, &live)
			// ctrl-g turns select mode into visual mode, where y yanks.
			if strings.HasPrefix(tt.sel, "gh") {
				selInput(t, n, "<C-g>")
			}
			selInput(t, n, "y")
			var got struct {
				Reg  string `json:"reg"`
				Sent struct {
					Text string `json:"text"`
				} `json:"sticky"` // what ModeChanged pushed from the marks
			}
			n.Eval(t, `local d = require("claude.selection")._debug()
return { reg = vim.fn.getreg('"'), sticky = d.sticky or {} }`, &got)
			want := got.Reg
			if live.Text != want {
				t.Errorf("live text = %q, yank = %q", live.Text, want)
			}
			if got.Sent.Text != want {
				t.Errorf("text pushed as visual mode ended = %q, yank = %q", got.Sent.Text, want)
			}
		})
	}
}

// ignoreSelectionNotifications accepts what the tracker sends to the test's
// channel when no host is listening.
func ignoreSelectionNotifications(t *testing.T, n *nvimtest.Nvim) {
	t.Helper()
	for _, m := range []string{"selection_update", "selection_dirty"} {
		if err := n.RegisterHandler(m, func(...any) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.RegisterHandler("selection_share", func(...any) (string, error) { return `{}`, nil }); err != nil {
		t.Fatal(err)
	}
}

type selState = nvimbridge.SelectionState

func selPosAt(l, c int) nvimbridge.SelectionPos {
	return nvimbridge.SelectionPos{Line: l, Character: c}
}

// TestSelectionPositions pins the positions: 0-based lines, UTF-16
// characters, end exclusive; linewise ends at the next line's start.
func TestSelectionPositions(t *testing.T) {
	n, b, path := startSelNvim(t)
	ctx := context.Background()
	tests := []struct {
		name       string
		keys       string
		start, end nvimbridge.SelectionPos
		empty      bool
		text       string
	}{
		{"cursor", "1G7|", selPosAt(0, 6), selPosAt(0, 6), true, ""},
		{"cursor after wide chars", "3G$", selPosAt(2, 12), selPosAt(2, 12), true, ""},
		{"cursor after emoji", "4G9|", selPosAt(3, 8), selPosAt(3, 8), true, ""},
		{"charwise", "1G1|vl", selPosAt(0, 0), selPosAt(0, 2), false, "he"},
		{"charwise emoji counts two", "4G7|vl", selPosAt(3, 6), selPosAt(3, 9), false, "😀 "},
		{"charwise combining", "4G14|vl", selPosAt(3, 13), selPosAt(3, 16), false, "e\u0301 "},
		{"charwise with line break", "1G7|v$", selPosAt(0, 6), selPosAt(1, 0), false, "world\n"},
		{"linewise", "2GVj", selPosAt(1, 0), selPosAt(3, 0), false, "\tindented\tline\nwide 日本語 text\n"},
		{"blockwise over a tab", "1G1|<C-v>jl", selPosAt(0, 0), selPosAt(1, 2), false, "hello\n\ti"},
		{"blockwise wide", "3G6|<C-v>l", selPosAt(2, 5), selPosAt(2, 7), false, "日本"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selInput(t, n, "<Esc>"+tt.keys)
			st, err := b.CurrentSelection(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := selState{Kind: "selection", Path: path, Text: tt.text, Start: tt.start, End: tt.end, Empty: tt.empty}
			if st != want {
				t.Errorf("got  %+v\nwant %+v", st, want)
			}
		})
	}
}

// TestSelectionPullAndCurrent covers the bridge calls the tracker and the
// tools make: which buffers are reported, the deny-list, the wait answer,
// and the active editor while another window has the focus.
func TestSelectionPullAndCurrent(t *testing.T) {
	n, b, path := startSelNvim(t)
	ctx := context.Background()
	envPath := filepath.Join(n.Dir, ".env")
	if err := os.WriteFile(envPath, []byte("SECRET=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Exec(t, `require("claude").setup({ selection = { debounce_ms = 10000 } })`)

	// The first move notes where the cursor is and disarms the move
	// autocmds; a pull that finds the cursor elsewhere says "wait" (still
	// moving), the next one that finds it at rest answers. Force answers
	// at once.
	ignoreSelectionNotifications(t, n)
	n.Exec(t, `require("claude.selection").attach(...)`, n.ChannelID())
	t.Cleanup(func() { n.Exec(t, `require("claude.selection").detach()`) })
	selInput(t, n, "2G")
	var armed bool
	n.Eval(t, `return require("claude.selection")._debug().armed`, &armed)
	if armed {
		t.Fatal("the move autocmds are still armed after a move")
	}
	selInput(t, n, "3G")
	st, err := b.PullSelection(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != nvimbridge.SelectionKindWait || st.WaitMS != 5000 { // half the debounce
		t.Fatalf("pull while the cursor moves = %+v, want wait 5000", st)
	}
	st, err = b.PullSelection(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "selection" || st.Start != selPosAt(2, 0) || st.Seq == 0 {
		t.Fatalf("pull at rest = %+v", st)
	}
	n.Eval(t, `return require("claude.selection")._debug().armed`, &armed)
	if !armed {
		t.Fatal("a pull did not re-arm the move autocmds")
	}
	selInput(t, n, "4G")
	st, err = b.PullSelection(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "selection" || st.Start != selPosAt(3, 0) {
		t.Fatalf("forced pull = %+v", st)
	}
	seq := st.Seq
	st, _ = b.PullSelection(ctx, true)
	if st.Seq <= seq {
		t.Errorf("seq did not grow: %d then %d", seq, st.Seq)
	}

	cases := []struct {
		name  string
		setup string
		kind  string
	}{
		{"help", `vim.cmd("help")`, "skip"},
		{"terminal", `vim.cmd("terminal")`, "skip"},
		{"quickfix", `vim.cmd("copen")`, "skip"},
		{"scratch", `vim.cmd("enew") vim.bo.buftype = "nofile"`, "skip"},
		{"unnamed", `vim.cmd("enew")`, "skip"},
		{"uri name", `vim.cmd("enew") vim.api.nvim_buf_set_name(0, "oil:///tmp/")`, "skip"},
		{"denied", `vim.cmd("edit " .. vim.fn.fnameescape(...))`, "denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n.Exec(t, `vim.cmd("only") vim.cmd("edit " .. vim.fn.fnameescape(...))`, path)
			n.Exec(t, tc.setup, envPath)
			st, err := b.PullSelection(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if st.Kind != tc.kind || st.Text != "" || st.Path != "" {
				t.Fatalf("pull = %+v, want kind %q with no text or path", st, tc.kind)
			}
		})
	}

	// getCurrentSelection from the terminal: the file window is the active
	// editor; its live cursor is reported.
	n.Exec(t, `vim.cmd("only") vim.cmd("edit " .. vim.fn.fnameescape(...)) vim.api.nvim_win_set_cursor(0, {3, 5})
vim.cmd("botright vsplit") vim.cmd("terminal")`, path)
	st, err = b.CurrentSelection(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "selection" || st.Path != path || st.Start != selPosAt(2, 5) || !st.Empty {
		t.Fatalf("current from the terminal = %+v", st)
	}
	// A denied active editor is reported as such, with nothing of it.
	n.Exec(t, `vim.cmd("wincmd p") vim.cmd("edit " .. vim.fn.fnameescape(...)) vim.cmd("wincmd p")`, envPath)
	st, err = b.CurrentSelection(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "denied" || st.Text != "" {
		t.Fatalf("current with .env active = %+v", st)
	}
	// No file window at all.
	n.Exec(t, `vim.cmd("tabnew") vim.cmd("terminal")`)
	st, _ = b.CurrentSelection(ctx)
	if st.Kind != "none" {
		t.Fatalf("current with only a terminal = %+v", st)
	}
}

// TestSelectionDenyList pins the glob semantics of selection.deny.
func TestSelectionDenyList(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	dir := n.Dir
	link := filepath.Join(dir, "innocent")
	if err := os.WriteFile(filepath.Join(dir, "id_rsa"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "id_rsa"), link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		deny string // Lua list; "" = defaults
		path string
		want bool
	}{
		{"", "/p/.env", true},
		{"", "/p/.env.local", true},
		{"", "/p/env", false},
		{"", "/p/my.env", false},
		{"", "/p/certs/server.pem", true},
		{"", "/p/server.key", true},
		{"", "/p/keys.go", false},
		{"", "/home/u/.ssh/id_rsa.pub", true},
		{"", "/home/u/.ssh/id_ed25519", true},
		{"", "/home/u/.netrc", true},
		{"", "/p/.ENV", false},
		{"", link, true},
		{`{ "secrets/*" }`, "/p/secrets/a.txt", true},
		{`{ "secrets/*" }`, "/p/notsecrets/a.txt", false},
		{`{ "/etc/*" }`, "/etc/passwd", true},
		{`{ "/etc/*" }`, "/p/etc/passwd", false},
		{`{ "*.txt" }`, "/p/a.txt", true},
		{`{}`, "/p/.env", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s", tt.deny, tt.path), func(t *testing.T) {
			deny := tt.deny
			if deny == "" {
				deny = "nil"
			}
			var got bool
			n.Eval(t, `require("claude").setup({ selection = { deny = `+deny+` } })
return require("claude.selection").denied(...)`, &got, tt.path)
			if got != tt.want {
				t.Errorf("denied(%q) with deny=%s = %v, want %v", tt.path, tt.deny, got, tt.want)
			}
		})
	}
}

// TestSelectionShareRefused: when the host refuses to turn sharing on, the
// user is told and nothing is tracked.
func TestSelectionShareRefused(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	// The test's channel has no selection_share handler: the request fails.
	n.Exec(t, `_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
require("claude.selection").attach(...)`, n.ChannelID())
	n.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, "an error message")
	var res struct {
		Sharing bool   `json:"sharing"`
		Msg     string `json:"msg"`
		Level   int    `json:"level"`
		Autocmd int    `json:"autocmds"`
	}
	n.Eval(t, `local ok, acs = pcall(vim.api.nvim_get_autocmds, { group = "nvim-claude-selection" })
return { sharing = require("claude.selection").sharing(), msg = _G.notes[1].msg, level = _G.notes[1].level, autocmds = ok and #acs or 0 }`, &res)
	if res.Sharing || res.Autocmd != 0 || res.Level != 4 || !strings.Contains(res.Msg, "could not start sharing the selection") {
		t.Fatalf("after a refused selection_share: %+v", res)
	}
}

// TestSelectionVisualEnd covers how the move autocmds and the pushes
// follow the end of visual mode: a push asks the host to pull (which
// re-arms the autocmds), a pull's re-arming is not taken for a move, and
// selections ending in a rapid series (one typeahead here) are not pushed
// one by one: the pull gathers the last.
func TestSelectionVisualEnd(t *testing.T) {
	n, b, path := startSelNvim(t)
	ctx := context.Background()
	sent := recordSelectionNotifications(t, n)
	n.Exec(t, `require("claude.selection").attach(...)`, n.ChannelID())
	t.Cleanup(func() { n.Exec(t, `require("claude.selection").detach()`) })
	// Moves are only noted here (selection_dirty), however long the test
	// pauses between them: TestSelectionLeadingEdge covers the pushes of a
	// move after a rest.
	n.Exec(t, `require("claude.selection")._rest(math.huge)`)
	t.Cleanup(func() { n.Exec(t, `require("claude.selection")._rest(nil)`) })
	var updates []string
	counts := func() (int, int) {
		var d int
		updates, d = sent()
		return len(updates), d
	}
	armed := func() bool {
		var a bool
		n.Eval(t, `return require("claude.selection")._debug().armed`, &a)
		return a
	}
	u0, _ := counts() // the state at attach

	// One selection: pushed at once with pull, the autocmds left disarmed.
	selInput(t, n, "1G1|vl<Esc>")
	if u, _ := counts(); u != u0+1 {
		t.Fatalf("%d updates after one selection, want %d", u, u0+1)
	}
	last := updates[len(updates)-1]
	if !strings.Contains(last, `"pull":true`) || !strings.Contains(last, `"text":"he"`) {
		t.Fatalf("pushed %s, want the selection with pull", last)
	}
	if armed() {
		t.Fatal("the move autocmds are armed after a push that asked for a pull")
	}
	// The host's pull: the cursor is where it was as visual mode ended
	// (the selection stands), and the autocmds come back.
	st, err := b.PullSelection(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != nvimbridge.SelectionKindKeep || !armed() {
		t.Fatalf("pull after the push = %+v, armed %v; want keep, armed", st, armed())
	}
	// A key that does not move the cursor: Neovim's CursorMoved for the
	// new autocmds is not a move; they stay armed and nothing is sent.
	_, d0 := counts()
	selInput(t, n, "<Esc>")
	if _, d := counts(); d != d0 || !armed() {
		t.Fatalf("after a key that did not move: %d selection_dirty (want %d), armed %v", d, d0, armed())
	}
	// A real move disarms them and tells the host.
	selInput(t, n, "j")
	if _, d := counts(); d != d0+1 || armed() {
		t.Fatalf("after j: %d selection_dirty (want %d), armed %v", d, d0+1, armed())
	}
	// So does entering visual mode without moving.
	if _, err := b.PullSelection(ctx, true); err != nil || !armed() {
		t.Fatalf("forced pull: %v, armed %v", err, armed())
	}
	selInput(t, n, "v")
	if _, d := counts(); d != d0+2 || armed() {
		t.Fatalf("after v: %d selection_dirty (want %d), armed %v", d, d0+2, armed())
	}
	selInput(t, n, "<Esc>")

	// Three selections in one go: the first is pushed, the others are
	// noted; the host's pull (the cursor moved since the push: wait, then
	// at rest) gathers the last one.
	st, _ = b.PullSelection(ctx, true) // at rest, armed again
	// However slow the machine, the three are one series, and the first
	// is not part of one with the selections above.
	n.Exec(t, `require("claude.selection")._rapid(3600000)`)
	t.Cleanup(func() { n.Exec(t, `require("claude.selection")._rapid(nil)`) })
	u1, _ := counts()
	selInput(t, n, "1G1|vl<Esc>2GVj<Esc>6G1|<C-v>jl<Esc>")
	if u, _ := counts(); u != u1+1 {
		t.Fatalf("%d updates after a rapid series of three selections, want 1", u-u1)
	}
	st, err = b.PullSelection(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != nvimbridge.SelectionKindWait {
		t.Fatalf("first pull after the series = %+v, want wait", st)
	}
	st, err = b.PullSelection(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := selState{Kind: "selection", Path: path, Text: "sho\na\x01", Start: selPosAt(5, 0), End: selPosAt(6, 2)}
	if st.Seq == 0 {
		t.Fatalf("pull at rest = %+v, want a new observation", st)
	}
	st.Seq = 0
	if st != want {
		t.Fatalf("pull at rest = %+v\nwant %+v", st, want)
	}
	// Returned once; after that it stands (keep), as a pushed one does.
	st, _ = b.PullSelection(ctx, false)
	if st.Kind != nvimbridge.SelectionKindKeep {
		t.Fatalf("next pull = %+v, want keep", st)
	}
	var cur selState
	if cur, err = b.CurrentSelection(ctx); err != nil || cur.Text != want.Text {
		t.Fatalf("current = %+v, %v; want text %q", cur, err, want.Text)
	}
	// It is what `y` yanks (the control character is two cells wide).
	selInput(t, n, "gvy")
	var reg string
	n.Eval(t, `return vim.fn.getreg('"')`, &reg)
	if reg != want.Text {
		t.Fatalf("gvy yanked %q, the pull returned %q", reg, want.Text)
	}

	// Arming and disarming over and over leaves no autocmd behind.
	for i := 0; i < 5; i++ {
		if _, err := b.PullSelection(ctx, true); err != nil {
			t.Fatal(err)
		}
		selInput(t, n, "jvj<Esc>")
	}
	var acs struct {
		Moves, Modes int
		Armed        bool
	}
	n.Eval(t, `local function count(ev)
  return #vim.api.nvim_get_autocmds({ group = "nvim-claude-selection", event = ev })
end
return { Moves = count("CursorMoved") + count("CursorMovedI"), Modes = count("ModeChanged"), Armed = require("claude.selection")._debug().armed }`, &acs)
	wantMoves, wantModes := 0, 2
	if acs.Armed {
		wantMoves, wantModes = 2, 3
	}
	if acs.Moves != wantMoves || acs.Modes != wantModes {
		t.Fatalf("after five arm/disarm cycles: %+v; want %d move and %d ModeChanged autocmds", acs, wantMoves, wantModes)
	}
}

// recordSelectionNotifications accepts what the tracker sends to the
// test's channel and notes it as it is sent: the returned function gives
// the selection_update payloads and the count of selection_dirty so far.
func recordSelectionNotifications(t *testing.T, n *nvimtest.Nvim) func() (updates []string, dirty int) {
	t.Helper()
	ignoreSelectionNotifications(t, n)
	n.Exec(t, `_G.sent = { updates = {}, dirty = 0 }
_G.sent_notify = vim.rpcnotify
local notify = vim.rpcnotify
vim.rpcnotify = function(chan, method, ...)
  if method == "selection_update" then
    table.insert(_G.sent.updates, (...))
  elseif method == "selection_dirty" then
    _G.sent.dirty = _G.sent.dirty + 1
  end
  return notify(chan, method, ...)
end`)
	t.Cleanup(func() { n.Exec(t, `vim.rpcnotify = _G.sent_notify`) })
	return func() ([]string, int) {
		var sent struct {
			Updates []string `json:"updates"`
			Dirty   int      `json:"dirty"`
		}
		n.Eval(t, `return { updates = #_G.sent.updates > 0 and _G.sent.updates or nil, dirty = _G.sent.dirty }`, &sent)
		return sent.Updates, sent.Dirty
	}
}

// TestSelectionLeadingEdge pins what Lua sends for the first move after a
// rest (the leading edge): the state, pushed at once with a pull for the
// rest of the burst, rather than selection_dirty; and what it leaves to the
// pull. The rest is set per case (_rest: 0 = any move the autocmds see,
// math.huge = none), so that nothing depends on how fast the test runs.
func TestSelectionLeadingEdge(t *testing.T) {
	type step struct {
		keys string // typed and handled
		lua  string // or run
		open string // or openFile with focus selecting this text (a tool)
	}
	// cur is the cursor alone at line, character (0-based, UTF-16).
	cur := func(line, char int) selState {
		p := selPosAt(line, char)
		return selState{Kind: "selection", Start: p, End: p, Empty: true}
	}
	tests := []struct {
		name  string
		rest  string // Lua: _rest's argument
		setup string // Lua run before the autocmds are armed
		steps []step
		// What Lua sent during the steps: the selection_updates (compared
		// without seq and path; each must ask for a pull) and how many
		// selection_dirty.
		updates []selState
		dirty   int
		// Then the host's pulls (wait while the burst had moved since it
		// was noted): the state gathered at rest, if not nil.
		pulled *selState
	}{
		{
			name: "a move after a rest is pushed at once", rest: "0",
			steps:   []step{{keys: "3G"}},
			updates: []selState{cur(2, 0)},
		},
		{
			name: "the moves that follow are left to the pull", rest: "0",
			steps:   []step{{keys: "3G"}, {keys: "j"}, {keys: "w"}},
			updates: []selState{cur(2, 0)},
			pulled:  &selState{Kind: "selection", Start: selPosAt(3, 6), End: selPosAt(3, 6), Empty: true},
		},
		{
			name: "a move within the rest is only noted", rest: "math.huge",
			steps:  []step{{keys: "3G"}, {keys: "j"}},
			dirty:  1,
			pulled: &selState{Kind: "selection", Start: selPosAt(3, 0), End: selPosAt(3, 0), Empty: true},
		},
		{
			name: "insert mode", rest: "0",
			setup:   `vim.api.nvim_win_set_cursor(0, { 3, 0 })`,
			steps:   []step{{keys: "A"}, {keys: "xy"}, {keys: "<Esc>"}},
			updates: []selState{cur(2, 13)},
			pulled:  &selState{Kind: "selection", Start: selPosAt(2, 14), End: selPosAt(2, 14), Empty: true},
		},
		{
			name: "a window that shares nothing is only noted", rest: "0",
			setup: `vim.cmd("help")`,
			steps: []step{{keys: "G"}},
			dirty: 1,
		},
		{
			name: "a denied file is pushed as denied, with nothing of it", rest: "0",
			setup:   `vim.cmd("edit .env")`,
			steps:   []step{{keys: "j"}},
			updates: []selState{{Kind: "denied"}},
		},
		{
			name: "entering visual mode is only noted", rest: "0",
			steps:  []step{{keys: "v"}, {keys: "l"}},
			dirty:  1,
			pulled: &selState{Kind: "selection", Text: "he", Start: selPosAt(0, 0), End: selPosAt(0, 2)},
		},
		{
			// openFile selects the text in Visual mode: ModeChanged comes
			// before the tool records the selection as its own, and is only
			// noted; the pull withholds it. The user's change of it is the
			// user's.
			name: "a tool's selection is not pushed, the user's change of it is", rest: "0",
			setup: `vim.cmd("edit keys.txt")`,
			steps: []step{
				{open: "AKIA-SECRET"},
				{lua: `assert(require("claude.selection").pull(false).kind == "wait")`},
				{lua: `assert(require("claude.selection").pull(false).kind == "skip")`},
				{keys: "l"},
			},
			updates: []selState{{Kind: "selection", Text: "AKIA-SECRET-", Start: selPosAt(1, 0), End: selPosAt(1, 12)}},
			dirty:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, b, _ := startSelNvim(t)
			ctx := context.Background()
			for name, text := range map[string]string{".env": "A=1\nB=2\n", "keys.txt": "one\nAKIA-SECRET-KEY\n"} {
				if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sent := recordSelectionNotifications(t, n)
			n.Exec(t, `require("claude.selection").attach(...)`, n.ChannelID())
			t.Cleanup(func() { n.Exec(t, `require("claude.selection").detach() require("claude.selection")._rest(nil)`) })
			n.Exec(t, `require("claude.selection")._rest(`+tt.rest+`)`)
			if tt.setup != "" {
				n.Exec(t, tt.setup)
			}
			// At rest and armed, wherever setup left the cursor.
			if _, err := b.PullSelection(ctx, true); err != nil {
				t.Fatal(err)
			}
			u0, d0 := sent()
			for _, s := range tt.steps {
				switch {
				case s.keys != "":
					selInput(t, n, s.keys)
				case s.lua != "":
					n.Exec(t, s.lua)
				case s.open != "":
					var path string
					n.Eval(t, `return vim.api.nvim_buf_get_name(0)`, &path)
					o, err := b.OpenFile(ctx, nvimbridge.OpenFileOptions{Path: path, StartText: s.open, Focus: true})
					if err != nil || !o.Found {
						t.Fatalf("openFile: %+v, %v", o, err)
					}
				}
			}
			raw, d := sent()
			raw = raw[len(u0):]
			if len(raw) != len(tt.updates) || d-d0 != tt.dirty {
				t.Fatalf("sent %d selection_update %q and %d selection_dirty; want %d and %d", len(raw), raw, d-d0, len(tt.updates), tt.dirty)
			}
			for i, want := range tt.updates {
				var got struct {
					State selState `json:"state"`
					Pull  bool     `json:"pull"`
				}
				if err := json.Unmarshal([]byte(raw[i]), &got); err != nil {
					t.Fatal(err)
				}
				got.State.Seq, got.State.Path = 0, ""
				if got.State != want || !got.Pull {
					t.Errorf("selection_update %d = %s\nwant %+v with pull", i, raw[i], want)
				}
			}
			if tt.pulled == nil {
				return
			}
			st, err := b.PullSelection(ctx, false)
			if err == nil && st.Kind == nvimbridge.SelectionKindWait {
				st, err = b.PullSelection(ctx, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			st.Seq, st.Path = 0, ""
			if st != *tt.pulled {
				t.Fatalf("the pull after the burst = %+v\nwant %+v", st, *tt.pulled)
			}
		})
	}
}
