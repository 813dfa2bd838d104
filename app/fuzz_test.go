package app

// Hostile tool arguments, generated from the tools the server lists (so
// every tool that exists is covered, including ones added later), against
// a real Neovim: TestToolsRejectBadArguments walks every generated case
// over the wire; FuzzToolArguments lets the fuzzer loose on each tool's
// handler. RELIABILITY.md reports both.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/internal/soak/toolargs"
	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// relAnswerWait bounds how long a tool call may take before the test
// calls it a hang. A failure guard: answers normally take milliseconds.
const relAnswerWait = 15 * time.Second

// relBlocking are the tools that legitimately wait for the user when their
// arguments are valid: openDiff (PROTOCOL.md §4: no timeout) and
// executeCode (the user confirms each run in a float).
var relBlocking = map[string]bool{"openDiff": true, "executeCode": true}

// relHarness is the App on a real Neovim, started the way server.lua starts
// the host (Lua's "start" request on the Bridge's channel, features
// attached), with one WebSocket client that talks like the CLI.
type relHarness struct {
	*nvimtest.Nvim
	app    *core.App
	fx     toolargs.Fixture
	ws     *websocket.Conn
	frames chan []byte
	seq    int
}

const relFileText = "alpha\nbeta\ngamma\n"
const relOutsideText = "outside the workspace\n"

func startRelHarness(tb testing.TB) *relHarness {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	out, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(dir, "a.txt"):       relFileText,
		filepath.Join(dir, "sub", "b.go"): "package b\n",
		filepath.Join(out, "outside.txt"): relOutsideText,
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	init := `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({ terminal_cmd = { "cat" } })
vim.cmd("edit a.txt")`
	n := nvimtest.Start(tb, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	tb.Cleanup(b.CloseProposals)
	app := New(Options{Editor: b})
	if err := app.Register(b); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = app.Close() })
	var res struct {
		St  core.Status `json:"st"`
		Err string      `json:"err"`
	}
	n.Eval(tb, `local s = require("claude.server")
s.state().chan = ...
assert(s.send_options())
local st, err = s.start()
return { st = st or vim.NIL, err = err or vim.NIL }`, &res, n.ChannelID())
	if !res.St.Running {
		tb.Fatalf("start: %s", res.Err)
	}
	h := &relHarness{Nvim: n, app: app, frames: make(chan []byte, 1024), fx: toolargs.Fixture{
		File:      filepath.Join(dir, "a.txt"),
		Outside:   filepath.Join(out, "outside.txt"),
		Workspace: dir,
		Marker:    filepath.Join(out, "pwned"),
	}}
	h.connect(tb, res.St.Port)
	return h
}

func (h *relHarness) connect(tb testing.TB, port int) {
	tb.Helper()
	hdr := http.Header{}
	hdr.Set(mcp.AuthHeader, h.app.Server().Token())
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: 10 * nvimtest.Slack * time.Second}
	ws, _, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/", port), hdr)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { _ = ws.Close() })
	h.ws = ws
	go func() { // ends when the connection closes
		defer close(h.frames)
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			h.frames <- b
		}
	}()
	if r := h.request(tb, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}`, relAnswerWait); r == nil || r.Result == nil {
		tb.Fatalf("initialize: %+v", r)
	}
	h.send(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(tb, testkit.CLIIDEConnected(os.Getpid()))
}

func (h *relHarness) send(tb testing.TB, frame string) {
	tb.Helper()
	_ = h.ws.SetWriteDeadline(time.Now().Add(relAnswerWait))
	if err := h.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		tb.Fatalf("send: %v", err)
	}
}

// relReply is a JSON-RPC response.
type relReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []mcp.Content `json:"content"`
		IsError bool          `json:"isError"`
	} `json:"result"`
	Error *mcp.Error `json:"error"`
}

// text is the reply's message: the error's, or the result's text items.
func (r *relReply) text() string {
	if r.Error != nil {
		return r.Error.Message
	}
	var parts []string
	for _, c := range r.Result.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// failed reports whether the reply is an error or an isError result.
func (r *relReply) failed() bool { return r.Error != nil || r.Result.IsError }

// request sends a request and waits up to wait for its reply, skipping
// notifications; nil means no reply in time (the request id is then in
// h.seq, for a cancellation).
func (h *relHarness) request(tb testing.TB, method, params string, wait time.Duration) *relReply {
	tb.Helper()
	return h.requestUnless(tb, method, params, wait, nil)
}

// userAsked is true while a diff or a float (executeCode's confirmation)
// waits for the user.
const userAsked = `(function()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.wo[w].diff or vim.api.nvim_win_get_config(w).relative ~= "" then return true end
  end
  return false end)()`

// relWindows describes the windows and messages, for failures.
const relWindows = `local ws = {}
for _, w in ipairs(vim.api.nvim_list_wins()) do
  table.insert(ws, { win = w, buf = vim.fn.bufname(vim.api.nvim_win_get_buf(w)):sub(1, 80), diff = vim.wo[w].diff })
