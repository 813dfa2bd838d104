package diff

import (
	"strings"
	"testing"
)

// closeAllDiffTabs closes the caller's diffs only: never the user's own
// diff windows, never another CLI's pending diff.
func TestCloseAllDiffTabsTranscript(t *testing.T) {
	h := startDiffHarness(t, "")
	clis := []*diffCLI{h.connect(t, 4242), h.connect(t, 4343)}
	// The user's own :diffthis pair in the first tab.
	h.Exec(t, `vim.fn.writefile({ "x", "y" }, "other.txt")
vim.cmd("vsplit other.txt") vim.cmd("diffthis") vim.cmd("wincmd l") vim.cmd("diffthis")`)
	a := strings.Replace(diffMainText, "one", "ONE", 1)
	b := strings.Replace(diffMainText, "two", "TWO", 1)
	c := strings.Replace(diffMainText, "ten", "TEN", 1)
	tabA, tabB, tabC := "✻ [Claude Code] main.txt (a) ⧉", "✻ [Claude Code] new.txt (b) ⧉", "✻ [Claude Code] main.txt (c) ⧉"
	accept := func(tab string) string {
		return `!! for _, d in ipairs(require("claude.diff").pending()) do if d.tab_name == "` + tab +
			`" then vim.api.nvim_set_current_win(vim.fn.win_findbuf(d.proposal_bufnr)[1]) end end vim.cmd("ClaudeDiffAccept")`
	}
	h.run(t, clis, diffLines(
		"1-> "+diffCloseAll(1),
		"1<- "+diffTextResult(1, "CLOSED_0_DIFF_TABS"),
		"1-> "+diffOpenCall(2, "$FILE", tabA, a),
		"1-> "+diffOpenCall(3, "$DIR/new.txt", tabB, b),
		"2-> "+diffOpenCall(2, "$FILE", tabC, c),
		`?? #require("claude.diff").pending() == 3`,
		// CLI 1 starts a turn: its two diffs close (a "no" for each); CLI 2's stays.
		"1-> "+diffCloseAll(4),
		"1<* "+diffTextResult(2, "DIFF_REJECTED"),
		"1<* "+diffTextResult(3, "DIFF_REJECTED"),
		"1<* "+diffTextResult(4, "CLOSED_2_DIFF_TABS"),
		`?? #require("claude.diff").pending() == 1 and require("claude.diff").pending()[1].tab_name == "`+tabC+`"`,
		"2..",
		// CLI 2's diff is answered on CLI 2's connection only.
		accept(tabC),
		"2<- "+diffTextResult(2, "FILE_SAVED", c),
		"1..",
		"1-> "+diffCloseAll(5),
		"1<- "+diffTextResult(5, "CLOSED_0_DIFF_TABS"),
		`?? #require("claude.diff").pending() == 0 and #vim.api.nvim_list_tabpages() == 1`,
	))
	// The user's pair is still a diff, in the tab and windows it had.
	var st struct {
		Tabs  int      `json:"tabs"`
		Diffs []string `json:"diffs"`
	}
	h.Eval(t, `local diffs = {}
for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.wo[w].diff then table.insert(diffs, vim.fn.bufname(vim.api.nvim_win_get_buf(w))) end
end
return { tabs = #vim.api.nvim_list_tabpages(), diffs = diffs }`, &st)
	if st.Tabs != 1 || strings.Join(st.Diffs, ",") != "other.txt,main.txt" {
		t.Fatalf("the user's diff pair: %+v", st)
	}
}

func diffCloseAll(id int) string {
	return diffToolCall(id, "closeAllDiffTabs", map[string]string{})
}
