package editorcontext

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func diag(msg, sev string, l1, c1, l2, c2 int, source string, code string) diagnostic {
	d := diagnostic{Message: msg, Severity: sev, Range: diagRange{diagPosition{l1, c1}, diagPosition{l2, c2}}, Source: source}
	if code != "" {
		d.Code = json.RawMessage(code)
	}
	return d
}

func fileDiags(path string, ds ...diagnostic) testkit.Obj {
	if ds == nil {
		ds = []diagnostic{}
	}
	return testkit.Obj{"uri", "file://" + path, "diagnostics", ds}
}

func TestToolGetDiagnostics(t *testing.T) {
	h := startCtxHarness(t, map[string]string{
		"a.go":           "package a\n\nfunc F() { return 1 }\n",
		"b.go":           "package a\n",
		"with space.txt": "x\n",
		"{{out}}/o.txt":  "o\n",
	})
	a, b, sp := h.path("a.go"), h.path("b.go"), h.path("with space.txt")
	e1 := diag("too many return values", "Error", 2, 18, 2, 19, "compiler", `"WrongResultCount"`)
	w1 := diag(`unused <T> & "quoted" é😀`, "Warning", 0, 0, 0, 7, "fakelint", "")
	h1 := diag("hint", "Hint", 2, 5, 2, 6, "fakelint", "42")
	tr := `# diagnostics_changed is pushed when diagnostics change (coalesced per buffer)
lua: vim.cmd("edit a.go") _G.ns = vim.api.nvim_create_namespace("fakelint")
lua: vim.diagnostic.set(_G.ns, 0, {{ lnum = 2, col = 18, end_col = 19, message = "too many return values", source = "compiler", code = "WrongResultCount" }})
` + testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + a, "diagnostics", []diagnostic{e1}}) + `
# the same again: no push
lua: vim.diagnostic.set(_G.ns, 0, {{ lnum = 2, col = 18, end_col = 19, message = "too many return values", source = "compiler", code = "WrongResultCount" }})
lua: vim.wait(100, function() return false end)
# two sources on one buffer, and another file
lua: local ns2 = vim.api.nvim_create_namespace("compiler-ns") vim.diagnostic.set(_G.ns, 0, {{ lnum = 2, col = 5, end_col = 6, message = "hint", severity = 4, code = 42 }, { lnum = 0, col = 0, end_col = 7, message = 'unused <T> & "quoted" é😀', severity = 2 }})
` + testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + a, "diagnostics", []diagnostic{w1, h1}}) + `
lua: vim.cmd("edit with\\ space.txt") vim.diagnostic.set(_G.ns, 0, {{ lnum = 0, col = 0, message = "spaced", severity = 3 }})
` + testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + sp, "diagnostics", []diagnostic{diag("spaced", "Info", 0, 0, 0, 0, "fakelint", "")}}) + `
# a scratch buffer is not a file: nothing
lua: local s = vim.api.nvim_create_buf(false, true) vim.diagnostic.set(_G.ns, s, {{ lnum = 0, col = 0, message = "scratch" }})
# every file with diagnostics, sorted by path
` + testkit.SendCall(1, "getDiagnostics", testkit.Obj{}) +
		testkit.WantJSONText(1, []testkit.Obj{fileDiags(a, w1, h1), fileDiags(sp, diag("spaced", "Info", 0, 0, 0, 0, "fakelint", ""))}) + `
# one file, by URI (as the CLI asks before an edit), relative path, percent-encoded
` + testkit.SendCall(2, "getDiagnostics", testkit.Obj{"uri", "file://" + a}) +
		testkit.WantJSONText(2, []testkit.Obj{fileDiags(a, w1, h1)}) +
		testkit.SendCall(3, "getDiagnostics", testkit.Obj{"uri", "a.go"}) +
		testkit.WantJSONText(3, []testkit.Obj{fileDiags(a, w1, h1)}) +
		testkit.SendCall(4, "getDiagnostics", testkit.Obj{"uri", "file://" + h.dir + "/with%20space.txt"}) +
		testkit.WantJSONText(4, []testkit.Obj{fileDiags(h.dir+"/with%20space.txt", diag("spaced", "Info", 0, 0, 0, 0, "fakelint", ""))}) + `
# a file without diagnostics, or not open: an empty list under its URI
` + testkit.SendCall(5, "getDiagnostics", testkit.Obj{"uri", "file://" + b}) +
		testkit.WantJSONText(5, []testkit.Obj{fileDiags(b)}) +
		testkit.SendCall(6, "getDiagnostics", testkit.Obj{"uri", "file://" + h.out + "/o.txt"}) +
		testkit.WantJSONText(6, []testkit.Obj{fileDiags(h.out + "/o.txt")}) + `
# not a file URI: nothing; a wrong argument: an error result
` + testkit.SendCall(7, "getDiagnostics", testkit.Obj{"uri", "untitled:Untitled-1"}) +
		testkit.WantText(7, "[]") +
		testkit.SendCall(8, "getDiagnostics", testkit.Obj{"uri", 5}) +
		testkit.WantErrText(8, "invalid arguments: uri must be a string") + `
# cleared: an empty push, and gone from the answer
lua: vim.diagnostic.reset(_G.ns, vim.fn.bufnr("with space.txt"))
` + testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + sp, "diagnostics", []diagnostic{}}) +
		testkit.SendCall(9, "getDiagnostics", testkit.Obj{}) +
		testkit.WantJSONText(9, []testkit.Obj{fileDiags(a, w1, h1)}) + `
# wiped: the same
lua: vim.cmd("bwipeout! " .. vim.fn.bufnr("a.go"))
` + testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + a, "diagnostics", []diagnostic{}}) +
		testkit.SendCall(10, "getDiagnostics", testkit.Obj{}) +
		testkit.WantText(10, "[]")
	h.run(t, tr)
}

