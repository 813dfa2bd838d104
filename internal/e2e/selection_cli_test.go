//go:build unix

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// selSampleGo is a small Go file whose lines are easy to tell apart.
const selSampleGo = "package sample\n\nfunc One() int { return 1 }\n\nfunc Two() int { return 2 }\n\nfunc Three() int { return 3 }\n\nfunc Four() int { return 4 }\n"

// keys types keys into Neovim as a user would and waits until they are
// processed.
func (e *editor) selInput(t *testing.T, keys string) {
	t.Helper()
	if _, err := e.Input(keys); err != nil {
		t.Fatal(err)
	}
	var mode string
	e.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode)
}

// editInOtherWindow leaves the Claude terminal for the editing window and
// opens name there (relative to the project).
func (s *session) editInOtherWindow(t *testing.T, name string) {
	t.Helper()
	s.selInput(t, `<C-\><C-n><C-w>p`)
	s.Exec(t, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, filepath.Join(s.project, name))
	var buf string
	s.Eval(t, `return vim.api.nvim_buf_get_name(0)`, &buf)
	if buf != filepath.Join(s.project, name) {
		t.Fatalf("editing %s, want %s", buf, name)
	}
}

// toTerminal goes back to the Claude terminal, in terminal mode.
func (s *session) toTerminal(t *testing.T) {
	t.Helper()
	s.Exec(t, `for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  if vim.api.nvim_win_get_buf(w) == ... then vim.api.nvim_set_current_win(w) end
end
vim.cmd("startinsert")`, s.st.Terminal.Bufnr)
}

func TestCLISeesVisualSelection(t *testing.T) {
	s := startSession(t, sessionOpts{files: map[string]string{"sample.go": selSampleGo}})
	s.api.Script(fakeapi.Reply(fakeapi.Text("Noted the selection.")))
	path := filepath.Join(s.project, "sample.go")

	s.editInOtherWindow(t, "sample.go")
	s.selInput(t, "2GVj")
	s.selInput(t, "<Esc>")
	s.toTerminal(t)
	s.waitScreen(t, 20*time.Second, "2 lines selected")
	s.submit(t, "explain this")
	req := s.waitMain(t, 1)
	text := req.Text()
	want := fmt.Sprintf("The user selected the lines 2 to 3 from %s", path)
	if !strings.Contains(text, want) {
		t.Fatalf("the request lacks %q:\n%s", want, text)
	}
	if !strings.Contains(text, "\nfunc One() int { return 1 }") {
		t.Fatalf("the request lacks the selected text:\n%s", text)
	}
	t.Logf("request text:\n%s", text)
}

// TestCLINeverSeesDeniedSelection: a selection in a file on the deny-list
// (.env by default) reaches no request the CLI makes — not its text, not
// its name — and the selection shared before it is taken back.
func TestCLINeverSeesDeniedSelection(t *testing.T) {
	const secret = "sk-live-4f9d2c7e1b"
	s := startSession(t, sessionOpts{files: map[string]string{
		"sample.go": selSampleGo,
		".env":      "API_KEY=" + secret + "\nDB_PASSWORD=" + secret + "-db\n",
	}})
	s.api.Script(fakeapi.Reply(fakeapi.Text("Nothing to see.")))

	// First a shared selection in an ordinary file…
	s.editInOtherWindow(t, "sample.go")
	s.selInput(t, "3GVj<Esc>")
	s.toTerminal(t)
	s.waitScreen(t, 20*time.Second, "2 lines selected")
	// …then a selection in .env, and back to the terminal.
	s.editInOtherWindow(t, ".env")
	s.selInput(t, "ggVj")
	s.selInput(t, "<Esc>")
	s.toTerminal(t)
	deadline := time.Now().Add(20 * time.Second)
	for strings.Contains(s.screen(t), "lines selected") || strings.Contains(s.screen(t), "In sample.go") {
		if time.Now().After(deadline) {
			t.Fatalf("the CLI still shows the earlier selection:\n%s", s.screen(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if scr := s.screen(t); strings.Contains(scr, ".env") {
		t.Fatalf("the CLI shows the denied file:\n%s", scr)
	}

	s.submit(t, "what is selected")
	s.waitMain(t, 1)
	s.waitScreen(t, 30*time.Second, "Nothing to see.")
	for i, req := range s.api.Requests() {
		body := string(req.Body)
		// (".env" alone is in the CLI's own system prompt.)
		for _, leak := range []string{secret, "API_KEY", filepath.Join(s.project, ".env"), "selected the lines", "func Two"} {
			if at := strings.Index(body, leak); at >= 0 {
				t.Errorf("request %d contains %q: …%s…", i, leak, body[max(0, at-200):min(len(body), at+200)])
			}
		}
	}
}