end
return { wins = ws, notes = _G.notes, messages = vim.fn.execute("messages"):sub(-2000) }`

// relCloseAll closes every float and diff window, so that one failure
// does not fail every input after it.
const relCloseAll = `for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.api.nvim_win_get_config(w).relative ~= "" then pcall(vim.api.nvim_win_close, w, true) end
end
for _, d in ipairs(require("claude.diff").pending()) do
  for _, w in ipairs(vim.fn.win_findbuf(d.proposal_bufnr)) do pcall(vim.api.nvim_win_close, w, true) end
end
pcall(vim.cmd, "diffoff!")`

// requestUnless is request that also stops waiting, returning nil, once
// the Lua condition blocked holds (e.g. a diff waits for the user).
func (h *relHarness) requestUnless(tb testing.TB, method, params string, wait time.Duration, blocked *string) *relReply {
	tb.Helper()
	h.seq++
	id := fmt.Sprintf(`"rel-%d"`, h.seq)
	h.send(tb, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
	timeout := time.After(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			var yes bool
			if blocked != nil && h.TryEval("return not not ("+*blocked+")", &yes) == nil && yes {
				return nil
			}
		case f, ok := <-h.frames:
			if !ok {
				tb.Fatal("the server closed the connection")
			}
			var r relReply
			if err := json.Unmarshal(f, &r); err != nil {
				tb.Fatalf("bad frame %s: %v", f, err)
			}
			if string(r.ID) != id {
				continue // a notification, or the late reply to an earlier call
			}
			if (r.Result == nil) == (r.Error == nil) {
				tb.Fatalf("reply %s is neither a result nor an error", f)
			}
			return &r
		case <-timeout:
			return nil
		}
	}
}

func (h *relHarness) cancel(tb testing.TB) {
	tb.Helper()
	h.send(tb, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"rel-%d","reason":"test"}}`, h.seq))
}

// tools lists the tools as a client sees them.
func (h *relHarness) tools(tb testing.TB) []toolargs.Tool {
	tb.Helper()
	h.seq++
	id := fmt.Sprintf(`"rel-%d"`, h.seq)
	h.send(tb, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`)
	for f := range h.frames {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Tools []toolargs.Tool `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(f, &r); err != nil {
			tb.Fatal(err)
		}
		if string(r.ID) == id {
			if len(r.Result.Tools) == 0 {
				tb.Fatal("tools/list is empty")
			}
			return r.Result.Tools
		}
	}
	tb.Fatal("the server closed the connection")
	return nil
}

// healthy checks that Neovim answers, is not stuck in a prompt and raised
// no error message, and that nothing outside the workspace was touched.
func (h *relHarness) healthy(tb testing.TB, what string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var st struct {
		Blocking bool  `json:"blocking"`
		Errs     []any `json:"errs"`
	}
	go func() {
		done <- h.TryEval(`local errs = {}
for _, n in ipairs(_G.notes) do if n.level >= vim.log.levels.ERROR then table.insert(errs, n.msg) end end
return { blocking = vim.api.nvim_get_mode().blocking, errs = errs }`, &st)
	}()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("after %s: Neovim: %v", what, err)
		}
	case <-ctx.Done():
		tb.Fatalf("after %s: Neovim does not answer", what)
	}
	if st.Blocking || len(st.Errs) != 0 {
		tb.Errorf("after %s: waiting for input %v, error messages %v", what, st.Blocking, st.Errs)
	}
	if b, err := os.ReadFile(h.fx.Outside); err != nil || string(b) != relOutsideText {
		tb.Fatalf("after %s: the file outside the workspace is now %q (%v)", what, b, err)
	}
	if _, err := os.Stat(h.fx.Marker); err == nil {
		tb.Fatalf("after %s: an injection payload ran (%s exists)", what, h.fx.Marker)
	}
}

