package selection

import (
	"bufio"
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
	"github.com/nvim-claude/nvim-claude/workspace"
)

// selHarness is the selection path but the CLI: a real Neovim editing
// sample.txt, the App on a real Bridge to it with its IDE server on a real
// socket, and Lua's selection tracking attached to the Bridge's channel.
type selHarness struct {
	*nvimtest.Nvim
	app   *core.App
	sel   *Tracker
	dir   string
	file  string // sample.txt's absolute path
	port  int
	token string
	// synced hears the test_sync notification: see sync.
	synced chan struct{}
}

// selSample's lines: ASCII, wide characters, an emoji, an empty line.
const selSample = "first line\nsecond 日本 line\nthird 😀 line\n\nfifth line\nsixth line\n"

type selHarnessOpts struct {
	setup    string // more setup() options (Lua table fields)
	noAttach bool   // leave tracking off (selection.track = false …)
	// hold makes the host's debounce an hour: only a push (visual mode
	// ended) or a tool's flush sends anything.
	hold bool
	// ws is the application's workspace (nil: core's own).
	ws *workspace.Workspace
}

func startSelHarness(t *testing.T, o selHarnessOpts) *selHarness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"sample.txt": selSample,
		"other.txt":  "other one\nother two\n",
		".env":       "TOKEN=very-secret-value\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	init := `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({ ` + o.setup + ` })
