//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openDiff refuses a deny-listed file (its text would sit in a
// diff buffer under a name no deny-list matches). What the real CLI does
// with that isError: it keeps its own permission dialog in the terminal —
// the one it shows beside every IDE diff — and the user's answer there
// decides. So refusing costs the user only the side-by-side view, and the
// edit still happens only with their consent.
func TestCLIDiffRefusedFallsBackToTerminal(t *testing.T) {
	s := startDiffSession(t, "")
	env := filepath.Join(s.project, ".env")
	if err := os.WriteFile(env, []byte("API_KEY=old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.scriptEdit(env, "API_KEY=old", "API_KEY=new", "Edited the env.")
	s.submit(t, "rotate the key")
	s.waitScreen(t, 60*time.Second, "Do you want to make this edit to .env?")
	var pending, diffWins int
	s.Eval(t, `return #require("claude.diff").pending()`, &pending)
	s.Eval(t, `local n = 0 for _, w in ipairs(vim.api.nvim_list_wins()) do if vim.wo[w].diff then n = n + 1 end end return n`, &diffWins)
	if pending != 0 || diffWins != 0 {
		t.Fatalf("a diff of the deny-listed .env is shown: %d pending, %d diff windows", pending, diffWins)
	}
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])`, s.st.Terminal.Bufnr)
	// Keys typed right after the dialog appears may be lost: retry until
	// the dialog leaves the screen (no diff is pending to watch instead).
	const dialog = "Do you want to make this edit to .env?"
	for i := 0; ; i++ {
		s.typeKeys(t, "1")
		gone := false
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if !strings.Contains(s.screen(t), dialog) {
				gone = true
				break
			}
		}
		if gone {
			break
		}
		if i == 5 {
			t.Fatalf("the dialog never took the answer; screen:\n%s", s.screen(t))
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(env)
		if string(b) == "API_KEY=new\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf(".env = %q after the terminal's yes; screen:\n%s", b, s.screen(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.waitScreen(t, 30*time.Second, "Edited the env.")
}
