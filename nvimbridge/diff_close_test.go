package nvimbridge_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// normalized is a layout with its window ids replaced by their place in the
// tab: closing the file's pane gives its place to the proposal's pane (a
// window with another id), which must then be what the user had.
func normalized(l diffLayoutState) diffLayoutState {
	idx := map[int]int{}
	wins := append([]diffLayoutWin(nil), l.Wins...)
	for i := range wins {
		idx[wins[i].ID] = i + 1
		wins[i].ID = 0
	}
	l.Wins = wins
	l.Win = idx[l.Win]
	return l
}

// Closing either pane of a pending proposal rejects it, and the layout is
// what it was before the diff opened: the file's window stays (in the
// proposal pane's place when the user closed the file's own pane), with its
// buffer, size, view, options and 'winbar'.
func TestDiffCloseEitherPane(t *testing.T) {
	proposal := strings.Replace(diffText, "three", "THREE", 1)
	tests := []struct {
		name  string
		diff  string
		setup string // Lua before the diff opens
		lua   string // run with (proposal window, file's window) as ...
		only  bool   // the user closed every other window: only the file's is left
	}{
		{name: ":q in your pane", lua: `vim.api.nvim_set_current_win(own) vim.cmd("quit")`},
		{name: ":close in your pane", lua: `vim.api.nvim_set_current_win(own) vim.cmd("close")`},
		{name: "<C-w>c in your pane", lua: `vim.api.nvim_set_current_win(own) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-w>c", true, false, true), "mx", false)`},
		{name: ":hide in your pane", lua: `vim.api.nvim_set_current_win(own) vim.cmd("hide")`},
		{name: ":q in your pane, from the terminal", lua: `vim.api.nvim_win_call(own, function() vim.cmd("quit") end) vim.cmd("wincmd l")`},
		{name: ":q in your pane, horizontal", diff: `layout = "horizontal"`, lua: `vim.api.nvim_set_current_win(own) vim.cmd("quit")`},
		{name: ":q in your pane, splitright", setup: `vim.o.splitright = true vim.o.splitbelow = true`, lua: `vim.api.nvim_set_current_win(own) vim.cmd("quit")`},
		{name: ":q in your pane of a borrowed window", setup: `vim.cmd("edit other.txt") vim.cmd("normal! 3G")`, lua: `vim.api.nvim_set_current_win(own) vim.cmd("quit")`},
		{name: ":q in your pane of a window made for the diff", setup: `vim.cmd("wincmd l") vim.cmd("only")`, lua: `vim.api.nvim_set_current_win(own) vim.cmd("quit")`},
		{name: ":q in your pane in a tab of its own", diff: `open_in_new_tab = true`, lua: `vim.api.nvim_set_current_win(own) vim.cmd("quit")`},
		{name: ":tabclose in your pane", diff: `open_in_new_tab = true`, lua: `vim.api.nvim_set_current_win(own) vim.cmd("tabclose")`},
		{name: ":q in the proposal", lua: `vim.api.nvim_set_current_win(prop) vim.cmd("quit")`},
		{name: ":hide in the proposal", lua: `vim.api.nvim_set_current_win(prop) vim.cmd("hide")`},
		{name: "<C-w>c in the proposal", lua: `vim.api.nvim_set_current_win(prop) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-w>c", true, false, true), "mx", false)`},
		{name: ":bwipeout! of the proposal from your pane", lua: `vim.api.nvim_set_current_win(own) vim.cmd("bwipeout! " .. vim.api.nvim_win_get_buf(prop))`},
		{name: ":only in the proposal", lua: `vim.api.nvim_set_current_win(prop) vim.cmd("only")`, only: true},
		{name: "<C-w>o in the proposal", lua: `vim.api.nvim_set_current_win(prop) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-w>o", true, false, true), "mx", false)`, only: true},
		{name: ":only in your pane", lua: `vim.api.nvim_set_current_win(own) vim.cmd("only")`, only: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{diff: tt.diff, files: map[string]string{"other.txt": "o1\no2\no3\no4\n"}})
			e.Exec(t, tt.setup)
			before := e.layout(t)
			_, v := e.open(t, e.file, proposal)
			pw, ow := e.winOf(t, v.ProposalBuf), e.winOf(t, v.OriginalBuf)
			e.Exec(t, `local prop, own = ...
`+tt.lua, pw, ow)
			d := e.decision(t)
			if d.Decision != "reject" || d.Contents != nil {
				t.Fatalf("decision %+v, want reject", d)
			}
			e.waitClosed(t, v)
			e.noDecision(t)
			if tt.only {
				var got struct {
					Wins  []string `json:"wins"`
					Diffs int      `json:"diffs"`
				}
				e.Eval(t, `local out = { wins = {}, diffs = 0 }
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  table.insert(out.wins, vim.fn.bufname(vim.api.nvim_win_get_buf(w)))
  if vim.wo[w].diff then out.diffs = out.diffs + 1 end
end
return out`, &got)
				if strings.Join(got.Wins, ",") != "main.txt" || got.Diffs != 0 {
					t.Fatalf("after %s: windows %q, %d in diff mode; want only main.txt, none", tt.name, got.Wins, got.Diffs)
				}
				return
			}
			want := normalized(before)
			var after diffLayoutState
			for i := 0; i < 50; i++ {
				after = normalized(e.layout(t))
				if sameLayout(want, after) {
					break
				}
				e.Exec(t, `vim.wait(20)`)
			}
			if !sameLayout(want, after) {
				b, _ := json.Marshal(want)
				a, _ := json.Marshal(after)
				t.Fatalf("%s: layout not restored\nbefore: %s\nafter:  %s\n%s", tt.name, b, a, e.notes(t))
			}
		})
	}
}