// The CLI asks getDiagnostics {} right after it wrote a file: the buffer is
// reloaded then, a linter run on reload reports, and the answer (after the
// push) carries it.
func TestToolGetDiagnosticsAfterEditOnDisk(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"m.txt": "x = 1\n", "n.txt": "y = 2\n"})
	m := h.path("m.txt")
	todo := diag("TODO left in the code", "Warning", 1, 0, 1, 4, "fakelint", "")
	tr := `lua: vim.cmd("edit n.txt | edit m.txt") _G.ns = vim.api.nvim_create_namespace("fakelint")
# a linter that runs whenever a buffer is (re)read
lua: vim.api.nvim_create_autocmd({ "BufReadPost", "FileChangedShellPost" }, { callback = function(a) local d = {} for i, l in ipairs(vim.api.nvim_buf_get_lines(a.buf, 0, -1, false)) do if l:find("TODO") then table.insert(d, { lnum = i - 1, col = 0, end_col = 4, message = "TODO left in the code", severity = 2 }) end end vim.diagnostic.set(_G.ns, a.buf, d) end })
` + testkit.SendCall(1, "getDiagnostics", testkit.Obj{"uri", "file://" + m}) +
		testkit.WantJSONText(1, []testkit.Obj{fileDiags(m)}) + `
# the CLI writes the file (a fresh mtime: Neovim overlooks a change of exactly
# one second when the nanoseconds match, so a test must not set whole seconds)
lua: local f = io.open("m.txt", "w") f:write("x = 1\nTODO fix\n") f:close()
` + testkit.SendCall(2, "getDiagnostics", testkit.Obj{}) +
		testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + m, "diagnostics", []diagnostic{todo}}) +
		testkit.WantJSONText(2, []testkit.Obj{fileDiags(m, todo)}) + `
check: vim.api.nvim_buf_get_lines(vim.fn.bufnr("m.txt"), 1, 2, false)[1] == "TODO fix" and not vim.bo[vim.fn.bufnr("m.txt")].modified
# unsaved changes are never reloaded over
lua: vim.api.nvim_buf_set_lines(vim.fn.bufnr("n.txt"), 0, -1, false, { "mine" })
lua: local f = io.open("n.txt", "w") f:write("TODO theirs\n") f:close()
` + testkit.SendCall(3, "getDiagnostics", testkit.Obj{}) +
		testkit.WantJSONText(3, []testkit.Obj{fileDiags(m, todo)}) + `
check: vim.api.nvim_buf_get_lines(vim.fn.bufnr("n.txt"), 0, -1, false)[1] == "mine"
check: vim.api.nvim_get_mode().mode == "n"`
	h.run(t, tr)
}

