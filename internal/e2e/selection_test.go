//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// ideFrames collects what the server sends a stand-in CLI.
type ideFrames struct {
	frames chan map[string]json.RawMessage
}

// watchIDEFrames reads c's frames in the background until the connection closes.
func watchIDEFrames(c *ideClient) *ideFrames {
	f := &ideFrames{frames: make(chan map[string]json.RawMessage, 1024)}
	go func() {
		defer close(f.frames)
		for {
			_ = c.c.SetReadDeadline(time.Time{})
			typ, b, err := c.c.ReadMessage()
			if err != nil {
				return
			}
			if typ != websocket.TextMessage {
				continue
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(b, &m) == nil {
				f.frames <- m
			}
		}
	}()
	return f
}

// next returns the params of the next notification of method.
func (f *ideFrames) next(t *testing.T, method string) json.RawMessage {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case m, ok := <-f.frames:
			if !ok {
				t.Fatalf("connection closed waiting for %s", method)
			}
			var got string
			_ = json.Unmarshal(m["method"], &got)
			if got == method {
				return m["params"]
			}
		case <-timeout:
			t.Fatalf("no %s within 15 s", method)
		}
	}
}

// connectIDE connects a stand-in CLI to the editor's server and returns
// what it receives. The server greets a CLI 750 ms after ide_connected.
func (e *editor) connectIDE(t *testing.T, st status, pid int) *ideFrames {
	t.Helper()
	c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
	f := watchIDEFrames(c)
	c.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}`)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(t, `{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":`+strconv.Itoa(pid)+`}}`)
	return f
}

type selAutocmd struct {
	Event string `json:"event"`
	Desc  string `json:"desc"`
}

func (e *editor) selAutocmds(t *testing.T) []selAutocmd {
	t.Helper()
	var out []selAutocmd
	e.Eval(t, `local ok, list = pcall(vim.api.nvim_get_autocmds, { group = "nvim-claude-selection" })
if not ok then return {} end
local out = {}
for _, a in ipairs(list) do table.insert(out, { event = a.event, desc = a.desc or "" }) end
return out`, &out)
	return out
}

func (e *editor) sharing(t *testing.T) bool {
	t.Helper()
	var on bool
	e.Eval(t, `return require("claude.selection").sharing()`, &on)
	return on
}