// needWinbar skips a test of the bars where Neovim has no 'winbar'.
func needWinbar(t *testing.T, e *diffEnv) {
	t.Helper()
	var v08 int
	e.Eval(t, `return vim.fn.has("nvim-0.8")`, &v08)
	if v08 == 0 {
		t.Skip("no 'winbar' before Neovim 0.8")
	}
}

// barState is what the panes of a diff show above their text.
type barState struct {
	HasWinbar bool   `json:"has_winbar"`
	Prop      string `json:"prop"` // the proposal's bar, as drawn
	Own       string `json:"own"`  // the file's pane's bar, as drawn
	PropRow   int    `json:"prop_row"`
	OwnRow    int    `json:"own_row"`
	PropWidth int    `json:"prop_width"`
	BufName   string `json:"buf_name"` // the proposal buffer's name
}

const barStateLua = `local prop, own, width = ...
if width > 0 then vim.api.nvim_win_set_width(prop, width) end
vim.cmd("redraw")
local out = { has_winbar = vim.fn.has("nvim-0.8") == 1, prop = "", own = "",
  prop_row = vim.fn.screenpos(prop, 1, 1).row, own_row = vim.fn.screenpos(own, 1, 1).row,
  prop_width = vim.api.nvim_win_get_width(prop), buf_name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(prop)) }
if out.has_winbar then
  for _, k in ipairs({ "prop", "own" }) do
    local w = k == "prop" and prop or own
    if vim.wo[w].winbar ~= "" then
      out[k] = vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
    end
  end
end
return out`