// The diagnostics cache answers from memory: a getDiagnostics {uri} does
// not wait for Neovim, even while Neovim is blocked.
func TestToolGetDiagnosticsNeovimBlocked(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n"})
	a := h.path("a.txt")
	d := diag("err", "Error", 0, 0, 0, 0, "fakelint", "")
	h.run(t, `lua: vim.cmd("edit a.txt") _G.ns = vim.api.nvim_create_namespace("fakelint") vim.diagnostic.set(_G.ns, 0, {{ lnum = 0, col = 0, message = "err" }})
`+testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", "file://" + a, "diagnostics", []diagnostic{d}}))
	// Block Neovim's main loop until a file appears (at most 30 s): the
	// answers below come while it is blocked, or the test times out.
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	h.Exec(t, `local started, release = ... vim.defer_fn(function()
		vim.fn.writefile({}, started)
		local t0 = os.time()
		while not vim.loop.fs_stat(release) and os.time() - t0 < 30 do end
	end, 0)`, started, release)
	defer os.WriteFile(release, nil, 0o644)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Neovim never blocked")
		}
	}
	h.Send(t, testkit.ToolCall(1, "getDiagnostics", testkit.Obj{"uri", "file://" + a}))
	if got, want := h.next(t), strings.TrimSpace(strings.TrimPrefix(testkit.WantJSONText(1, []testkit.Obj{fileDiags(a, d)}), "<- ")); got != want {
		t.Fatalf("getDiagnostics {uri} while Neovim is blocked:\n got %s\nwant %s", got, want)
	}
	// {} tries to sync, gives up within its budget, answers from the cache.
	h.Send(t, testkit.ToolCall(2, "getDiagnostics", testkit.Obj{}))
	if got, want := h.next(t), strings.TrimSpace(strings.TrimPrefix(testkit.WantJSONText(2, []testkit.Obj{fileDiags(a, d)}), "<- ")); got != want {
		t.Fatalf("getDiagnostics {} while Neovim is blocked:\n got %s\nwant %s", got, want)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.quiet(t)
}

// getDiagnostics through the whole path — WebSocket, the sync round trip to
// Neovim (500 buffers to look at), the cache — with 500 file buffers of 20
// diagnostics each. The CLI gives {uri} 500 ms and {} 2 s.
func BenchmarkGetDiagnostics(b *testing.B) {
	h := startCtxHarness(b, nil)
	h.Exec(b, `local dir = ...
		local ns = vim.api.nvim_create_namespace("bench")
		for i = 1, 500 do
			local path = string.format("%s/pkg%d/file%d.go", dir, i % 20, i)
			vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
			local lines = {}
			for l = 1, 40 do lines[l] = "line " .. l .. " with some text é😀 in it" end
			vim.fn.writefile(lines, path)
			local buf = vim.fn.bufadd(path)
			vim.fn.bufload(buf)
			local d = {}
			for j = 1, 20 do d[j] = { lnum = j, col = 10, end_col = 14, message = "diagnostic " .. j .. " of file " .. i, severity = (j % 4) + 1, source = "bench" } end
			vim.diagnostic.set(ns, buf, d)
		end`, h.dir)
	// Drain the 500 pushes.
	h.WaitFor(b, 60*time.Second, "true", "", "Neovim")
	for n := 0; n < 500; n++ {
		h.next(b)
	}
	one := "file://" + h.dir + "/pkg7/file247.go"
	id := 0
	call := func(args testkit.Obj) int {
		id++
		h.Send(b, testkit.ToolCall(id, "getDiagnostics", args))
		f := h.next(b)
		if !strings.Contains(f, fmt.Sprintf(`"id":%d,"result"`, id)) {
			b.Fatalf("answer: %.200s", f)
		}
		return len(f)
	}
	if size := call(testkit.Obj{}); size < 500*20*50 {
		b.Fatalf("getDiagnostics {} answered only %d bytes", size)
	}
	b.Run("all", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			call(testkit.Obj{})
		}
	})
	b.Run("uri", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			call(testkit.Obj{"uri", one})
		}
	})
}
