package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// diffHarness is the whole diff path but the CLI: a real Neovim (the user's
// layout: main.txt in the editor window, the Claude terminal on the right),
// the App on a real Bridge to it, and its IDE server on a real socket that
// the tests talk to like the CLI does.
type diffHarness struct {
	*nvimtest.Nvim
	app   *core.App
	rev   *Reviews
	dir   string
	port  int
	token string
}

const diffMainText = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"

func startDiffHarness(t *testing.T, diffOpts string) *diffHarness {
	t.Helper()
	return startDiffHarnessWith(t, diffOpts, nil)
}

// startDiffHarnessWith is startDiffHarness with the App's Editor wrapped
// by wrap (a fake that delays or records calls), when not nil.
func startDiffHarnessWith(t *testing.T, diffOpts string, wrap func(Editor) Editor) *diffHarness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.txt"), []byte(diffMainText), 0o644); err != nil {
		t.Fatal(err)
	}
	init := `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({ terminal_cmd = { "cat" }, diff = { ` + diffOpts + ` } })
vim.cmd("edit main.txt")
require("claude.terminal").open(1, {}, false)`
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	var ed Editor = b
	if wrap != nil {
		ed = wrap(b)
	}
	var feat *Reviews
	app := core.New(core.Options{Editor: b, Features: func(h host.Host) []host.Feature {
		feat = New(h, ed)
		return []host.Feature{feat}
	}})
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	var pid int
	n.Eval(t, `return vim.fn.getpid()`, &pid)
	app.SetOptions(*testkit.LuaOptions(t, n))
	if err := app.Start(context.Background(), core.StartParams{PID: pid, Cwd: dir, ConfigDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	srv := app.Server()
	lock, err := mcp.ReadLockFile(srv.LockPath())
	if err != nil {
		t.Fatal(err)
	}
	return &diffHarness{Nvim: n, app: app, rev: feat, dir: dir, port: srv.Port(), token: lock.AuthToken}
}

// diffCLI is a stand-in for one connected CLI.
type diffCLI struct {
	*testkit.CLI
	pings int
}

// connect opens a connection and does the CLI's handshake with pid.
func (h *diffHarness) connect(t *testing.T, pid int) *diffCLI {
	t.Helper()
	c := &diffCLI{CLI: testkit.DialCLI(t, h.port, h.token, 64)}
	c.Send(t, testkit.CLIInitialize)
	if f := c.next(t); !strings.Contains(f, `"id":0,"result"`) {
		t.Fatalf("initialize: %s", f)
	}
	c.Send(t, testkit.CLIInitialized)
	c.Send(t, testkit.CLIIDEConnected(pid))
	return c
}

// next is the next response frame; notifications (other features push
// some) are skipped.
func (c *diffCLI) next(t *testing.T) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case f, ok := <-c.Frames:
			if !ok {
				t.Fatal("connection closed")
			}
			if strings.Contains(f, `"id":`) {
				return f
			}
		case <-timeout:
			t.Fatal("no response frame")
		}
	}
}

// quiet checks that no response is on its way: a ping's reply must be next.
func (c *diffCLI) quiet(t *testing.T) {
	t.Helper()
	c.pings++
	id := fmt.Sprintf(`"quiet-%d"`, c.pings)
	c.Send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	if got, want := c.next(t), `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`; got != want {
		t.Fatalf("unexpected frame %s", got)
	}
}

// A transcript is lines of steps, the mcp package's format plus actions:
//
//	# comment
//	-> frame the CLI sends            (N-> on connection N, default 1)
//	<- frame the IDE must send next   (N<- likewise; notifications skipped)
//	<* frames due next in any order   (consecutive <* lines form one set)
//	!! Lua the user runs in Neovim
//	?? Lua condition to wait for
//	.. no response may be on its way  (N.. likewise)
//
// $FILE and $DIR in lines become the JSON-escaped paths of main.txt and
// the project.
func (h *diffHarness) run(t *testing.T, clis []*diffCLI, transcript string) {
	t.Helper()
	esc := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	repl := strings.NewReplacer("$FILE", esc(filepath.Join(h.dir, "main.txt")), "$DIR", esc(h.dir))
	var set []string // pending <* frames
	setConn := 0
	flush := func(i int) {
		if len(set) == 0 {
			return
		}
		want := map[string]int{}
		for _, f := range set {
			want[f]++
		}
		for range set {
			got := clis[setConn].next(t)
			if want[got] == 0 {
				t.Fatalf("transcript line %d: got %s\nwant one of %q", i+1, got, set)
			}
			want[got]--
		}
		set = nil
	}
	for i, line := range strings.Split(transcript, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		conn := 0
		if line[0] >= '1' && line[0] <= '9' {
			conn = int(line[0]-'1') % len(clis)
			line = line[1:]
		}
		op, arg := line[:2], strings.TrimSpace(line[2:])
		arg = repl.Replace(arg)
		if op != "<*" {
			flush(i)
		}
		switch op {
		case "<*":
			set, setConn = append(set, arg), conn
		case "->":
			clis[conn].Send(t, arg)
		case "<-":
			if got := clis[conn].next(t); got != arg {
				t.Fatalf("transcript line %d:\n got %s\nwant %s\nnotes: %s", i+1, got, arg, h.notes(t))
			}
		case "!!":
			h.Exec(t, arg)
		case "??":
			h.WaitFor(t, 10*time.Second, arg, `return { pending = require("claude.diff").pending(), notes = _G.notes }`, arg)
		case "..":
			clis[conn].quiet(t)
		default:
			t.Fatalf("transcript line %d: unknown step %q", i+1, line)
		}
	}
	flush(-1)
}

func (h *diffHarness) notes(t *testing.T) string {
	t.Helper()
	var ns []struct {
		Msg string `json:"msg"`
	}
	if err := h.TryEval(`return _G.notes`, &ns); err != nil {
		return err.Error()
	}
	var parts []string
	for _, n := range ns {
		parts = append(parts, n.Msg)
	}
	return strings.Join(parts, " | ")
}

// diffWindows counts the windows in diff mode in every tab.
func (h *diffHarness) diffWindows(t *testing.T) int {
	t.Helper()
	var n int
	h.Eval(t, `local n = 0 for _, w in ipairs(vim.api.nvim_list_wins()) do if vim.wo[w].diff then n = n + 1 end end return n`, &n)
	return n
}

// diffJSON encodes like the server does: no HTML escaping.
func diffJSON(v any) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// diffToolCall is a tools/call frame.
func diffToolCall(id int, name string, args any) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"progressToken":%d}}}`,
		id, name, diffJSON(args), id)
}

// diffOpenCall is openDiff for main.txt (path is "$FILE") as the CLI sends it.
func diffOpenCall(id int, path, tab, contents string) string {
	return diffToolCall(id, "openDiff", map[string]string{
		"old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": tab,
	})
}

func diffCloseTabCall(id int, tab string) string {
	return diffToolCall(id, "close_tab", map[string]string{"tab_name": tab})
}

// diffTextResult is the frame of a tool result holding these text items.
func diffTextResult(id int, texts ...string) string {
	type item struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	items := make([]item, len(texts))
	for i, s := range texts {
		items[i] = item{"text", s}
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, id, diffJSON(map[string]any{"content": items}))
}

// diffErrorResult is the frame of an isError tool result.
func diffErrorResult(id int, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%s}],"isError":true}}`, id, diffJSON(text))
}

// diffLines joins transcript lines.
func diffLines(ls ...string) string { return strings.Join(ls, "\n") }
