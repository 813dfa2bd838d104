package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// ctxHarness is the editor-context path but the CLI: a real Neovim with the
// plugin's Lua attached as when the server runs (claude.diagnostics on the
// host's channel), the App on a real Bridge to it, its IDE server on a real
// socket, and one connection that talks like the CLI.
type ctxHarness struct {
	*nvimtest.Nvim
	app *App
	dir string // the workspace (Neovim's cwd), symlinks resolved
	out string // a directory outside the workspace
	*testCLI
	pings int
}

func startCtxHarness(t testing.TB, files map[string]string) *ctxHarness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, strings.ReplaceAll(name, "{{out}}/", "../"+filepath.Base(out)+"/"))
		if strings.HasPrefix(name, "{{out}}/") {
			p = filepath.Join(out, strings.TrimPrefix(name, "{{out}}/"))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	init := `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({})`
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	app := New(Options{Editor: b})
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	var pid int
	n.Eval(t, `return vim.fn.getpid()`, &pid)
	if err := app.Start(context.Background(), startParams{PID: pid, Cwd: dir, ConfigDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	h := &ctxHarness{Nvim: n, app: app, dir: dir, out: out}
	// What server.lua does after "start": claude.diagnostics feeds the host.
	n.Exec(t, `require("claude.server").state().chan = ... require("claude.diagnostics").attach()`, n.ChannelID())
	t.Cleanup(func() { _ = n.TryEval(`require("claude.diagnostics").detach()`, nil) })
	h.connect(t)
	return h
}

// connect dials the server and does the CLI's handshake.
func (h *ctxHarness) connect(t testing.TB) {
	t.Helper()
	srv := h.app.server()
	h.testCLI = dialCLI(t, srv.Port(), srv.Token(), 256)
	h.send(t, cliInitialize)
	if f := h.next(t); !strings.Contains(f, `"id":0,"result"`) {
		t.Fatalf("initialize: %s", f)
	}
	h.send(t, cliInitialized)
	h.send(t, cliIDEConnected(os.Getpid()))
	h.quiet(t)
}

// next is the next frame, response or notification.
func (h *ctxHarness) next(t testing.TB) string {
	t.Helper()
	select {
	case f, ok := <-h.frames:
		if !ok {
			t.Fatal("connection closed")
		}
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("no frame")
	}
	return ""
}

// quiet checks that no frame is on its way: a ping's reply must be next.
func (h *ctxHarness) quiet(t testing.TB) {
	t.Helper()
	h.pings++
	id := fmt.Sprintf(`"quiet-%d"`, h.pings)
	h.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	if got, want := h.next(t), `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`; got != want {
		t.Fatalf("stray frame: %s", got)
	}
}

// run plays a transcript, one step a line:
//
//	# comment
//	-> frame                  sent as the CLI
//	<- frame                  the next frame must be exactly this
//	<~ frame                  the same, "(*)" standing for text without a backslash
//	lua: code                 run in Neovim
//	wait: lua condition       wait until it holds
//	check: lua condition      must hold now
//
// {{dir}} and {{out}} stand for the workspace and the outside directory.
// After the last line no frame may be pending.
func (h *ctxHarness) run(t testing.TB, transcript string) {
	t.Helper()
	for i, line := range strings.Split(transcript, "\n") {
		line = strings.TrimSpace(line)
		line = strings.ReplaceAll(line, "{{dir}}", h.dir)
		line = strings.ReplaceAll(line, "{{out}}", h.out)
		step := func(prefix string) (string, bool) {
			if strings.HasPrefix(line, prefix) {
				return strings.TrimPrefix(line, prefix), true
			}
			return "", false
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if frame, ok := step("-> "); ok {
			h.send(t, frame)
		} else if want, ok := step("<- "); ok {
			if got := h.next(t); got != want {
				t.Fatalf("transcript line %d:\n got %s\nwant %s", i+1, got, want)
			}
		} else if like, ok := step("<~ "); ok {
			// "(*)" stands for any text without a backslash (e.g. the end
			// of a message that differs between Neovim versions, but no
			// stack trace)
			parts := strings.Split(like, "(*)")
			for j := range parts {
				parts[j] = regexp.QuoteMeta(parts[j])
			}
			re := regexp.MustCompile("^" + strings.Join(parts, `[^\\]*`) + "$")
			if got := h.next(t); !re.MatchString(got) {
				t.Fatalf("transcript line %d:\n got %s\nwant %s", i+1, got, like)
			}
		} else if code, ok := step("lua: "); ok {
			h.Exec(t, code)
		} else if cond, ok := step("wait: "); ok {
			h.WaitFor(t, 10*time.Second, cond, "", "transcript line "+fmt.Sprint(i+1))
		} else if cond, ok := step("check: "); ok {
			var okv bool
			h.Eval(t, "return not not ("+cond+")", &okv)
			if !okv {
				var dbg any
				_ = h.TryEval(`return { mode = vim.api.nvim_get_mode().mode, buf = vim.api.nvim_buf_get_name(0), notes = _G.notes }`, &dbg)
				t.Fatalf("transcript line %d: %s does not hold (%v)", i+1, cond, dbg)
			}
		} else {
			t.Fatalf("transcript line %d: unknown step %q", i+1, line)
		}
	}
	h.quiet(t)
}

func (h *ctxHarness) path(name string) string { return filepath.Join(h.dir, name) }

// toolCall is a tools/call frame.
func toolCall(id int, name string, args any) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, a)
}

func TestLanguageID(t *testing.T) {
	tests := map[string]string{
		"":                "plaintext",
		"go":              "go",
		"sh":              "shellscript",
		"cs":              "csharp",
		"javascriptreact": "javascriptreact",
		"javascript.jsx":  "javascript",
		"make":            "makefile",
		"gomod":           "go.mod",
		"text":            "plaintext",
	}
	for ft, want := range tests {
		if got := languageID(ft); got != want {
			t.Errorf("languageID(%q) = %q, want %q", ft, got, want)
		}
	}
}

func TestURIPath(t *testing.T) {
	tests := []struct {
		uri  string
		want string
		ok   bool
	}{
		{"file:///a/b.go", "/a/b.go", true},
		{"FILE:///a/b.go", "/a/b.go", true},
		{"file://localhost/a/b.go", "/a/b.go", true},
		{"file:///a/./c/../b.go", "/a/b.go", true},
		{"file:///a/with space.go", "/a/with space.go", true},
		{"/abs/x.go", "/abs/x.go", true},
		{"rel/x.go", "/base/rel/x.go", true},
		{"file://otherhost/a.go", "", false},
		{"untitled:Untitled-1", "", false},
		{"_claude_fs_right:/a.go", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := uriPath(tt.uri, "/base")
		if got != tt.want || ok != tt.ok {
			t.Errorf("uriPath(%q) = %q, %v; want %q, %v", tt.uri, got, ok, tt.want, tt.ok)
		}
	}
}

// The workspace folders Lua reports (cwd plus language servers' roots) go
// into the lock file; a cwd change (App rewrites the lock with the cwd
// alone) is followed by the full list again.
func TestWorkspaceFoldersInLock(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n"})
	lock := func() []string {
		l, err := mcp.ReadLockFile(h.app.server().LockPath())
		if err != nil {
			t.Fatal(err)
		}
		return l.WorkspaceFolders
	}
	if got := lock(); mustJSONString(got) != mustJSONString([]string{h.dir}) {
		t.Fatalf("lock folders at start = %v", got)
	}
	// A language server with a root outside the cwd, and one inside it.
	h.Exec(t, fakeLSPClients, []string{h.out, h.path("sub")})
	// (Neovim 0.7 has no LspAttach; there the folders are looked at on BufEnter.)
	h.Exec(t, `vim.api.nvim_exec_autocmds(vim.fn.exists("##LspAttach") == 1 and "LspAttach" or "BufEnter", { modeline = false })`)
	want := mustJSONString([]string{h.dir, h.out})
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for mustJSONString(lock()) != want {
		if time.Now().After(deadline) {
			t.Fatalf("lock folders = %v, want %s", lock(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// :cd elsewhere: App writes the new cwd alone (server.lua's
	// cwd_changed), then the whole list follows: the new cwd, and the root
	// no longer inside it.
	h.Exec(t, `vim.cmd("cd " .. vim.fn.fnameescape(...))
		require("claude.server").notify("cwd_changed", { cwd = vim.fn.getcwd(-1, -1) })`, h.out)
	want = mustJSONString([]string{h.out, h.path("sub")})
	deadline = time.Now().Add(10 * nvimtest.Slack * time.Second)
	for mustJSONString(lock()) != want {
		if time.Now().After(deadline) {
			t.Fatalf("lock folders after :cd = %v, want %s", lock(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeLSPClients makes the LSP client listings return clients whose
// workspace folders are the given directories (Lua arg: list of paths).
// The first has workspace_folders, the second only a root_dir.
const fakeLSPClients = `local dirs = ...
local clients = {}
for i, d in ipairs(dirs) do
  if i == 1 then
    table.insert(clients, { name = "fake" .. i, workspace_folders = { { uri = vim.uri_from_fname(d), name = d } } })
  else
    table.insert(clients, { name = "fake" .. i, config = { root_dir = d } })
  end
end
vim.lsp.get_clients = function() return clients end
vim.lsp.get_active_clients = vim.lsp.get_clients`

// luaCall is a one-line Lua chunk that runs code with args (JSON-encodable)
// as its "...", for transcript "lua:" steps. code must hold no comments.
func luaCall(code string, args ...any) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf("(function(...) %s end)(unpack(vim.json.decode(%q)))", strings.ReplaceAll(code, "\n", " "), a)
}

func mustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Transcript lines built from Go values.

func sendCall(id int, name string, args any) string { return "-> " + toolCall(id, name, args) + "\n" }

func sendMethod(id int, method string, params any) string {
	p, _ := json.Marshal(params)
	return fmt.Sprintf("-> {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":%q,\"params\":%s}\n", id, method, p)
}

// wantText is a tool result with one text item (JSON-encoded as the server
// does: no HTML escaping).
func wantText(id int, text string) string {
	s, _ := marshalNoEscape(text)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%s}]}}`, id, s) + "\n"
}

// wantJSONText is a tool result whose text is the JSON of v.
func wantJSONText(id int, v any) string {
	b, _ := marshalNoEscape(v)
	return wantText(id, string(b))
}

// likeText turns a want… line into a "<~" line: (*) in the text stands for
// any text without a backslash.
func likeText(line string) string {
	return "<~ " + strings.TrimPrefix(line, "<- ")
}

func wantErrText(id int, text string) string {
	s, _ := marshalNoEscape(text)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%s}],"isError":true}}`, id, s) + "\n"
}

func wantResult(id int, v any) string {
	b, _ := marshalNoEscape(v)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"result":%s}`, id, b) + "\n"
}

func wantError(id, code int, msg string) string {
	s, _ := marshalNoEscape(msg)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"error":{"code":%d,"message":%s}}`, id, code, s) + "\n"
}

func wantNotification(method string, params any) string {
	b, _ := marshalNoEscape(params)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","method":%q,"params":%s}`, method, b) + "\n"
}

// obj is a JSON object with its keys in the order given.
type obj []any

func (o obj) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(o); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshalNoEscape(o[i])
		v, err := marshalNoEscape(o[i+1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