vim.cmd("edit sample.txt")`
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	var sel *Tracker
	app := core.New(core.Options{Editor: b, Workspace: o.ws, Features: func(h host.Host) []host.Feature {
		sel = New(h, b)
		return []host.Feature{sel}
	}})
	// Tests connect stand-ins that are ready at once.
	sel.mu.Lock()
	sel.greetDelay = 0
	sel.mu.Unlock()
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{}, 1)
	if err := b.HandleNotification("test_sync", func(json.RawMessage) { synced <- struct{}{} }); err != nil {
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
	h := &selHarness{Nvim: n, app: app, sel: sel, dir: dir, file: filepath.Join(dir, "sample.txt"), port: srv.Port(), token: lock.AuthToken, synced: synced}
	if !o.noAttach {
		h.attach(t)
	}
	if o.hold {
		sel.mu.Lock()
		sel.holdDebounce = true
		sel.mu.Unlock()
	}
	return h
}

// attach starts Lua's tracking on the Bridge's channel, as server.lua does
// on the host's.
func (h *selHarness) attach(t *testing.T) {
	t.Helper()
	h.Exec(t, `require("claude.selection").attach(...)`, h.ChannelID())
	t.Cleanup(func() { _ = h.ExecLua(`require("claude.selection").detach()`, nil) })
	// Let the state pushed at attach land before a CLI connects, so that
	// the CLI is greeted with it rather than also sent it as an update.
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		if _, ok := h.sel.latest(); ok {
			// latest is set before it is broadcast: once sendMu is free,
			// the broadcast is over and cannot reach the CLI about to
			// connect (which the greeting sends it to, too).
			h.sel.sendMu.Lock()
			//lint:ignore SA2001 an empty critical section: waiting for apply to finish
			h.sel.sendMu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the state pushed at attach never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// keys types keys as a user would and waits until Neovim has processed them.
func (h *selHarness) keys(t *testing.T, keys string) {
	t.Helper()
	if _, err := h.Input(keys); err != nil {
		t.Fatal(err)
	}
	var mode string
	h.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode)
}

// selCLI is a stand-in for one connected CLI.
type selCLI struct {
	*testkit.CLI
	nextID int
}

// connect opens a connection and does the CLI's handshake with pid.
func (h *selHarness) connect(t *testing.T, pid int) *selCLI {
	t.Helper()
	c := &selCLI{CLI: testkit.DialCLI(t, h.port, h.token, 1024), nextID: 100}
	c.Send(t, testkit.CLIInitialize)
	c.response(t, "0")
	c.Send(t, testkit.CLIInitialized)
	c.Send(t, testkit.CLIIDEConnected(pid))
	return c
}

// next returns the next frame the server sent.
func (c *selCLI) next(t *testing.T) string {
	t.Helper()
	select {
	case f, ok := <-c.Frames:
		if !ok {
			t.Fatal("connection closed")
		}
		return f
	case <-time.After(10 * nvimtest.Slack * time.Second):
		t.Fatal("no frame from the server within 10 s")
	}
	return ""
}

// response skips notifications up to the response with the given raw id.
func (c *selCLI) response(t *testing.T, id string) string {
	t.Helper()
	for {
		f := c.next(t)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(f), &m)
		if string(m.ID) == id {
			return f
		}
	}
}

// notification returns the params of the next notification of method,
// skipping other frames.
func (c *selCLI) notification(t *testing.T, method string) json.RawMessage {
	t.Helper()
	for {
		f := c.next(t)
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal([]byte(f), &m)
		if m.Method == method {
			return m.Params
		}
	}
}

// selection is the next selection_changed.
func (c *selCLI) selection(t *testing.T) selPayload {
	t.Helper()
	var p selPayload
	if err := json.Unmarshal(c.notification(t, "selection_changed"), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// call makes a tools/call and returns the result's text.
func (c *selCLI) call(t *testing.T, tool string) string {
	t.Helper()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	c.Send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
	f := c.response(t, id)
	var r struct {
		Result mcp.ToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(f), &r); err != nil || len(r.Result.Content) != 1 {
		t.Fatalf("tools/call %s: %s", tool, f)
	}
	return r.Result.Content[0].Text
}

// cursorAt is the payload for the cursor alone at line, character.
func (h *selHarness) cursorAt(path string, line, char int) selPayload {
	p := selPos{Line: line, Character: char}
	return selPayload{FilePath: path, FileURL: selFileURL(path), Selection: selRange{Start: p, End: p, IsEmpty: true}}
}

// sync returns once the host has handled every notification Neovim sent
// before it: Neovim's notifications reach the host on one channel and are
// handled in order, one at a time, so a marker sent now is handled after
// them. A tool call the test makes next cannot overtake a selection push
// Neovim made for the step before (they travel on different connections).
func (h *selHarness) sync(t *testing.T) {
	t.Helper()
	h.Exec(t, `vim.rpcnotify(select(1, ...), "test_sync", "{}")`, h.ChannelID())
	select {
	case <-h.synced:
	case <-time.After(10 * nvimtest.Slack * time.Second):
		t.Fatal("the host did not hear the sync marker")
	}
}

// runSelTranscript plays a transcript against the harness through c:
//
//	# comment
//	!! keys     type keys in Neovim (nvim_input)
//	!lua code   run Lua in Neovim
//	-> frame    send a frame
//	<- frame    the next response (or, for a notification, the next one of
//	            its method) must be exactly this
//
// $FILE, $URL, $OTHER, $DIR and $CHAN stand for the sample file, its URI,
// other.txt, the project directory and the Bridge's channel.
func (h *selHarness) runSelTranscript(t *testing.T, c *selCLI, script string) {
	t.Helper()
	repl := strings.NewReplacer(
		"$FILE", h.file,
		"$URL", selFileURL(h.file),
		"$OTHER", filepath.Join(h.dir, "other.txt"),
		"$DIR", h.dir,
		"$CHAN", fmt.Sprint(h.ChannelID()),
	)
	sc := bufio.NewScanner(strings.NewReader(script))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "!! "):
			h.keys(t, strings.TrimPrefix(line, "!! "))
			h.sync(t)
		case strings.HasPrefix(line, "!lua "):
			h.Exec(t, repl.Replace(strings.TrimPrefix(line, "!lua ")))
			h.sync(t)
		case strings.HasPrefix(line, "-> "):
			c.Send(t, repl.Replace(strings.TrimPrefix(line, "-> ")))
		case strings.HasPrefix(line, "<- "):
			want := repl.Replace(strings.TrimPrefix(line, "<- "))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal([]byte(want), &m); err != nil {
				t.Fatalf("transcript line %d: bad JSON: %v", lineNo, err)
			}
			var got string
			if m.Method != "" {
				got = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, m.Method, c.notification(t, m.Method))
			} else {
				got = c.response(t, string(m.ID))
			}
			if got != want {
				t.Fatalf("transcript line %d:\n got  %s\n want %s", lineNo, got, want)
			}
		default:
			t.Fatalf("transcript line %d: unknown line %q", lineNo, line)
		}
	}
}
