//go:build unix

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// End to end with the real CLI: the scripted model finds
// mcp__ide__executeCode with ToolSearch and calls it; the user allows the
// tool in the CLI's permission dialog, then confirms the run in Neovim's
// float; the next request to the model holds the kernel's output. A second
// call sees the first one's variables.
func TestCLIExecuteCode(t *testing.T) {
	s := startSession(t, sessionOpts{files: map[string]string{"analysis.py": "# %%\nimport math\n"}})
	s.Exec(t, `vim.cmd("wincmd t | edit analysis.py | wincmd l")`)

	search := fakeapi.ToolUse("ToolSearch", map[string]any{"query": "select:mcp__ide__executeCode"})
	first := fakeapi.ToolUse("mcp__ide__executeCode", map[string]any{"code": "answer = 6 * 7\nprint('the answer is', answer)"})
	second := fakeapi.ToolUse("mcp__ide__executeCode", map[string]any{"code": "answer + 1"})
	s.api.Script(
		fakeapi.Reply(search),
		fakeapi.Reply(first),
		fakeapi.Reply(second),
		fakeapi.Reply(fakeapi.Text("Ran it.")),
	)
	s.submit(t, "run some python")

	// Answer whatever asks: the CLI's permission dialog for the MCP tool
	// (in the terminal), then our float (in Neovim), once per call.
	confirmed := 0
	deadline := time.Now().Add(120 * time.Second)
	for len(s.api.MainRequests()) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for main request 4 (got %d, confirmed %d); screen:\n%s", len(s.api.MainRequests()), confirmed, s.screen(t))
		}
		var pending int
		s.Eval(t, `return #require("claude.execute").pending()`, &pending)
		if pending > 0 {
			// The float waits beside the terminal, which keeps the focus:
			// go to it as the user would, then answer.
			s.Exec(t, `require("claude.config").options.execute.grace_ms = 0 vim.cmd("ClaudeExecute")`)
			if _, err := s.Input("r"); err != nil {
				t.Fatal(err)
			}
			confirmed++
		} else if scr := s.screen(t); strings.Contains(scr, "Do you want to proceed?") {
			if !strings.Contains(scr, "ExecuteCode") { // the dialog says "ide — ExecuteCode Tool"
				t.Fatalf("a permission dialog not about executeCode:\n%s", scr)
			}
			s.typeKeys(t, "2")
		}
		time.Sleep(300 * time.Millisecond)
	}
	check := func(n int, id, want string) {
		t.Helper()
		req := s.waitMain(t, n)
		res, ok := req.ToolResult(id)
		if !ok {
			t.Fatalf("main request %d has no result for executeCode:\n%s", n, req.Text())
		}
		if res.IsError || !strings.Contains(res.ResultText(), want) {
			t.Fatalf("main request %d: executeCode result %q (isError %v), want %q", n, res.ResultText(), res.IsError, want)
		}
	}
	check(3, first.ID, "the answer is 42")
	check(4, second.ID, "43")
	s.waitScreen(t, 30*time.Second, "Ran it.")
}
