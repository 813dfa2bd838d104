package diff

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// pidSessions names a CLI's session after its pid, as the sessions
// feature does for the terminals it started.
type pidSessions struct{ c *Reviews }

func (s pidSessions) SessionOf(owner string) (nvimbridge.DiffSession, bool) {
	for _, cl := range s.c.h.Clients() {
		if cl.ID == owner {
			return nvimbridge.DiffSession{ID: fmt.Sprintf("t%d", cl.PID), Name: fmt.Sprintf("wt-%d", cl.PID)}, true
		}
	}
	return nvimbridge.DiffSession{}, false
}

// Two sessions propose a file of the same name (the same file in two
// worktrees), at the same time: each diff opens in its own session's tab
// page, named after it; neither replaces the other; each answer reaches
// its own CLI; the session's tab stays for its next diff. With
// open_in_new_tab = false the same two diffs still both stay open.
func TestDiffTabPerSession(t *testing.T) {
	for _, tc := range []struct {
		opts     string
		wantTabs string // the tab pages while both are open, their t:claude_session_name
	}{
		{`open_in_new_tab = "session"`, ",wt-4242,wt-4343"},
		{``, ","},
	} {
		t.Run(tc.opts, func(t *testing.T) {
			h := startDiffHarness(t, tc.opts)
			h.rev.SetSessions(pidSessions{h.rev})
			clis := []*diffCLI{h.connect(t, 4242), h.connect(t, 4343)}
			for _, wt := range []string{"a", "b"} {
				if err := os.MkdirAll(filepath.Join(h.dir, wt), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(h.dir, wt, "main.txt"), []byte(diffMainText), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a := strings.Replace(diffMainText, "one", "ONE", 1)
			b := strings.Replace(diffMainText, "two", "TWO", 1)
			const tab = "✻ [Claude Code] main.txt ⧉"
			accept := func(file string) string {
				return `!! for _, d in ipairs(require("claude.diff").pending()) do if d.file:find("/` + file + `$") then vim.api.nvim_set_current_win(vim.fn.win_findbuf(d.proposal_bufnr)[1]) end end vim.cmd("ClaudeDiffAccept")`
			}
			names := `(function() local t = {} for _, tp in ipairs(vim.api.nvim_list_tabpages()) do local ok, n = pcall(vim.api.nvim_tabpage_get_var, tp, "claude_session_name") table.insert(t, ok and n or "") end return table.concat(t, ",") end)()`
			h.run(t, clis, diffLines(
				"1-> "+diffOpenCall(1, "$DIR/a/main.txt", tab, a),
				`?? #require("claude.diff").pending() == 1`,
				"2-> "+diffOpenCall(1, "$DIR/b/main.txt", tab, b),
				`?? #require("claude.diff").pending() == 2`,
				`?? `+names+` == "`+tc.wantTabs+`"`,
				`?? require("claude.diff").pending()[1].session.name == "wt-4242" and require("claude.diff").pending()[2].session.name == "wt-4343"`,
				accept("b/main.txt"),
				"2<- "+diffTextResult(1, "FILE_SAVED", b),
				"1..",
				accept("a/main.txt"),
				"1<- "+diffTextResult(1, "FILE_SAVED", a),
				`?? #require("claude.diff").pending() == 0`,
			))
			if tc.opts == "" {
				return
			}
			// The next diff of the first session opens in its tab again.
			var before int
			h.Eval(t, `return #vim.api.nvim_list_tabpages()`, &before)
			h.run(t, clis, diffLines(
				"1-> "+diffOpenCall(2, "$DIR/a/main.txt", tab, a),
				`?? #require("claude.diff").pending() == 1`,
				`?? vim.api.nvim_get_current_tabpage() == require("claude.diff").session_tab("t4242")`,
				`?? #vim.api.nvim_list_tabpages() == `+fmt.Sprint(before),
				accept("a/main.txt"),
				"1<- "+diffTextResult(2, "FILE_SAVED", a),
			))
		})
	}
}