// TestShareCommand: tracking starts with the server (one augroup, every
// autocmd described), :ClaudeShare turns it off and on, says so, and the
// choice outlives a server restart.
func TestShareCommand(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.Exec(t, `_G.share_events = {}
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeShareChanged", callback = function(a)
  if a.data then table.insert(_G.share_events, a.data.sharing) else table.insert(_G.share_events, "nodata") end
end })`)
	if e.sharing(t) || len(e.selAutocmds(t)) != 0 {
		t.Fatal("sharing before the server started")
	}
	e.serve(t)
	acs := e.selAutocmds(t)
	events := map[string]bool{}
	for _, a := range acs {
		events[a.Event] = true
		if !strings.HasPrefix(a.Desc, "nvim-claude: ") {
			t.Errorf("autocmd %s has no desc: %q", a.Event, a.Desc)
		}
	}
	for _, ev := range []string{"CursorMoved", "CursorMovedI", "ModeChanged", "BufEnter"} {
		if !events[ev] {
			t.Errorf("no %s autocmd in nvim-claude-selection (have %+v)", ev, acs)
		}
	}
	if !e.sharing(t) {
		t.Fatal("sharing() is false with the server running")
	}

	steps := []struct {
		cmd     string
		sharing bool
		note    string
		level   int
	}{
		{"ClaudeShare", true, "sharing the cursor and selection with Claude", 2},
		{"ClaudeShare off", false, "not sharing", 2},
		{"ClaudeShare toggle", true, "sharing the cursor", 2},
		{"ClaudeShare toggle", false, "not sharing", 2},
		{"ClaudeShare on", true, "sharing the cursor", 2},
		{"ClaudeShare maybe", true, `takes on, off or toggle, not "maybe"`, 4},
	}
	for _, s := range steps {
		e.Exec(t, `_G.notes = {}`)
		e.Exec(t, `vim.cmd(...)`, s.cmd)
		if got := e.sharing(t); got != s.sharing {
			t.Fatalf(":%s: sharing() = %v, want %v", s.cmd, got, s.sharing)
		}
		if got := len(e.selAutocmds(t)) > 0; got != s.sharing {
			t.Fatalf(":%s: autocmds present = %v, want %v", s.cmd, got, s.sharing)
		}
		e.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, "a message from :"+s.cmd)
		ns := e.notes(t)
		if !strings.Contains(ns[0].Msg, s.note) || ns[0].Level != s.level {
			t.Fatalf(":%s said %+v, want %q at level %d", s.cmd, ns, s.note, s.level)
		}
	}
	var nv08 bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &nv08)
	e.WaitFor(t, 5*time.Second, `#_G.share_events == 4`, `return _G.share_events`, "four ClaudeShareChanged events")
	if nv08 {
		var evs []bool
		e.Eval(t, `return _G.share_events`, &evs)
		want := []bool{false, true, false, true}
		for i := range want {
			if evs[i] != want[i] {
				t.Fatalf("ClaudeShareChanged data = %v, want %v", evs, want)
			}
		}
	}

	// Off survives a restart of the server; so does on.
	e.Exec(t, `vim.cmd("ClaudeShare off") vim.cmd("ClaudeStop")`)
	e.serve(t)
	if e.sharing(t) {
		t.Fatal(":ClaudeShare off forgotten by a server restart")
	}
	e.Exec(t, `vim.cmd("ClaudeShare on")`)
	if !e.sharing(t) {
		t.Fatal(":ClaudeShare on with the server running did not start sharing")
	}
	e.Exec(t, `vim.cmd("ClaudeStop")`)
	if e.sharing(t) || len(e.selAutocmds(t)) != 0 {
		t.Fatal("still tracking after :ClaudeStop")
	}
	e.Exec(t, `_G.notes = {} vim.cmd("ClaudeShare")`)
	e.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, "the state message")
	if ns := e.notes(t); !strings.Contains(ns[0].Msg, "starts with the server") {
		t.Fatalf(":ClaudeShare with the server stopped said %+v", ns)
	}
}

// TestTrackOption: selection.track = false starts nothing with the server.
func TestTrackOption(t *testing.T) {
	e := startEditor(t, editorOpts{extra: `, selection = { track = false }`})
	e.serve(t)
	if e.sharing(t) || len(e.selAutocmds(t)) != 0 {
		t.Fatal("tracking with selection.track = false")
	}
	e.Exec(t, `vim.cmd("ClaudeShare on")`)
	if !e.sharing(t) {
		t.Fatal(":ClaudeShare on did not override selection.track = false")
	}
}

// TestSelectionThroughHost: the whole path in the real binary — cursor and
// visual selection in Neovim reach a connected client, a denied file never
// does.
func TestSelectionThroughHost(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "alpha\nbeta\ngamma\n", "id_rsa": "-----BEGIN KEY-----\nsecret\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := startEditor(t, editorOpts{dir: dir, extra: `, selection = { debounce_ms = 10 }`})
	e.Exec(t, `vim.cmd("edit a.txt")`)
	st := e.serve(t)
	f := e.connectIDE(t, st, 4242)
	type payload struct {
		Text      string `json:"text"`
		FilePath  string `json:"filePath"`
		Selection struct {
			Start   struct{ Line, Character int } `json:"start"`
			IsEmpty bool                          `json:"isEmpty"`
		} `json:"selection"`
	}
	next := func() payload {
		var p payload
		if err := json.Unmarshal(f.next(t, "selection_changed"), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := next(); p.FilePath != filepath.Join(dir, "a.txt") || !p.Selection.IsEmpty {
		t.Fatalf("greeting = %+v", p)
	}
	e.selInput(t, "2G")
	if p := next(); p.Selection.Start.Line != 1 || !p.Selection.IsEmpty {
		t.Fatalf("after 2G = %+v", p)
	}
	e.selInput(t, "Vj<Esc>")
	if p := next(); p.Text != "beta\ngamma\n" {
		t.Fatalf("after Vj<Esc> = %+v", p)
	}
	e.Exec(t, `vim.cmd("edit id_rsa")`)
	e.selInput(t, "ggVG<Esc>")
	if p := next(); p.FilePath != "" || p.Text != "" {
		t.Fatalf("in id_rsa = %+v, want the clearing payload", p)
	}
}
