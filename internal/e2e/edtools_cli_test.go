//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// The editor tools reach the model through the real CLI. The CLI
// that :ClaudeStart launches gets --mcp-config naming `nvim-claude mcp`
// (no secret on its argv) and the socket and token in its environment; the
// model finds mcp__nvim__references with ToolSearch, the CLI asks for
// permission (answered in the terminal), and the tool result in the next
// request lists gopls's references. A call on a file no language server
// serves gets a clear error result, and the session goes on.

var edCalcGo = "package calc\n\n// Sum adds numbers.\nfunc Sum(xs ...int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n"

var edMainGo = "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/calc/calc\"\n)\n\nfunc main() {\n\tfmt.Println(calc.Sum(1, 2, 3))\n}\n"

func TestCLIEditorToolsReferences(t *testing.T) {
	gopls := nvimtest.Gopls(t)
	s := startSession(t, sessionOpts{files: map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.22\n",
		"calc/calc.go": edCalcGo,
		"main.go":      edMainGo,
		"notes.txt":    "no language server here\n",
	}})
	// The CLI's command line names the relay and carries no secret.
	var argv string
	s.Eval(t, `local pid = require("claude").status().terminal.pid
		local f = io.open("/proc/" .. pid .. "/cmdline", "rb") local s = f:read("*a") f:close()
		return (s:gsub("%z", " "))`, &argv)
	if !strings.Contains(argv, "--mcp-config") || !strings.Contains(argv, `"args":["mcp"]`) || strings.Contains(argv, "TOKEN") {
		t.Fatalf("the CLI got no --mcp-config for the editor tools (is edtools wired in app.Features with editor_tools.enable?); argv: %s", argv)
	}
	// Its environment names the socket and carries no token (the relay
	// reads it from the 0600 file beside the socket).
	var environ string
	s.Eval(t, `local pid = require("claude").status().terminal.pid
		local f = io.open("/proc/" .. pid .. "/environ", "rb") local s = f:read("*a") f:close()
		return (s:gsub("%z", "\n"))`, &environ)
	if !strings.Contains(environ, "NVIM_CLAUDE_MCP_SOCKET=/") || strings.Contains(strings.ToUpper(environ), "TOKEN") {
		t.Fatalf("the CLI's environment:\n%s", environ)
	}
	// gopls serves main.go; calc/calc.go is not open: the tool loads it and
	// attaches the running gopls.
	s.Exec(t, `local path, bin, root = ...
		local b = vim.fn.bufadd(path) vim.fn.bufload(b) vim.bo[b].buflisted = true
		local cfg = { name = "gopls", cmd = { bin }, root_dir = root }
		if vim.lsp.start then vim.lsp.start(cfg, { bufnr = b }) else vim.lsp.buf_attach_client(b, vim.lsp.start_client(cfg)) end`,
		filepath.Join(s.project, "main.go"), gopls, s.project)
	s.WaitFor(t, 60*time.Second, `(function() for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do if c.server_capabilities then return true end end end)()`,
		"", "gopls to start")

	search := fakeapi.ToolUse("ToolSearch", map[string]any{"query": "select:mcp__nvim__references"})
	refs := fakeapi.ToolUse("mcp__nvim__references", map[string]any{"file": "calc/calc.go", "symbol": "Sum"})
	noLSP := fakeapi.ToolUse("mcp__nvim__references", map[string]any{"file": "notes.txt", "line": 1})
	s.api.Script(
		fakeapi.Reply(search),
		fakeapi.Reply(refs),
		fakeapi.Reply(noLSP),
		fakeapi.Reply(fakeapi.Text("References found.")),
	)
	s.submit(t, "who uses Sum")
	s.approveTool(t, "nvim — References", 4)

	req := s.waitMain(t, 3)
	res, ok := req.ToolResult(refs.ID)
	if !ok {
		t.Fatalf("main request 3 has no result for the references call:\n%s", req.Text())
	}
	text := res.ResultText()
	want := "2 references of Sum (calc/calc.go:4:6):\ncalc/calc.go:4:6: func Sum(xs ...int) int {\nmain.go:10:19: fmt.Println(calc.Sum(1, 2, 3))"
	if res.IsError || text != want {
		t.Fatalf("references result (isError %v):\n%s\nwant:\n%s", res.IsError, text, want)
	}
	req = s.waitMain(t, 4)
	res, ok = req.ToolResult(noLSP.ID)
	if !ok {
		t.Fatalf("main request 4 has no result for the second call:\n%s", req.Text())
	}
	if !res.IsError || !strings.Contains(res.ResultText(), "no language server attached to notes.txt") {
		t.Fatalf("the call without a language server: isError %v, %s", res.IsError, res.ResultText())
	}
	s.waitScreen(t, 30*time.Second, "References found.")

	// The relay reached the host through the environment :ClaudeStart set
	// (its stderr is in the CLI's MCP log for the server).
	logs, _ := filepath.Glob(filepath.Join(s.env.Home, ".cache", "claude-cli-nodejs", "*", "mcp-logs-nvim", "*"))
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), "found by working directory") {
			t.Fatalf("the relay did not get the socket from its environment:\n%s", b)
		}
	}
}