// names reports whether msg names the property, as a person needs to fix
// the call.
func names(msg, prop string) bool { return strings.Contains(msg, prop) }

// goInternals are fragments of Go error text that mean nothing to the
// person (or model) reading a tool error.
var goInternals = []string{"Go struct field", "json: cannot unmarshal", "of type string", "goroutine ", "runtime error", "nil pointer"}

func TestToolsRejectBadArguments(t *testing.T) {
	h := startRelHarness(t)
	tools := h.tools(t)
	var cases, refusedBad, refusedHostile, accepted int
	for _, tool := range tools {
		tool := tool
		validReply := ""
		if !relBlocking[tool.Name] {
			args, _ := json.Marshal(toolargs.Valid(tool, h.fx))
			r := h.request(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool.Name, args), relAnswerWait)
			if r == nil {
				t.Fatalf("%s with valid arguments %s: no answer", tool.Name, args)
			}
			validReply = r.text()
		}
		for _, c := range toolargs.Cases(tool, h.fx) {
			c := c
			if relBlocking[tool.Name] && c.Kind == toolargs.Hostile {
				// Absurd values that open a diff only wait for the user;
				// internal/e2e's TestHostSurvivesHostileToolCalls sends
				// them through the real host and checks the diff closes.
				continue
			}
			cases++
			t.Run(tool.Name+"/"+c.Name, func(t *testing.T) {
				var blocked *string
				if relBlocking[tool.Name] {
					blocked = new(string)
					*blocked = userAsked
				}
				r := h.requestUnless(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool.Name, c.Args), relAnswerWait, blocked)
				if r == nil {
					if !relBlocking[tool.Name] {
						t.Fatalf("no answer within %v", relAnswerWait)
					}
					// A diff or a confirmation waits for the user: the
					// client gives up, and it must go away.
					h.cancel(t)
					h.WaitFor(t, 10*time.Second, "not "+userAsked, relWindows, "the cancelled request's diff or float to close")
					h.healthy(t, c.Name)
					if c.Kind == toolargs.Missing || c.Kind == toolargs.WrongType {
						t.Fatalf("accepted: it asked the user, though the schema requires %s", c.Prop)
					}
					return
				}
				msg := r.text()
				if r.Error != nil && r.Error.Code != mcp.CodeInvalidParams {
					t.Fatalf("JSON-RPC error %d %q: only -32602 fits bad arguments", r.Error.Code, msg)
				}
				for _, frag := range goInternals {
					if strings.Contains(msg, frag) {
						t.Errorf("the message shows Go internals (%q): %q", frag, msg)
						break
					}
				}
				switch c.Kind {
				case toolargs.Missing, toolargs.WrongType:
					if !r.failed() {
						t.Fatalf("accepted: %.300q", msg)
					}
					if !names(msg, c.Prop) {
						t.Errorf("the error does not name %s: %q", c.Prop, msg)
					}
					refusedBad++
				case toolargs.Extra:
					forbidden := tool.InputSchema.AdditionalProperties != nil && !*tool.InputSchema.AdditionalProperties
					switch {
					case forbidden && r.failed():
						if !names(msg, toolargs.ExtraProp) {
							t.Errorf("the error does not name %s: %q", toolargs.ExtraProp, msg)
						}
					case validReply != "" && msg != validReply:
						t.Errorf("an unknown argument changed the answer:\n got %.300q\nwant %.300q", msg, validReply)
					}
				default:
					if r.failed() {
						refusedHostile++
					} else {
						accepted++
					}
					if r.failed() && msg == "" {
						t.Error("an error without a message")
					}
				}
				h.healthy(t, c.Name)
			})
		}
	}
	// A call that asks the user, cancelled at once — before Neovim has even
	// shown anything: whatever it opens later must close too.
	for _, tool := range tools {
		if !relBlocking[tool.Name] {
			continue
		}
		t.Run(tool.Name+"/cancelled at once", func(t *testing.T) {
			args, _ := json.Marshal(toolargs.Valid(tool, h.fx))
			h.seq++
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"rel-%d","method":"tools/call","params":{"name":%q,"arguments":%s}}`, h.seq, tool.Name, args))
			h.cancel(t)
			// A call that reaches Neovim after whatever the cancelled one
			// sent there.
			if r := h.request(t, "tools/call", `{"name":"getOpenEditors","arguments":{}}`, relAnswerWait); r == nil {
				t.Fatal("getOpenEditors: no answer")
			}
			h.WaitFor(t, 10*time.Second, "not "+userAsked, relWindows, "what the cancelled call showed to close")
			h.healthy(t, "an early cancel")
		})
	}
	t.Logf("%d tools, %d argument sets: %d missing or wrong-typed refused naming the argument; of the absurd values %d refused, %d served harmlessly",
		len(tools), cases, refusedBad, refusedHostile, accepted)
}

// relTools are the App's tools, sorted by name, as the fuzz target indexes
// them.
func relTools(a *core.App) []mcp.Tool {
	out := a.Tools()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// confine rewrites every string in v that could reach outside dir (an
// absolute path, a URI, ".." or "~") to lie inside it, so that the fuzzer,
// which runs as whoever runs the tests, can never open or save a file of
// the machine. Path confinement itself is tested with explicit cases.
func confine(v any, dir string) any {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "..") || strings.HasPrefix(x, "/") || strings.HasPrefix(x, "~") || strings.Contains(x, ":") || strings.Contains(x, "$") || strings.Contains(x, "`") {
			r := strings.NewReplacer("..", "_", "/", "_", "~", "_", ":", "_", "$", "_", "`", "_").Replace(x)
			return filepath.Join(dir, "fuzz", r)
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = confine(e, dir)
		}
	case []any:
		for i, e := range x {
			x[i] = confine(e, dir)
		}
	}
	return v
}

