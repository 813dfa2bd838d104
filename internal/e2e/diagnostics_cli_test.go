//go:build unix

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// End-to-end tests of diagnostics with the real CLI: the model reads them
// with mcp__ide__getDiagnostics, and the CLI reports the ones an edit
// introduced as <new-diagnostics>.

// calcGo is a Go file the tests attach diagnostics to.
const calcGo = "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"

// diagSetLua loads a file in a listed buffer (not shown) and sets one error
// on it from a fake linter. Lua args: path, line, col, message.
const diagSetLua = `local path, lnum, col, msg = ...
local b = vim.fn.bufadd(path)
vim.fn.bufload(b)
vim.bo[b].buflisted = true
local ns = vim.api.nvim_create_namespace("e2e-lint")
vim.diagnostic.set(ns, b, {{ lnum = lnum, col = col, end_col = col + 1, message = msg, source = "e2e-lint", code = "E42" }})`

// approveTool answers the CLI's permission dialogs for an MCP tool with
// "2. Yes, and don't ask again" until n main requests have arrived: the
// dialog may come once per call, and keys typed just as it appears can be
// lost, so it is answered for as long as it shows.
func (s *session) approveTool(t *testing.T, tool string, n int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for len(s.api.MainRequests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for main request %d (got %d); screen:\n%s", n, len(s.api.MainRequests()), s.screen(t))
		}
		if scr := s.screen(t); strings.Contains(scr, "Do you want to proceed?") {
			if !strings.Contains(scr, tool) {
				t.Fatalf("a permission dialog not about %s:\n%s", tool, scr)
			}
			s.typeKeys(t, "2")
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// An error set with vim.diagnostic.set reaches the model
// through mcp__ide__getDiagnostics (found with ToolSearch, allowed in the
// CLI's permission dialog).
func TestCLIGetDiagnosticsTool(t *testing.T) {
	s := startSession(t, sessionOpts{files: map[string]string{"calc.go": calcGo}})
	path := filepath.Join(s.project, "calc.go")
	const msg = "undefined: c (planted by the test)"
	s.Exec(t, diagSetLua, path, 3, 8, msg)

	search := fakeapi.ToolUse("ToolSearch", map[string]any{"query": "select:mcp__ide__getDiagnostics"})
	getOne := fakeapi.ToolUse("mcp__ide__getDiagnostics", map[string]any{"uri": "file://" + path})
	getAll := fakeapi.ToolUse("mcp__ide__getDiagnostics", map[string]any{})
	s.api.Script(
		fakeapi.Reply(search),
		fakeapi.Reply(getOne),
		fakeapi.Reply(getAll),
		fakeapi.Reply(fakeapi.Text("Diagnostics read.")),
	)
	s.submit(t, "check the diagnostics")
	s.approveTool(t, "GetDiagnostics", 4)

	type fileDiags struct {
		URI         string `json:"uri"`
		Diagnostics []struct {
			Message  string `json:"message"`
			Severity string `json:"severity"`
			Range    struct {
				Start struct{ Line, Character int } `json:"start"`
				End   struct{ Line, Character int } `json:"end"`
			} `json:"range"`
			Source string          `json:"source"`
			Code   json.RawMessage `json:"code"`
		} `json:"diagnostics"`
	}
	check := func(n int, id string) {
		t.Helper()
		req := s.waitMain(t, n)
		res, ok := req.ToolResult(id)
		if !ok {
			t.Fatalf("main request %d has no result for getDiagnostics:\n%s", n, req.Text())
		}
		text := res.ResultText()
		if res.IsError {
			t.Fatalf("getDiagnostics failed: %s", text)
		}
		var files []fileDiags
		if err := json.Unmarshal([]byte(text), &files); err != nil {
			t.Fatalf("getDiagnostics result is not the JSON array: %v\n%s", err, text)
		}
		if len(files) != 1 || files[0].URI != "file://"+path || len(files[0].Diagnostics) != 1 {
			t.Fatalf("getDiagnostics result: %s", text)
		}
		d := files[0].Diagnostics[0]
		if d.Message != msg || d.Severity != "Error" || d.Source != "e2e-lint" || string(d.Code) != `"E42"` ||
			d.Range.Start.Line != 3 || d.Range.Start.Character != 8 || d.Range.End.Character != 9 {
			t.Fatalf("the diagnostic: %+v", d)
		}
	}
	check(3, getOne.ID)
	check(4, getAll.ID)
	s.waitScreen(t, 30*time.Second, "Diagnostics read.")
}

// fakeLinterLua reports every line with "TODO" in *.go buffers as a
// warning, whenever a buffer is read or reloaded (Neovim 0.7 drops
// diagnostics set in BufReadPost of a reload; FileChangedShellPost comes
// after that).
const fakeLinterLua = `local ns = vim.api.nvim_create_namespace("e2e-lint")
local function lint(buf)
  local d = {}
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local c = l:find("TODO", 1, true)
    if c then
      table.insert(d, { lnum = i - 1, col = c - 1, end_col = c + 3, message = "TODO comment left in the code", severity = vim.diagnostic.severity.WARN, source = "e2e-lint" })
    end
  end
  vim.diagnostic.set(ns, buf, d)
end
vim.api.nvim_create_autocmd({ "BufReadPost", "FileChangedShellPost", "BufWritePost" }, { pattern = "*.go", callback = function(a) lint(a.buf) end })
local b = vim.fn.bufadd((...))
vim.fn.bufload(b)
vim.bo[b].buflisted = true
lint(b)`

// An Edit that introduces a diagnostic (a fake linter
// reports TODO comments when the buffer is read or reloaded) reaches the
// model as <new-diagnostics>. The CLI asks getDiagnostics {uri} just before
// writing and getDiagnostics {} right after: that second call reloads the
// buffer the CLI changed on disk, the linter runs, and the answer carries
// its report. acceptEdits mode writes without the IDE diff.
//
// The CLI compares the uri of the answer with "file://" + its own path,
// without percent-decoding: the file with a space in its name pins that
// the uri is sent unencoded (an encoded one loses the baseline, and the
// report).
func TestCLINewDiagnosticsAfterEdit(t *testing.T) {
	for _, name := range []string{"calc.go", "with space/my calc.go"} {
		t.Run(name, func(t *testing.T) {
			// acceptEdits from the start: cycling Shift+Tab against a
			// terminal that redraws late overshot the mode under load.
			s := startSession(t, sessionOpts{permissionMode: "acceptEdits", files: map[string]string{name: calcGo}})
			path := filepath.Join(s.project, name)
			s.Exec(t, fakeLinterLua, path)
			read := fakeapi.ToolUse("Read", map[string]any{"file_path": path})
			edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "return a + b", "new_string": "return a + b // TODO: overflow"})
			s.api.Script(
				fakeapi.Reply(read),
				fakeapi.Reply(edit),
				fakeapi.Reply(fakeapi.Text("Edited.")),
			)
			s.submit(t, "edit calc")
			req := s.waitMain(t, 3)
			if _, ok := req.ToolResult(edit.ID); !ok {
				t.Fatalf("main request 3 does not answer the Edit:\n%s", req.Text())
			}
			text := req.Text()
			want := filepath.Base(name) + ":\n  ⚠ [Line 4:18] TODO comment left in the code (e2e-lint)"
			if !strings.Contains(text, "<new-diagnostics>") || !strings.Contains(text, want) {
				t.Fatalf("main request 3 lacks <new-diagnostics> with %q:\n%s", want, text)
			}
			s.waitScreen(t, 30*time.Second, "Edited.")
			// The buffer shows the edit, and has no unsaved changes.
			var st struct {
				Line     string `json:"line"`
				Modified bool   `json:"modified"`
			}
			s.Eval(t, `local b = vim.fn.bufnr(vim.fn.fnameescape(...) .. "$")
				return { line = vim.api.nvim_buf_get_lines(b, 3, 4, false)[1], modified = vim.bo[b].modified }`, &st, path)
			if st.Line != "\treturn a + b // TODO: overflow" || st.Modified {
				t.Fatalf("the buffer after the edit: %+v", st)
			}
		})
	}
}

