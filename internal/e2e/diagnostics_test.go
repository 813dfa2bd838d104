//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// goplsStartLua starts gopls for the current buffer (Lua args: binary,
// module root): vim.lsp.start on Neovim 0.8+, start_client and
// buf_attach_client on 0.7.
const goplsStartLua = `local bin, root = ...
local cfg = { name = "gopls", cmd = { bin }, root_dir = root }
if vim.lsp.start then
  vim.lsp.start(cfg)
else
  local id = vim.lsp.start_client(cfg)
  vim.lsp.buf_attach_client(0, id)
end`

// The fixture's type error: a string assigned to an int, after multibyte
// text on the same line (so byte and UTF-16 columns differ).
const (
	typeErrLine = "\ts := \"héllo😀\"; var n int = s"
	mainGoBad   = "package main\n\nfunc main() {\n" + typeErrLine + "\n\t_ = n\n}\n"
	fixedLine   = "\ts := \"héllo😀\"; var n int = len(s)"
)

// frameReader reads every frame of a connection into a channel.
type frameReader struct {
	c      *ideClient
	frames chan map[string]any
}

func readFrames(t *testing.T, c *ideClient) *frameReader {
	r := &frameReader{c: c, frames: make(chan map[string]any, 256)}
	go func() { // ends when the connection closes (test cleanup)
		defer close(r.frames)
		for {
			_, b, err := c.c.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(b, &m) == nil {
				r.frames <- m
			}
		}
	}()
	return r
}

// until returns the first frame pred accepts; others are dropped.
func (r *frameReader) until(t *testing.T, what string, pred func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case m, ok := <-r.frames:
			if !ok {
				t.Fatalf("connection closed waiting for %s", what)
			}
			if pred(m) {
				return m
			}
		case <-timeout:
			t.Fatalf("no frame: %s", what)
		}
	}
}