// FuzzToolArguments feeds each tool's handler arbitrary JSON objects. A
// handler must not panic, must answer in bounded time (openDiff, which
// waits for the user, is given 200 ms and must then give up and close what
// it opened), must never return a JSON-RPC error other than -32602, and
// must leave Neovim answering and untouched outside the workspace.
func FuzzToolArguments(f *testing.F) {
	h := startRelHarness(f)
	tools := relTools(h.app)
	seeded := map[string]int{}
	for i, tool := range tools {
		var schema toolargs.Schema
		if tool.InputSchema != nil { // nil is registered as an empty object schema
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
				f.Fatal(err)
			}
		}
		t := toolargs.Tool{Name: tool.Name, InputSchema: schema}
		valid, _ := json.Marshal(toolargs.Valid(t, h.fx))
		f.Add(uint8(i), valid)
		f.Add(uint8(i), []byte(`{}`))
		// A few hostile cases as seeds (TestToolsRejectBadArguments runs
		// them all); the fuzzer mutates from here.
		for _, c := range toolargs.Cases(t, h.fx) {
			if c.Kind == toolargs.Hostile && len(c.Args) < 512 && seeded[c.Name] < 1 {
				seeded[c.Name]++
				f.Add(uint8(i), []byte(c.Args))
			}
		}
	}
	client := mcp.ClientInfo{ID: "fuzz", PID: os.Getpid(), Initialized: true}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		var args map[string]any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&args) != nil || args == nil {
			return // the server hands tools JSON objects only
		}
		confined, err := json.Marshal(confine(args, h.fx.Workspace))
		if err != nil {
			return
		}
		tool := tools[int(which)%len(tools)]
		wait := relAnswerWait
		if relBlocking[tool.Name] {
			wait = 200 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		type answer struct {
			res *mcp.ToolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := tool.Handler(ctx, &mcp.ToolRequest{Client: client, Name: tool.Name, Arguments: confined})
			done <- answer{res, err}
		}()
		var a answer
		select {
		case a = <-done:
		case <-time.After(wait + relAnswerWait):
			t.Fatalf("%s(%s) did not return", tool.Name, confined)
		}
		var rpcErr *mcp.Error
		switch {
		case errors.As(a.err, &rpcErr) && rpcErr.Code != mcp.CodeInvalidParams:
			t.Fatalf("%s(%s): JSON-RPC error %d %q", tool.Name, confined, rpcErr.Code, rpcErr.Message)
		case a.err != nil && a.err.Error() == "":
			t.Fatalf("%s(%s): an error without a message", tool.Name, confined)
		case a.err == nil && a.res == nil:
		}
		if relBlocking[tool.Name] {
			// Leftovers would fail every later input: clear them once
			// this one has been reported.
			t.Cleanup(func() { _ = h.ExecLua(relCloseAll, nil) })
			h.WaitFor(t, 10*time.Second, "not "+userAsked, relWindows,
				fmt.Sprintf("what %s(%.200s) showed to close once it gave up (%v)", tool.Name, confined, a.err))
		}
		h.healthy(t, tool.Name+" "+string(confined))
	})
}