// With gopls attached, an Edit that breaks the code: the getDiagnostics {}
// after the write reloads the buffer, waits for gopls to report on the new
// text, and the model gets gopls's error as <new-diagnostics>.
func TestCLINewDiagnosticsFromGopls(t *testing.T) {
	gopls := nvimtest.Gopls(t)
	s := startSession(t, sessionOpts{permissionMode: "acceptEdits", files: map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.22\n",
		"calc.go": calcGo,
	}})
	path := filepath.Join(s.project, "calc.go")
	s.Exec(t, `local path, bin, root = ...
		local b = vim.fn.bufadd(path) vim.fn.bufload(b) vim.bo[b].buflisted = true
		local cfg = { name = "gopls", cmd = { bin }, root_dir = root }
		if vim.lsp.start then vim.lsp.start(cfg, { bufnr = b }) else vim.lsp.buf_attach_client(b, vim.lsp.start_client(cfg)) end`,
		path, gopls, s.project)
	s.WaitFor(t, 60*time.Second, `(function() for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do if c.initialized then return true end end end)()`,
		"", "gopls to start")
	read := fakeapi.ToolUse("Read", map[string]any{"file_path": path})
	edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "return a + b", "new_string": `return a + "b"`})
	s.api.Script(
		fakeapi.Reply(read),
		fakeapi.Reply(edit),
		fakeapi.Reply(fakeapi.Text("Edited.")),
	)
	s.submit(t, "edit calc")
	req := s.waitMain(t, 3)
	text := req.Text()
	if !strings.Contains(text, "<new-diagnostics>") || !strings.Contains(text, "calc.go:") || !strings.Contains(text, "(compiler)") {
		t.Fatalf("main request 3 lacks gopls's error in <new-diagnostics>:\n%s", text)
	}
	t.Logf("%s", text[strings.Index(text, "<new-diagnostics>"):])
	s.waitScreen(t, 30*time.Second, "Edited.")
}