// diagFrame is a diagnostics_changed notification.
type diagFrame struct {
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

func asDiagFrame(m map[string]any) (diagFrame, bool) {
	if m["method"] != "diagnostics_changed" {
		return diagFrame{}, false
	}
	b, _ := json.Marshal(m["params"])
	var f diagFrame
	return f, json.Unmarshal(b, &f) == nil
}

// With gopls attached to a Go file with a type error,
// getDiagnostics returns gopls's diagnostic (range in UTF-16 units, as gopls
// sent it), and fixing the error pushes a diagnostics_changed without it.
// The module's root is outside Neovim's cwd: it joins the workspace folders,
// in getWorkspaceFolders and in the lock file.
func TestGoplsDiagnostics(t *testing.T) {
	gopls := nvimtest.Gopls(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd, mod := filepath.Join(base, "work"), filepath.Join(base, "mod")
	for name, content := range map[string]string{
		"work/notes.txt": "notes\n",
		"mod/go.mod":     "module example.com/typeerr\n\ngo 1.22\n",
		"mod/main.go":    mainGoBad,
	} {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mainGo := filepath.Join(mod, "main.go")

	e := startEditor(t, editorOpts{dir: cwd})
	st := e.serve(t)
	lock := readLock(t, st.LockFile)
	c := dialIDE(t, st.Port, lock.AuthToken)
	c.handshake(t, 4242)
	frames := readFrames(t, c)

	e.Exec(t, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, mainGo)
	e.Exec(t, goplsStartLua, gopls, mod)
	t.Cleanup(func() {
		_ = e.TryEval(`vim.lsp.stop_client((vim.lsp.get_clients or vim.lsp.get_active_clients)(), true)`, nil)
	})

	// gopls's report arrives as a push.
	var pushed diagFrame
	frames.until(t, "a diagnostics_changed with gopls's type error", func(m map[string]any) bool {
		f, ok := asDiagFrame(m)
		if ok && f.URI == "file://"+mainGo && len(f.Diagnostics) > 0 {
			pushed = f
			return true
		}
		return false
	})
	d := pushed.Diagnostics[0]
	if !strings.Contains(d.Message, "cannot use s") || d.Severity != "Error" || d.Source != "compiler" {
		t.Fatalf("pushed diagnostic: %+v", d)
	}
	// The range is gopls's own (LSP counts UTF-16 units; Neovim keeps
	// bytes): the final "s" of the line.
	col := len(utf16.Encode([]rune(typeErrLine[:strings.LastIndex(typeErrLine, "s")])))
	if d.Range.Start.Line != 3 || d.Range.Start.Character != col || d.Range.End.Line != 3 || d.Range.End.Character != col+1 {
		t.Fatalf("range = %+v, want line 3, characters %d-%d", d.Range, col, col+1)
	}
	var lspRange any
	e.Eval(t, `local d = vim.diagnostic.get(0)[1] return d and d.user_data and d.user_data.lsp and d.user_data.lsp.range or vim.NIL`, &lspRange)
	if lspRange != nil { // Neovim 0.8+ keeps the server's diagnostic
		b, _ := json.Marshal(lspRange)
		want := fmt.Sprintf(`{"end":{"character":%d,"line":3},"start":{"character":%d,"line":3}}`, col+1, col)
		if string(b) != want {
			t.Fatalf("gopls's range %s, want %s", b, want)
		}
	}

	// getDiagnostics {uri} returns it; getDiagnostics {} too.
	for i, args := range []string{`{"uri":"file://` + mainGo + `"}`, `{}`} {
		id := 10 + i
		c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"getDiagnostics","arguments":%s}}`, id, args))
		res := frames.until(t, "the getDiagnostics answer", func(m map[string]any) bool { return m["id"] == float64(id) })
		text := toolText(t, res)
		if !strings.Contains(text, `"uri":"file://`+mainGo+`"`) || !strings.Contains(text, "cannot use s") || !strings.Contains(text, `"source":"compiler"`) {
			t.Fatalf("getDiagnostics %s = %s", args, text)
		}
	}

	// The workspace folders: the cwd, then gopls's root — in the answer
	// and in the lock file.
	c.send(t, `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"getWorkspaceFolders","arguments":{}}}`)
	res := frames.until(t, "the getWorkspaceFolders answer", func(m map[string]any) bool { return m["id"] == float64(20) })
	var wf struct {
		Folders []struct{ Path string } `json:"folders"`
	}
	if err := json.Unmarshal([]byte(toolText(t, res)), &wf); err != nil || len(wf.Folders) != 2 || wf.Folders[0].Path != cwd || wf.Folders[1].Path != mod {
		t.Fatalf("getWorkspaceFolders = %s (%v)", toolText(t, res), err)
	}
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for got := readLock(t, st.LockFile).WorkspaceFolders; len(got) != 2 || got[0] != cwd || got[1] != mod; got = readLock(t, st.LockFile).WorkspaceFolders {
		if time.Now().After(deadline) {
			t.Fatalf("lock workspaceFolders = %v, want [%s %s]", got, cwd, mod)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Fix the error in the buffer: gopls reports again, without it.
	e.Exec(t, `vim.api.nvim_buf_set_lines(0, 3, 4, false, { ... })`, fixedLine)
	frames.until(t, "a diagnostics_changed without the type error", func(m map[string]any) bool {
		f, ok := asDiagFrame(m)
		if !ok || f.URI != "file://"+mainGo {
			return false
		}
		for _, d := range f.Diagnostics {
			if strings.Contains(d.Message, "cannot use s") {
				return false
			}
		}
		return true
	})
	c.send(t, `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"getDiagnostics","arguments":{"uri":"file://`+mainGo+`"}}}`)
	res = frames.until(t, "the last getDiagnostics answer", func(m map[string]any) bool { return m["id"] == float64(30) })
	if text := toolText(t, res); strings.Contains(text, "cannot use s") {
		t.Fatalf("after the fix, getDiagnostics = %s", text)
	}
}

// toolText is the text of a tools/call answer's first content item.
func toolText(t *testing.T, res map[string]any) string {
	t.Helper()
	r, _ := res["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("not a tool result: %v", res)
	}
	item, _ := content[0].(map[string]any)
	text, _ := item["text"].(string)
	return text
}