// The bars over a proposal: the keys that answer it come first and stay
// visible in a narrow pane (37 columns beside the chat, 70 in a split), the
// file's pane has a bar of its own so the two panes' text rows line up, the
// user's own 'winbar' comes back afterwards, and a file name from outside
// is shown, never obeyed.
func TestDiffBars(t *testing.T) {
	proposal := strings.Replace(diffText, "three", "THREE", 1)
	t.Run("keys first at any width, rows in line", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{})
		_, v := e.open(t, e.file, proposal)
		pw, ow := e.winOf(t, v.ProposalBuf), e.winOf(t, v.OriginalBuf)
		for _, width := range []int{37, 70, 190} {
			var got barState
			e.Eval(t, barStateLua, &got, pw, ow, width)
			if got.PropRow != got.OwnRow {
				t.Errorf("width %d: the proposal's first line is on row %d, the file's on row %d", got.PropWidth, got.PropRow, got.OwnRow)
			}
			if !got.HasWinbar {
				continue
			}
			if !strings.HasPrefix(got.Prop, ":w accept · :q reject") {
				t.Errorf("width %d: the proposal's bar shows %q, want the keys first", got.PropWidth, got.Prop)
			}
			if n := len([]rune(got.Prop)); n > got.PropWidth {
				t.Errorf("width %d: a bar of %d characters: %q", got.PropWidth, n, got.Prop)
			}
			if width < 190 && !strings.Contains(got.Own, "your main.txt — edit freely") {
				t.Errorf("width %d: the file's bar shows %q", got.PropWidth, got.Own)
			}
			if width == 190 && !strings.Contains(got.Prop, "hunk 1/1 · 0 accepted · 0 rejected") {
				t.Errorf("a wide proposal's bar shows %q, want the whole counter", got.Prop)
			}
		}
		e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
		e.decision(t)
		e.waitClosed(t, v)
	})
	t.Run("your own winbar comes back", func(t *testing.T) {
		for _, mine := range []string{"", "%f MINE"} {
			e := startDiffEnv(t, diffEnvOpts{})
			needWinbar(t, e)
			e.Exec(t, `vim.wo.winbar = ...`, mine)
			_, v := e.open(t, e.file, proposal)
			var during string
			e.Eval(t, `return vim.wo[...].winbar`, &during, e.winOf(t, v.OriginalBuf))
			if during == mine {
				t.Fatalf("the file's pane kept its own bar %q during the diff", during)
			}
			e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
			e.decision(t)
			e.waitClosed(t, v)
			var after []string
			e.Eval(t, `local out = {}
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  if vim.bo[vim.api.nvim_win_get_buf(w)].buftype == "" then table.insert(out, vim.wo[w].winbar) end
end
return out`, &after)
			if len(after) != 1 || after[0] != mine {
				t.Fatalf("after the diff the file's window has the bar %q, want %q", after, mine)
			}
		}
	})
	t.Run("a window split off a pane is no pane", func(t *testing.T) {
		for _, split := range []string{"vsplit", "tab split"} {
			e := startDiffEnv(t, diffEnvOpts{})
			needWinbar(t, e)
			_, v := e.open(t, e.file, proposal)
			var copied string
			e.Eval(t, `local own = ...
vim.api.nvim_set_current_win(own)
vim.cmd(select(2, ...))
local w = vim.api.nvim_get_current_win()
vim.cmd("redraw")
return vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str`, &copied, e.winOf(t, v.OriginalBuf), split)
			if strings.Contains(copied, "rejects") {
				t.Errorf("after :%s the new window's bar says %q, but closing it rejects nothing", split, copied)
			}
			e.Exec(t, `vim.cmd("ClaudeDiffReject")`)
			e.decision(t)
			e.waitClosed(t, v)
			var bars []string
			e.Eval(t, `local out = {}
for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.wo[w].winbar ~= "" then table.insert(out, vim.wo[w].winbar) end
end
return out`, &bars)
			if len(bars) != 0 {
				t.Errorf("after :%s and the diff closed, windows keep the bars %q", split, bars)
			}
		}
	})
	t.Run("hint off: no bars", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{diff: `hint = false`})
		_, v := e.open(t, e.file, proposal)
		var got barState
		e.Eval(t, barStateLua, &got, e.winOf(t, v.ProposalBuf), e.winOf(t, v.OriginalBuf), 0)
		if got.Prop != "" || got.Own != "" || got.PropRow != got.OwnRow {
			t.Fatalf("with hint = false: %+v", got)
		}
	})
	t.Run("a file name from outside", func(t *testing.T) {
		e := startDiffEnv(t, diffEnvOpts{files: map[string]string{"we\x1bird\u202e.txt": "one\n"}})
		path := strings.Replace(e.file, "main.txt", "we\x1bird\u202e.txt", 1)
		_, v := e.open(t, path, "ONE\n")
		var got barState
		e.Eval(t, barStateLua, &got, e.winOf(t, v.ProposalBuf), e.winOf(t, v.OriginalBuf), 0)
		for what, s := range map[string]string{"proposal bar": got.Prop, "file's bar": got.Own, "buffer name": got.BufName} {
			if strings.ContainsAny(s, "\x1b\u202e") {
				t.Errorf("the %s shows a raw control character: %q", what, s)
			}
		}
		if !strings.Contains(got.BufName, "we^[ird<U+202E>.txt") {
			t.Errorf("the proposal buffer is named %q", got.BufName)
		}
		if got.HasWinbar && !strings.Contains(got.Own, "your we^[ird<U+202E>.txt") {
			t.Errorf("the file's bar shows %q", got.Own)
		}
	})
}
