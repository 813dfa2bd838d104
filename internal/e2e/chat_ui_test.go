//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// The chat panel's Lua side driven without a CLI: chat events are fed to
// require("claude.chat")._on_event as the Go host would send them, and
// require("claude.server").request is replaced by a recorder (_G.reqs) whose
// answers a test can script (_G.stub[method] = function(params) … end).
// vim.ui.input and vim.ui.select answer from queues (_G.inputs, _G.selects:
// the first item whose text contains the string is chosen).
const chatStub = `
_G.reqs = {}
_G.stub = {}
_G.inputs = {}
_G.selects = {}
_G.events = {}
local n = 0
require("claude.server").request = function(m, p)
  table.insert(_G.reqs, { m = m, p = p })
  if _G.stub[m] then return _G.stub[m](p) end
  if m == "chat_open" or m == "chat_fork" then
    -- As the host answers: the chat is starting; "ready" follows once its
    -- CLI runs.
    n = n + 1
    local id = tostring(n)
    vim.schedule(function()
      local chat = require("claude.chat")
      chat._on_event("ready", { id = id, mode = "default", model = "default",
        models = { { value = "default", display_name = "Default" }, { value = "sonnet", display_name = "Sonnet", description = "fast" } },
        commands = { { name = "compact", description = "Free up context" }, { name = "cost", description = "Show cost" } },
        prefill = m == "chat_fork" and "the forked prompt" or nil })
      chat._on_event("status", { id = id, state = "idle", mode = "default", model = "default", cost_usd = 0 })
    end)
    return { id = id, cwd = vim.fn.getcwd(), mode = "default", model = "default", state = "starting", models = {}, commands = {} }
  end
  if m == "chat_set_mode" then return { mode = p.mode } end
  if m == "chat_set_model" then return { model = p.model } end
  if m == "chat_send" then return { uuid = "u" .. #_G.reqs } end
  return {}
end
-- Requests that wait on the CLI go through request_async; the stub answers
-- at once (the UI's part is what it does with the answer).
require("claude.server").request_async = function(m, p, cb)
  local res, err = require("claude.server").request(m, p)
  cb(res, err)
end
vim.ui.input = function(o, cb) cb(table.remove(_G.inputs, 1)) end
_G.select_prompts = {}
vim.ui.select = function(items, o, cb)
  table.insert(_G.select_prompts, o and o.prompt or "")
  local want = table.remove(_G.selects, 1)
  for i, it in ipairs(items) do
    local s = o and o.format_item and o.format_item(it) or tostring(it)
    if want and s:find(want, 1, true) then return cb(it, i) end
  end
  cb(nil, nil)
end
for _, p in ipairs({ "ClaudeChatTurnDone", "ClaudeChatNeedsPermission" }) do
  vim.api.nvim_create_autocmd("User", { pattern = p, callback = function(ev)
    table.insert(_G.events, { name = p, data = ev.data }) end })
end
`

// chatReq is one recorded request.
type chatReq struct {
	M string         `json:"m"`
	P map[string]any `json:"p"`
}

type chatUI struct {
	*editor
}

// startChatUI starts Neovim with the plugin and the stubs, skipping on
// Neovim without the chat (0.7: see TestChatUINeedsNeovim08).
func startChatUI(t *testing.T, extra string) *chatUI {
	t.Helper()
	e := startEditor(t, editorOpts{extra: extra})
	var ok bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &ok)
	if !ok {
		t.Skip("the chat needs Neovim 0.8+")
	}
	e.Exec(t, captureNotify)
	e.Exec(t, chatStub)
	return &chatUI{e}
}

// ev feeds one event; data is JSON.
func (c *chatUI) ev(t *testing.T, event, data string) {
	t.Helper()
	c.Exec(t, `require("claude.chat")._on_event(..., vim.json.decode((select(2, ...))))`, event, data)
}

func (c *chatUI) reqs(t *testing.T, method string) []map[string]any {
	t.Helper()
	var all []chatReq
	c.Eval(t, `return _G.reqs`, &all)
	var out []map[string]any
	for _, r := range all {
		if r.M == method {
			out = append(out, r.P)
		}
	}
	return out
}

func (c *chatUI) lastReq(t *testing.T, method string) map[string]any {
	t.Helper()
	rs := c.reqs(t, method)
	if len(rs) == 0 {
		t.Fatalf("no %s request; notes %v", method, c.notes(t))
	}
	return rs[len(rs)-1]
}

// feed types keys (with <> notation) and runs them to completion.
func (c *chatUI) feed(t *testing.T, keys string) {
	t.Helper()
	c.Exec(t, `vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(..., true, false, true), "mx", false)`, keys)
}

func (c *chatUI) transcript(t *testing.T, id string) string {
	t.Helper()
	var buf int
	c.Eval(t, `return require("claude.chat").get(...).tbuf`, &buf, id)
	return c.Lines(t, buf)
}

// focus puts the cursor in the chat's transcript ("t") or prompt ("p").
func (c *chatUI) focus(t *testing.T, id, which string) {
	t.Helper()
	c.Exec(t, `local chat = require("claude.chat").get(select(1, ...))
local buf = select(2, ...) == "t" and chat.tbuf or chat.pbuf
vim.cmd("stopinsert")
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])`, id, which)
}

func (c *chatUI) open(t *testing.T) {
	t.Helper()
	c.Exec(t, `vim.cmd("ClaudeChat")`)
	var ok bool
	c.Eval(t, `return require("claude.chat").get("1") ~= nil`, &ok)
	if !ok {
		t.Fatalf(":ClaudeChat opened no chat; notes %v", c.notes(t))
	}
	c.WaitFor(t, 5*time.Second, `require("claude.chat").get("1").state == "idle"`, `return require("claude.chat").get("1").state`, "the chat's CLI to start")
}

func jsonEq(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("got %s\nwant %s", gb, wb)
	}
}

func TestChatUIOpenParams(t *testing.T) {
	c := startChatUI(t, `, terminal_cmd = { "/opt/claude", "--x" }, chat = { mode = "plan", model = "sonnet", effort = "high", allowed_tools = { "Read" }, env = { FOO = "1" } }`)
	c.open(t)
	p := c.lastReq(t, "chat_open")
	var cwd string
	c.Eval(t, `return vim.fn.getcwd()`, &cwd)
	want := map[string]any{"bin": "/opt/claude", "mode": "plan", "model": "sonnet", "effort": "high", "cwd": cwd}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("chat_open %s = %v, want %v", k, p[k], v)
		}
	}
	if env, _ := p["env"].(map[string]any); env["FOO"] != "1" || env["CLAUDE_CONFIG_DIR"] == nil {
		t.Errorf("chat_open env = %v, want FOO and the setup env", p["env"])
	}
	jsonEq(t, p["allowed_tools"], `["Read"]`)
	if p["editor_tools"] != false {
		t.Errorf("editor_tools = %v, want false by default", p["editor_tools"])
	}
	// The windows: transcript (markdown, winbar header) above the prompt,
	// the cursor in the prompt.
	var info struct {
		Cur    string `json:"cur"`
		FT     string `json:"ft"`
		Winbar string `json:"winbar"`
		Above  bool   `json:"above"`
	}
	c.Eval(t, `local chat = require("claude.chat").get("1")
local tw, pw = vim.fn.win_findbuf(chat.tbuf)[1], vim.fn.win_findbuf(chat.pbuf)[1]
return { cur = vim.api.nvim_buf_get_name(0), ft = vim.bo[chat.tbuf].filetype, winbar = vim.wo[tw].winbar,
  above = vim.api.nvim_win_get_position(tw)[1] < vim.api.nvim_win_get_position(pw)[1] }`, &info)
	if !strings.HasSuffix(info.Cur, "claude-chat://1/prompt") || info.FT != "markdown" || !info.Above {
		t.Errorf("layout: %+v", info)
	}
	for _, s := range []string{"idle", "mode: default", "model: default", "$0.0000"} {
		if !strings.Contains(info.Winbar, s) {
			t.Errorf("winbar %q lacks %q", info.Winbar, s)
		}
	}
	// :ClaudeChat again shows the same chat; :ClaudeChat! starts another.
	c.Exec(t, `vim.cmd("ClaudeChat")`)
	if n := len(c.reqs(t, "chat_open")); n != 1 {
		t.Errorf("second :ClaudeChat made %d chat_open requests, want 1", n)
	}
	c.Exec(t, `vim.cmd("ClaudeChat! second prompt")`)
	if n := len(c.reqs(t, "chat_open")); n != 2 {
		t.Errorf(":ClaudeChat! made %d chat_open requests in all, want 2", n)
	}
	// The prompt goes once the chat's CLI has started.
	c.WaitFor(t, 5*time.Second, `(function() for _, r in ipairs(_G.reqs) do if r.m == "chat_send" then return true end end end)()`, `return _G.reqs`, "the prompt to be sent")
	if p := c.lastReq(t, "chat_send"); p["id"] != "2" || p["text"] != "second prompt" {
		t.Errorf(":ClaudeChat! prompt sent as %v", p)
	}
}

// An event that comes twice with the same seq (an attempt the host gave
// up on at a prompt ran once the prompt was answered, then its retry) is
// shown once; events with other seqs, or none, are all shown.
func TestChatUIRepeatedEventShownOnce(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "user", `{"id":"1","uuid":"u1","text":"hi","attachments":[],"seq":"a.1"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":0,"delta":"one","seq":"a.2"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":0,"delta":"one","seq":"a.2"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":0,"delta":" two","seq":"a.3"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":0,"delta":" three"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":0,"delta":" three"}`)
	want := "## You\nhi\n## Claude\none two three three"
	if got := c.transcript(t, "1"); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

func TestChatUIStreamAndFolds(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "status", `{"id":"1","state":"running","mode":"default","model":"sonnet","cost_usd":0.0123,"context_tokens":12000,"context_window":200000}`)
	c.ev(t, "user", `{"id":"1","uuid":"u1","text":"hello there","attachments":[{"type":"file","label":"a.lua:1-3"}]}`)
	c.ev(t, "thinking", `{"id":"1","message_id":"m1","index":0,"delta":"I should\nsay hi"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":1,"delta":"Hel"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":1,"delta":"lo **world**\nsecond"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":1,"delta":" line"}`)
	c.ev(t, "tool_use", `{"id":"1","tool_use_id":"t1","name":"Read","input":{"file_path":"/x/a.lua"},"summary":"Read a.lua"}`)
	c.ev(t, "tool_result", `{"id":"1","tool_use_id":"t1","is_error":false,"summary":"3 lines","text":"one\ntwo\nthree"}`)
	c.ev(t, "turn_done", `{"id":"1","is_error":false,"subtype":"success","cost_usd":0.02,"session_cost_usd":0.02,"duration_ms":1500}`)
	want := strings.Join([]string{
		"## You",
		"hello there",
		"> attached: a.lua:1-3",
		"## Claude",
		"▸ Thinking",
		"I should",
		"say hi",
		"Hello **world**",
		"second line",
		"● Read a.lua",
		"    file_path: /x/a.lua",
		"  ⎿ 3 lines",
		"    one",
		"    two",
		"    three",
		"─ done · 1.5 s · $0.0200",
	}, "\n")
	if got := c.transcript(t, "1"); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
	// Thinking, the tool call and its result are closed folds; the text is not.
	var folds map[string][2]int
	c.Eval(t, `local chat = require("claude.chat").get("1")
local w = vim.fn.win_findbuf(chat.tbuf)[1]
return vim.api.nvim_win_call(w, function()
  local out = {}
  for _, l in ipairs({ 5, 8, 10, 12 }) do out[tostring(l)] = { vim.fn.foldclosed(l), vim.fn.foldclosedend(l) } end
  return out end)`, &folds)
	wantFolds := map[string][2]int{"5": {5, 7}, "8": {-1, -1}, "10": {10, 11}, "12": {12, 15}}
	for l, w := range wantFolds {
		if folds[l] != w {
			t.Errorf("line %s fold = %v, want %v", l, folds[l], w)
		}
	}
	// <Tab> opens the fold under the cursor.
	c.focus(t, "1", "t")
	c.Exec(t, `vim.api.nvim_win_set_cursor(0, { 12, 0 })`)
	c.feed(t, "<Tab>")
	var closed int
	c.Eval(t, `return vim.fn.foldclosed(12)`, &closed)
	if closed != -1 {
		t.Errorf("after <Tab> the tool result fold is still closed")
	}
	var header string
	c.Eval(t, `return require("claude.chat").header(require("claude.chat").get("1"))`, &header)
	for _, s := range []string{"running", "model: sonnet", "$0.0200", "ctx 12k/200k (6%)"} {
		if !strings.Contains(header, s) {
			t.Errorf("header %q lacks %q", header, s)
		}
	}
	var evs []struct {
		Name string         `json:"name"`
		Data map[string]any `json:"data"`
	}
	c.WaitFor(t, 5*time.Second, `#_G.events > 0`, `return _G.events`, "ClaudeChatTurnDone")
	c.Eval(t, `return _G.events`, &evs)
	if evs[0].Name != "ClaudeChatTurnDone" || evs[0].Data["id"] != "1" {
		t.Errorf("events %+v", evs)
	}
}

func TestChatUIEarlyEventsAndTwoChats(t *testing.T) {
	c := startChatUI(t, "")
	// Events of chat 1 that arrive while chat_open is still waiting.
	c.Exec(t, `_G.stub.chat_open = function(p)
  require("claude.chat")._on_event("status", { id = "1", state = "starting", mode = "default", model = "opus", cost_usd = 0 })
  require("claude.chat")._on_event("system", { id = "1", level = "info", text = "early bird" })
  vim.schedule(function()
    require("claude.chat")._on_event("ready", { id = "1", models = {}, commands = {} })
  end)
  return { id = "1", cwd = p.cwd, mode = "default", model = "default", state = "starting", models = {}, commands = {} }
end`)
	c.open(t)
	if got := c.transcript(t, "1"); got != "> ℹ early bird" {
		t.Errorf("chat 1 transcript %q", got)
	}
	c.Exec(t, `_G.stub.chat_open = function(p) return { id = "2", cwd = p.cwd, mode = "default", model = "default" } end`)
	c.Exec(t, `vim.cmd("ClaudeChat!")`)
	c.ev(t, "text", `{"id":"2","message_id":"a","index":0,"delta":"for two"}`)
	c.ev(t, "text", `{"id":"1","message_id":"b","index":0,"delta":"for one"}`)
	if got := c.transcript(t, "1"); !strings.HasSuffix(got, "for one") || strings.Contains(got, "two") {
		t.Errorf("chat 1 transcript %q", got)
	}
	if got := c.transcript(t, "2"); !strings.HasSuffix(got, "for two") || strings.Contains(got, "one") {
		t.Errorf("chat 2 transcript %q", got)
	}
	// Each prompt sends to its own chat.
	c.focus(t, "1", "p")
	c.feed(t, "ito one<Esc><CR>")
	c.focus(t, "2", "p")
	c.feed(t, "ito two<C-s>")
	sends := c.reqs(t, "chat_send")
	if len(sends) != 2 || sends[0]["id"] != "1" || sends[0]["text"] != "to one" || sends[1]["id"] != "2" || sends[1]["text"] != "to two" {
		t.Errorf("sends %v", sends)
	}
}

func TestChatUIPermissionKeys(t *testing.T) {
	cases := []struct {
		name    string
		perm    string // the permission event
		key     string
		inputs  []string
		selects []string
		want    string // chat_permission params
		shows   []string
	}{
		{"bash once", `{"kind":"bash","tool":"Bash","summary":"Bash: make test","input":{"command":"make test"},"description":"Run the tests","body":["$ make test","Claude says: Run the tests"],"fits":true,"lines":1}`,
			"a", nil, nil, `{"behavior":"allow","scope":"once"}`, []string{"┃ $ make test", "┃ Claude says: Run the tests"}},
		{"session", `{"kind":"bash","tool":"Bash","summary":"Bash: ls","input":{"command":"ls"}}`,
			"s", nil, nil, `{"behavior":"allow","scope":"session"}`, nil},
		{"project", `{"kind":"other","tool":"WebFetch","summary":"WebFetch example.com","input":{"url":"https://example.com"}}`,
			"p", nil, nil, `{"behavior":"allow","scope":"project"}`, nil},
		{"deny with reason", `{"kind":"edit","tool":"Edit","summary":"Edit a.lua","input":{"file_path":"/x/a.lua"},"diff":true}`,
			"d", []string{"use tabs"}, nil, `{"behavior":"deny","message":"use tabs"}`, []string{"diff review is open"}},
		{"deny, no reason", `{"kind":"edit","tool":"Write","summary":"Write b.lua","input":{"file_path":"/x/b.lua"},"diff":false}`,
			"d", []string{""}, nil, `{"behavior":"deny","message":"The user denied this."}`, []string{"Permission: Write b.lua"}},
		{"plan approve acceptEdits", `{"kind":"plan","tool":"ExitPlanMode","summary":"Plan","input":{},"plan":"# Plan\n1. do it"}`,
			"a", nil, []string{"acceptEdits"}, `{"behavior":"allow","accept_plan_mode":"acceptEdits"}`, []string{"plan is open"}},
		{"plan comment", `{"kind":"plan","tool":"ExitPlanMode","summary":"Plan","input":{},"plan":"# Plan\n1. do it"}`,
			"d", []string{"smaller steps"}, nil, `{"behavior":"deny","message":"smaller steps"}`, nil},
		{"question", `{"kind":"question","tool":"AskUserQuestion","summary":"Question","input":{},"questions":[{"question":"Which greeting?","header":"Greeting","options":[{"label":"hello","description":"plain"},{"label":"hi"}],"multi_select":false}]}`,
			"a", nil, []string{"hi"}, `{"behavior":"allow","answers":{"Which greeting?":"hi"}}`, []string{"? Which greeting?", "  - hello — plain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startChatUI(t, "")
			c.open(t)
			var perm map[string]any
			if err := json.Unmarshal([]byte(tc.perm), &perm); err != nil {
				t.Fatal(err)
			}
			perm["id"] = "1"
			perm["request_id"] = "r1"
			b, _ := json.Marshal(perm)
			c.ev(t, "permission", string(b))
			tr := c.transcript(t, "1")
			for _, s := range append(tc.shows, "⚠ Permission") {
				if !strings.Contains(tr, s) {
					t.Errorf("transcript lacks %q:\n%s", s, tr)
				}
			}
			c.Exec(t, `_G.inputs = vim.json.decode((select(1, ...))) _G.selects = vim.json.decode((select(2, ...)))`, jsonOf(tc.inputs), jsonOf(tc.selects))
			c.focus(t, "1", "t")
			c.feed(t, tc.key)
			p := c.lastReq(t, "chat_permission")
			if p["id"] != "1" || p["request_id"] != "r1" {
				t.Errorf("ids: %v", p)
			}
			delete(p, "id")
			delete(p, "request_id")
			jsonEq(t, p, tc.want)
			behavior, _ := p["behavior"].(string)
			c.ev(t, "permission_done", `{"id":"1","request_id":"r1","behavior":"`+behavior+`","by":"user"}`)
			tr = c.transcript(t, "1")
			if strings.Contains(tr, "[a] ") {
				t.Errorf("the keys line stayed after permission_done:\n%s", tr)
			}
			var pending []string
			c.Eval(t, `return require("claude.chat.permission").pending(require("claude.chat").get("1"))`, &pending)
			if len(pending) != 0 {
				t.Errorf("pending %v", pending)
			}
		})
	}
}

func jsonOf(v any) string {
	if v == nil {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestChatUIPlanBuffer(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "permission", `{"id":"1","request_id":"r9","kind":"plan","tool":"ExitPlanMode","summary":"Plan","input":{},"plan":"# Plan\n1. first\n2. second\n"}`)
	c.WaitFor(t, 5*time.Second, `vim.fn.bufnr("claude-plan://1/r9.md") > 0 and #vim.fn.win_findbuf(vim.fn.bufnr("claude-plan://1/r9.md")) > 0`, `return vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs())`, "the plan buffer")
	// The user comments in the plan and writes it: deny with the comments.
	c.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr("claude-plan://1/r9.md"))[1])
vim.api.nvim_buf_set_lines(0, 2, 2, false, { "   > also add tests" })
vim.cmd("write")`)
	p := c.lastReq(t, "chat_permission")
	msg, _ := p["message"].(string)
	if p["behavior"] != "deny" || !strings.Contains(msg, "+   > also add tests") || !strings.Contains(msg, "ExitPlanMode") {
		t.Errorf("plan comments sent as %v", p)
	}
	c.ev(t, "permission_done", `{"id":"1","request_id":"r9","behavior":"deny","by":"user"}`)
	c.WaitFor(t, 5*time.Second, `vim.fn.bufnr("claude-plan://1/r9.md") == -1`, ``, "the plan buffer to go")
	if tr := c.transcript(t, "1"); !strings.Contains(tr, "┃ ✗ plan sent back") {
		t.Errorf("transcript:\n%s", tr)
	}
	// ga in a second plan's buffer approves it in manual mode.
	c.ev(t, "permission", `{"id":"1","request_id":"r10","kind":"plan","tool":"ExitPlanMode","summary":"Plan","input":{},"plan":"# Plan v2"}`)
	c.WaitFor(t, 5*time.Second, `#vim.fn.win_findbuf(vim.fn.bufnr("claude-plan://1/r10.md")) > 0`, ``, "the second plan buffer")
	c.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr("claude-plan://1/r10.md"))[1])`)
	c.feed(t, "ga")
	p = c.lastReq(t, "chat_permission")
	delete(p, "id")
	jsonEq(t, p, `{"behavior":"allow","accept_plan_mode":"manual","request_id":"r10"}`)
}

func TestChatUIModesModelInterrupt(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.focus(t, "1", "p")
	for _, want := range []string{"acceptEdits", "plan", "auto", "dontAsk", "manual"} {
		c.feed(t, "<S-Tab>")
		if p := c.lastReq(t, "chat_set_mode"); p["mode"] != want || p["id"] != "1" {
			t.Fatalf("<S-Tab>: chat_set_mode %v, want %s", p, want)
		}
		var header string
		c.Eval(t, `return vim.wo[vim.fn.win_findbuf(require("claude.chat").get("1").tbuf)[1]].winbar`, &header)
		if !strings.Contains(header, "mode: "+want) {
			t.Errorf("winbar %q lacks mode %s", header, want)
		}
	}
	// From insert mode too, and from the transcript.
	c.feed(t, "i<S-Tab>")
	if p := c.lastReq(t, "chat_set_mode"); p["mode"] != "acceptEdits" {
		t.Errorf("insert-mode <S-Tab>: %v", p)
	}
	c.focus(t, "1", "t")
	c.Exec(t, `_G.selects = { "Sonnet" }`)
	c.feed(t, "gm")
	if p := c.lastReq(t, "chat_set_model"); p["model"] != "sonnet" {
		t.Errorf("gm: chat_set_model %v", p)
	}
	c.feed(t, "<C-c>")
	c.focus(t, "1", "p")
	c.feed(t, "i<C-c>")
	if n := len(c.reqs(t, "chat_interrupt")); n != 2 {
		t.Errorf("<C-c> twice made %d chat_interrupt requests", n)
	}
	if p := c.lastReq(t, "chat_interrupt"); p["id"] != "1" {
		t.Errorf("chat_interrupt %v", p)
	}
}

func TestChatUIPromptHistoryAttachments(t *testing.T) {
	c := startChatUI(t, "")
	dir := c.Dir
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a\nb\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pic.png"), []byte("\x89PNG"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A selection in the file window, then the chat.
	c.Exec(t, `vim.cmd("edit notes.txt") vim.cmd("normal! 2GVj\27")`)
	c.open(t)
	c.focus(t, "1", "p")
	c.feed(t, "gs")
	c.Exec(t, `vim.cmd("ClaudeChatImage pic.png")`)
	var bar string
	c.Eval(t, `return vim.wo[0].winbar`, &bar)
	if !strings.Contains(bar, "notes.txt:2-3") || !strings.Contains(bar, "image: pic.png") {
		t.Errorf("prompt winbar %q lacks the attachments", bar)
	}
	c.feed(t, "ifirst line<CR>see @notes.txt<Esc>")
	c.feed(t, "<CR>")
	p := c.lastReq(t, "chat_send")
	if p["text"] != "first line\nsee @notes.txt" {
		t.Errorf("text %q", p["text"])
	}
	notes := filepath.Join(dir, "notes.txt")
	jsonEq(t, p["attachments"], `[{"type":"file","path":`+jsonOf(notes)+`,"start_line":2,"end_line":3},{"type":"image","path":`+jsonOf(filepath.Join(dir, "pic.png"))+`},{"type":"file","path":`+jsonOf(notes)+`}]`)
	if got := c.Lines(t, 0); got != "" {
		t.Errorf("prompt not cleared after send: %q", got)
	}
	// Clipboard image, a second prompt, then history.
	c.Exec(t, `_G.inputs = { "" }`)
	c.feed(t, "gi")
	c.feed(t, "isecond<C-s>")
	jsonEq(t, c.lastReq(t, "chat_send")["attachments"], `[{"type":"image","clipboard":true}]`)
	c.feed(t, "idraft<Esc>")
	c.feed(t, "<Up>")
	if got := c.Lines(t, 0); got != "second" {
		t.Errorf("<Up> once: %q", got)
	}
	c.feed(t, "<Up>")
	if got := c.Lines(t, 0); got != "first line\nsee @notes.txt" {
		t.Errorf("<Up> twice: %q", got)
	}
	c.feed(t, "gg<Down>")
	if got := c.Lines(t, 0); got != "first line\nsee @notes.txt" {
		t.Errorf("<Down> on the first of two lines should move, not recall: %q", got)
	}
	c.feed(t, "G<Down>")
	c.feed(t, "<Down>")
	if got := c.Lines(t, 0); got != "draft" {
		t.Errorf("<Down> back to the draft: %q", got)
	}
	// Completion: @file and /command.
	var items []string
	c.Eval(t, `local o = require("claude.chat.prompt").omnifunc
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "look at @no" })
vim.api.nvim_win_set_cursor(0, { 1, 11 })
local start = o(1, "")
local out = { tostring(start) }
for _, it in ipairs(o(0, "@no")) do table.insert(out, it.word) end
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "/co" })
vim.api.nvim_win_set_cursor(0, { 1, 3 })
table.insert(out, tostring(o(1, "")))
for _, it in ipairs(o(0, "/co")) do table.insert(out, it.word) end
return out`, &items)
	jsonEq(t, items, `["8","@notes.txt","0","/compact","/cost"]`)
}

func TestChatUINeedsPermissionNotify(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	// Visible: the event, no notification.
	c.ev(t, "permission", `{"id":"1","request_id":"r1","kind":"bash","tool":"Bash","summary":"Bash: ls","input":{"command":"ls"}}`)
	c.WaitFor(t, 5*time.Second, `#_G.events == 1`, `return _G.events`, "ClaudeChatNeedsPermission")
	// Hidden: a notification too.
	c.focus(t, "1", "t")
	c.feed(t, "q")
	var visible bool
	c.Eval(t, `return require("claude.chat").visible(require("claude.chat").get("1"))`, &visible)
	if visible {
		t.Fatal("q did not hide the chat")
	}
	c.ev(t, "permission", `{"id":"1","request_id":"r2","kind":"bash","tool":"Bash","summary":"Bash: rm x","input":{"command":"rm x"}}`)
	c.WaitFor(t, 5*time.Second, `#_G.events == 2 and #_G.notes > 0`, `return { _G.events, _G.notes }`, "the notification")
	var msg string
	c.Eval(t, `return _G.notes[#_G.notes].msg`, &msg)
	if !strings.Contains(msg, "Bash: rm x") {
		t.Errorf("notification %q", msg)
	}
	var evData map[string]any
	c.Eval(t, `return _G.events[2].data`, &evData)
	if evData["request_id"] != "r2" || evData["kind"] != "bash" {
		t.Errorf("event data %v", evData)
	}
	// notify = false: the event only.
	c.Exec(t, `require("claude.config").options.chat.notify = false _G.notes = {}`)
	c.ev(t, "permission", `{"id":"1","request_id":"r3","kind":"bash","tool":"Bash","summary":"Bash: pwd","input":{"command":"pwd"}}`)
	c.WaitFor(t, 5*time.Second, `#_G.events == 3`, `return _G.events`, "the third event")
	c.Exec(t, `vim.wait(50)`)
	if n := len(c.notes(t)); n != 0 {
		t.Errorf("notify = false still notified: %v", c.notes(t))
	}
}

func TestChatUIExitedResume(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "status", `{"id":"1","state":"idle","mode":"default","model":"default","session_id":"sess-1","cost_usd":0}`)
	c.ev(t, "permission", `{"id":"1","request_id":"r1","kind":"bash","tool":"Bash","summary":"Bash: ls","input":{"command":"ls"}}`)
	c.ev(t, "exited", `{"id":"1","code":1,"stderr":"boom"}`)
	tr := c.transcript(t, "1")
	for _, s := range []string{"exited (code 1)", "boom", "Press r here to resume", "not answered"} {
		if !strings.Contains(tr, s) {
			t.Errorf("transcript lacks %q:\n%s", s, tr)
		}
	}
	c.Exec(t, `_G.stub.chat_open = function(p) return { id = "7", cwd = p.cwd, mode = "default", model = "default" } end`)
	c.focus(t, "1", "t")
	c.feed(t, "r")
	if p := c.lastReq(t, "chat_open"); p["resume"] != "sess-1" {
		t.Fatalf("r: chat_open %v", p)
	}
	c.ev(t, "text", `{"id":"7","message_id":"m","index":0,"delta":"back again"}`)
	if tr := c.transcript(t, "7"); !strings.HasSuffix(tr, "back again") || !strings.Contains(tr, "boom") {
		t.Errorf("resumed transcript:\n%s", tr)
	}
}

func TestChatUISessionsRewindFork(t *testing.T) {
	c := startChatUI(t, "")
	dir := c.Dir
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("new text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Exec(t, `vim.cmd("edit f.txt")`)
	c.Exec(t, `_G.rewind_path = ...
_G.stub.chat_sessions = function() return { sessions = {
  { session_id = "s-old", title = "Old work", first_prompt = "fix the bug", modified = 1700000000, messages = 4 } } } end
_G.stub.chat_history = function(p) return { messages = {
  { role = "user", text = "fix the bug", uuid = "hu1" },
  { role = "assistant", text = "Fixed it.", tools = { "Edit f.txt" } } } } end
_G.stub.chat_rewind = function(p) return { files = {
  { path = _G.rewind_path, contents = "old text\n", changed = true } } } end`, file)
	c.Exec(t, `_G.selects = { "Old work", "Fork" }`)
	c.Exec(t, `vim.cmd("ClaudeChatSessions")`)
	p := c.lastReq(t, "chat_open")
	if p["resume"] != "s-old" || p["fork"] != true {
		t.Fatalf("chat_open %v", p)
	}
	tr := c.transcript(t, "1")
	for _, s := range []string{"## You\nfix the bug", "## Claude\nFixed it.\n● Edit f.txt", "earlier messages above"} {
		if !strings.Contains(tr, s) {
			t.Errorf("history lacks %q:\n%s", s, tr)
		}
	}
	// Rewind to before "fix the bug": the buffer and the file change back,
	// and one undo brings the newer text back.
	c.focus(t, "1", "t")
	c.Exec(t, `vim.api.nvim_win_set_cursor(0, { 2, 0 }) _G.selects = { "Rewind" }`)
	c.feed(t, "R")
	if p := c.lastReq(t, "chat_rewind"); p["uuid"] != "hu1" {
		t.Errorf("chat_rewind %v", p)
	}
	if b, _ := os.ReadFile(file); string(b) != "old text\n" {
		t.Errorf("file after rewind %q", b)
	}
	var lines string
	c.Eval(t, `local b = vim.fn.bufnr(select(1, ...))
local before = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
vim.api.nvim_buf_call(b, function() vim.cmd("undo") end)
return before .. "|" .. table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")`, &lines, file)
	if lines != "old text|new text" {
		t.Errorf("buffer before|after undo = %q", lines)
	}
	// Fork from that message: a new chat with the prompt prefilled.
	c.feed(t, "F")
	if p := c.lastReq(t, "chat_fork"); p["uuid"] != "hu1" || p["id"] != "1" {
		t.Errorf("chat_fork %v", p)
	}
	var prompt string
	c.Eval(t, `return table.concat(vim.api.nvim_buf_get_lines(require("claude.chat").get("2").pbuf, 0, -1, false), "\n")`, &prompt)
	if prompt != "the forked prompt" {
		t.Errorf("fork prefill %q", prompt)
	}
}

func TestChatUITodosAndReload(t *testing.T) {
	c := startChatUI(t, "")
	file := filepath.Join(c.Dir, "r.txt")
	if err := os.WriteFile(file, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Exec(t, `vim.cmd("edit r.txt")`)
	c.open(t)
	c.ev(t, "todos", `{"id":"1","todos":[{"content":"Read","status":"completed","active_form":"Reading"},{"content":"Edit","status":"in_progress","active_form":"Editing"},{"content":"Test","status":"pending","active_form":"Testing"}]}`)
	var todo string
	c.Eval(t, `local chat = require("claude.chat").get("1")
assert(#vim.fn.win_findbuf(chat.dbuf) == 1, "no todo window")
return table.concat(vim.api.nvim_buf_get_lines(chat.dbuf, 0, -1, false), "\n")`, &todo)
	if todo != "☑ Read\n◐ Editing\n☐ Test" {
		t.Errorf("todos %q", todo)
	}
	if err := os.WriteFile(file, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ev(t, "file_changed", `{"id":"1","paths":[`+jsonOf(file)+`]}`)
	var got string
	c.Eval(t, `return vim.api.nvim_buf_get_lines(vim.fn.bufnr(select(1, ...)), 0, -1, false)[1]`, &got, file)
	if got != "two" {
		t.Errorf("buffer after file_changed: %q", got)
	}
}

func TestChatUINeedsNeovim08(t *testing.T) {
	e := startEditor(t, editorOpts{})
	var has08 bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &has08)
	if has08 {
		t.Skip("this Neovim has what the chat needs")
	}
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeChat hello") vim.cmd("ClaudeChatSessions")`)
	ns := e.notes(t)
	if len(ns) != 2 || !strings.Contains(ns[0].Msg, "needs Neovim ≥ 0.8") || ns[0].Level != 4 {
		t.Fatalf("notes %+v", ns)
	}
}

// The chat's help section: :helptags takes it (no duplicate tags) and every
// chat tag leads to it.
func TestChatUIHelpTags(t *testing.T) {
	root := nvimtest.RepoRoot(t)
	doc := filepath.Join(t.TempDir(), "doc")
	if err := os.Mkdir(doc, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "doc", "nvim-claude.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(doc, "nvim-claude.txt"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	n := nvimtest.Start(t, nvimtest.Options{NoPlugin: true})
	var errMsg string
	n.Eval(t, `local ok, err = pcall(vim.cmd, "helptags " .. vim.fn.fnameescape(...)) return ok and "" or tostring(err)`, &errMsg, doc)
	if errMsg != "" {
		t.Fatalf(":helptags: %s", errMsg)
	}
	n.Exec(t, `vim.opt.rtp:prepend(...)`, filepath.Dir(doc))
	for _, tag := range []string{"nvim-claude-chat", ":ClaudeChat", ":ClaudeChatSessions", ":ClaudeChatSend", ":ClaudeChatImage",
		":ClaudeChatClose", "claude-chat-keys", "claude-chat-permissions", "ClaudeChatTurnDone", "ClaudeChatNeedsPermission", "claude-config-chat"} {
		var res string
		n.Eval(t, `local ok, err = pcall(vim.cmd, "help " .. ...) local b = vim.fn.expand("%:t") vim.cmd("silent! helpclose") return ok and b or tostring(err)`, &res, tag)
		if res != "nvim-claude.txt" {
			t.Errorf(":help %s → %q", tag, res)
		}
	}
	// Every chat option and key in the defaults is documented.
	text := string(src)
	for _, opt := range []string{"cmd", "mode", "model", "effort", "editor_tools", "allowed_tools", "disallowed_tools", "env", "layout",
		"width", "prompt_height", "notify", "history_size", "send = ", "interrupt = ", "attach_selection = ", "clear_attachments = ",
		"allow_session = ", "allow_project = ", "rewind = ", "fork = ", "resume = ", "close = "} {
		if !strings.Contains(text[strings.Index(text, "*claude-config-chat*"):], opt) {
			t.Errorf("chat option %q not documented", opt)
		}
	}
}

// errNotes are the error notifications so far (a Lua error in an event
// handler shows as one).
func (c *chatUI) errNotes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, n := range c.notes(t) {
		if n.Level >= 4 {
			out = append(out, n.Msg)
		}
	}
	return out
}

// Rewind never overwrites unsaved edits silently: the user picks skip or
// overwrite; entries Go restored itself only reload their buffer; entries
// with an error are skipped and reported.
func TestChatUIRewindUnsavedAndHostEntries(t *testing.T) {
	c := startChatUI(t, "")
	dir := c.Dir
	for name, text := range map[string]string{"f.txt": "claude f\n", "h.txt": "claude h\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, h := filepath.Join(dir, "f.txt"), filepath.Join(dir, "h.txt")
	c.Exec(t, `vim.cmd("edit h.txt") vim.cmd("edit f.txt")
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "my unsaved work" })`)
	c.Exec(t, `local f, h = ...
_G.stub.chat_rewind = function() return { files = {
  { path = f, contents = "before f\n", changed = true },
  { path = h, contents = vim.NIL, changed = true, restored_by_host = true },
  { path = "/nowhere/e.txt", changed = true, error = "checkpoint lost" } } } end`, f, h)
	c.open(t)
	c.ev(t, "user", `{"id":"1","uuid":"u1","text":"do it"}`)
	// Go wrote h.txt itself (as the rewind would).
	if err := os.WriteFile(h, []byte("before h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	buffer := func(path string) string {
		var s string
		c.Eval(t, `return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr((...)), 0, -1, false), "\n")`, &s, path)
		return s
	}
	c.focus(t, "1", "t")
	c.Exec(t, `vim.api.nvim_win_set_cursor(0, { 1, 0 }) _G.selects = { "Rewind", "Skip" } _G.notes = {}`)
	c.feed(t, "R")
	if got := buffer(f); got != "my unsaved work" {
		t.Errorf("skip: f buffer %q, want the unsaved edit kept", got)
	}
	if b, _ := os.ReadFile(f); string(b) != "claude f\n" {
		t.Errorf("skip: f.txt on disk %q", b)
	}
	if got := buffer(h); got != "before h" {
		t.Errorf("restored_by_host: h buffer %q, want it reloaded", got)
	}
	ns := c.notes(t)
	if len(ns) == 0 {
		t.Fatal("no report of the rewind")
	}
	report := ns[len(ns)-1].Msg
	for _, s := range []string{"f.txt skipped: the buffer has unsaved changes", "h.txt restored by the host", "e.txt skipped: checkpoint lost"} {
		if !strings.Contains(report, s) {
			t.Errorf("report %q lacks %q", report, s)
		}
	}
	// Overwrite: the buffer gets the old text (undoable) and is written.
	c.Exec(t, `_G.selects = { "Rewind", "Overwrite" }`)
	c.feed(t, "R")
	if got := buffer(f); got != "before f" {
		t.Errorf("overwrite: f buffer %q", got)
	}
	if b, _ := os.ReadFile(f); string(b) != "before f\n" {
		t.Errorf("overwrite: f.txt on disk %q", b)
	}
}

// :bd / :bw of the prompt buffer: a new one (with the draft) takes its place;
// :bd of the transcript ends the chat cleanly. No event errors afterwards.
func TestChatUIBufferDeletes(t *testing.T) {
	for _, cmd := range []string{"bdelete!", "bwipeout!"} {
		t.Run(cmd, func(t *testing.T) {
			c := startChatUI(t, "")
			c.open(t)
			c.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, { "my draft" })`)
			c.Exec(t, `vim.cmd(... .. " " .. require("claude.chat").get("1").pbuf)`, cmd)
			c.ev(t, "text", `{"id":"1","message_id":"m","index":0,"delta":"still here"}`)
			c.Exec(t, `vim.cmd("ClaudeChat")`)
			var st struct {
				Loaded bool   `json:"loaded"`
				Text   string `json:"text"`
				Cur    bool   `json:"cur"`
			}
			c.Eval(t, `local chat = require("claude.chat").get("1")
return { loaded = vim.api.nvim_buf_is_loaded(chat.pbuf), cur = vim.api.nvim_get_current_buf() == chat.pbuf,
  text = table.concat(vim.api.nvim_buf_get_lines(chat.pbuf, 0, -1, false), "\n") }`, &st)
			if !st.Loaded || !st.Cur || st.Text != "my draft" {
				t.Errorf("prompt after %s: %+v", cmd, st)
			}
			c.feed(t, "<CR>")
			if p := c.lastReq(t, "chat_send"); p["text"] != "my draft" {
				t.Errorf("send from the new prompt: %v", p)
			}
			if tr := c.transcript(t, "1"); !strings.HasSuffix(tr, "still here") {
				t.Errorf("transcript %q", tr)
			}
			// The transcript: the chat ends (chat_close), later events are ignored.
			c.Exec(t, `vim.cmd(... .. " " .. require("claude.chat").get("1").tbuf)`, cmd)
			c.Exec(t, `vim.wait(20)`)
			c.ev(t, "text", `{"id":"1","message_id":"m","index":0,"delta":" and more"}`)
			c.ev(t, "status", `{"id":"1","state":"exited","mode":"default","model":"default","cost_usd":0}`)
			if p := c.lastReq(t, "chat_close"); p["id"] != "1" {
				t.Errorf("chat_close %v", p)
			}
			var gone bool
			c.Eval(t, `return require("claude.chat").get("1") == nil and vim.fn.bufnr("claude-chat://1/prompt") == -1`, &gone)
			if !gone {
				t.Errorf("chat 1 still there after %s of its transcript", cmd)
			}
			if es := c.errNotes(t); len(es) != 0 {
				t.Errorf("errors: %v", es)
			}
		})
	}
}

// <Up>/<Down> move in the completion menu when it is open.
func TestChatUIUpDownInCompletionMenu(t *testing.T) {
	c := startChatUI(t, "")
	for _, n := range []string{"notes1.txt", "notes2.txt"} {
		if err := os.WriteFile(filepath.Join(c.Dir, n), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.open(t)
	c.focus(t, "1", "p")
	c.feed(t, "iolder prompt<C-s>")
	c.feed(t, "i@notes<C-x><C-o><Down><Up><Down><C-y><Esc>")
	got := c.Lines(t, 0)
	if got != "@notes1.txt" && got != "@notes2.txt" {
		t.Errorf("prompt after <Down>/<Up> in the menu: %q (want a completed @file, not the history)", got)
	}
	// Without the menu, <Up> on the first line still recalls the history.
	c.feed(t, "<Up>")
	if got := c.Lines(t, 0); got != "older prompt" {
		t.Errorf("<Up> without the menu: %q", got)
	}
}

// An AskUserQuestion without questions answers with an empty object, not [].
func TestChatUIEmptyAnswersIsObject(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "permission", `{"id":"1","request_id":"r1","kind":"question","tool":"AskUserQuestion","summary":"Question","input":{},"questions":[]}`)
	c.focus(t, "1", "t")
	c.feed(t, "a")
	var enc string
	c.Eval(t, `for i = #_G.reqs, 1, -1 do local r = _G.reqs[i]
  if r.m == "chat_permission" then return vim.json.encode(r.p.answers) end end return "none"`, &enc)
	if enc != "{}" {
		t.Errorf("answers encoded as %s, want {}", enc)
	}
}

// chat_close goes out for exited chats and for the old id of a resumed one;
// events of closed ids and of ids nobody opens are not kept.
func TestChatUICloseExitedAndStaleEvents(t *testing.T) {
	c := startChatUI(t, "")
	c.Exec(t, `_G.stub.chat_open = function(p) return { id = "1", cwd = p.cwd, mode = "default", model = "default" } end`)
	c.open(t)
	c.ev(t, "status", `{"id":"1","state":"idle","mode":"default","model":"default","session_id":"s1","cost_usd":0}`)
	c.ev(t, "exited", `{"id":"1","code":1,"stderr":"boom"}`)
	// resume: chat_close for the old id; its late events are dropped
	c.Exec(t, `_G.stub.chat_open = function(p) return { id = "2", cwd = p.cwd, mode = "default", model = "default" } end`)
	c.focus(t, "1", "t")
	c.feed(t, "r")
	if p := c.lastReq(t, "chat_close"); p["id"] != "1" {
		t.Errorf("resume: chat_close %v, want the old id 1", p)
	}
	c.ev(t, "text", `{"id":"1","message_id":"late","index":0,"delta":"stale one"}`)
	// an event for an id nobody is opening is not replayed later
	c.ev(t, "system", `{"id":"3","level":"info","text":"stale three"}`)
	c.Exec(t, `_G.stub.chat_open = function(p) return { id = "3", cwd = p.cwd, mode = "default", model = "default" } end`)
	c.Exec(t, `vim.cmd("ClaudeChat!")`)
	if tr := c.transcript(t, "3"); strings.Contains(tr, "stale") {
		t.Errorf("chat 3 got a stale event:\n%s", tr)
	}
	if tr := c.transcript(t, "2"); strings.Contains(tr, "stale") {
		t.Errorf("resumed chat got an event of its old id:\n%s", tr)
	}
	// closing an exited chat still tells Go
	c.ev(t, "exited", `{"id":"2","code":1,"stderr":"boom again"}`)
	c.Exec(t, `require("claude.chat").close(require("claude.chat").get("2"))`)
	if p := c.lastReq(t, "chat_close"); p["id"] != "2" {
		t.Errorf("close of an exited chat: chat_close %v", p)
	}
	c.ev(t, "status", `{"id":"2","state":"exited","mode":"default","model":"default","cost_usd":0}`)
	if es := c.errNotes(t); len(es) != 0 {
		t.Errorf("errors: %v", es)
	}
}

// file_changed {all = true}: every unmodified file buffer is reloaded, a
// modified one is left alone.
func TestChatUIFileChangedAll(t *testing.T) {
	c := startChatUI(t, "")
	a, b := filepath.Join(c.Dir, "a.txt"), filepath.Join(c.Dir, "b.txt")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.Exec(t, `vim.cmd("edit a.txt") vim.cmd("edit b.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "mine" })`)
	c.open(t)
	// a later mtime, so that :checktime sees the change
	c.Exec(t, `vim.wait(1100)`)
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("two\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.ev(t, "file_changed", `{"id":"1","paths":[],"all":true}`)
	var got []string
	c.Eval(t, `local out = {} for _, p in ipairs({ ... }) do
  table.insert(out, table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr(p), 0, -1, false), "\n")) end return out`, &got, a, b)
	if len(got) != 2 || got[0] != "two" || got[1] != "mine" {
		t.Errorf("buffers after file_changed all: %q, want [two mine]", got)
	}
}

// Without the diff review the prompt shows what the edit would change.
func TestChatUIEditPromptWithoutDiff(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	var long []string
	for i := 1; i <= 40; i++ {
		long = append(long, "line "+strings.Repeat("x", i%3))
	}
	content, _ := json.Marshal(strings.Join(long, "\n"))
	c.ev(t, "permission", `{"id":"1","request_id":"r1","kind":"edit","tool":"Edit","summary":"Edit a.lua","diff":false,
"input":{"file_path":"/x/a.lua","old_string":"local a = 1","new_string":"local a = 2\nlocal b = 3"}}`)
	c.ev(t, "permission", `{"id":"1","request_id":"r2","kind":"edit","tool":"Write","summary":"Write b.lua","diff":false,
"input":{"file_path":"/x/b.lua","content":`+string(content)+`}}`)
	c.ev(t, "permission", `{"id":"1","request_id":"r3","kind":"edit","tool":"MultiEdit","summary":"MultiEdit c.lua","diff":false,
"input":{"file_path":"/x/c.lua","edits":[{"old_string":"foo","new_string":"bar"},{"old_string":"x","new_string":"y","replace_all":true}]}}`)
	tr := c.transcript(t, "1")
	for _, s := range []string{
		"Permission: Edit a.lua\n┃ - local a = 1\n┃ + local a = 2\n┃ + local b = 3",
		"Permission: Write b.lua\n┃ content:\n┃   line x\n",
		"┃   … 16 more lines",
		"Permission: MultiEdit c.lua\n┃ edit 1:\n┃ - foo\n┃ + bar\n┃ edit 2 (all occurrences):\n┃ - x\n┃ + y",
	} {
		if !strings.Contains(tr, s) {
			t.Errorf("transcript lacks %q:\n%s", s, tr)
		}
	}
}

// The chat's window options stay with the chat's buffers: another buffer
// shown in the transcript window, or a split made from it, gets the user's.
func TestChatUIWindowOptionsLocal(t *testing.T) {
	c := startChatUI(t, "")
	c.Exec(t, `vim.o.number = true vim.o.foldcolumn = "1"`)
	c.open(t)
	var got map[string]any
	c.Eval(t, `local chat = require("claude.chat").get("1")
local tw = vim.fn.win_findbuf(chat.tbuf)[1]
local out = { t_number = vim.wo[tw].number, t_fdm = vim.wo[tw].foldmethod }
vim.api.nvim_set_current_win(tw)
vim.cmd("split")
vim.cmd("enew")
out.split_number, out.split_fdm, out.split_fdc, out.split_winbar = vim.wo.number, vim.wo.foldmethod, vim.wo.foldcolumn, vim.wo.winbar
vim.cmd("close")
vim.api.nvim_set_current_win(tw)
vim.cmd("enew")
out.same_number, out.same_fdm, out.same_winbar = vim.wo.number, vim.wo.foldmethod, vim.wo.winbar
return out`, &got)
	jsonEq(t, got, `{"t_number":false,"t_fdm":"expr","split_number":true,"split_fdm":"manual","split_fdc":"1","split_winbar":"",
"same_number":true,"same_fdm":"manual","same_winbar":""}`)
}

// A permission key answers the prompt under the
// cursor and nothing else. With the cursor elsewhere it answers nothing and
// says which prompt waits and how to reach it (]p).
func TestChatUIPermissionKeyAnswersOnlyThePromptUnderTheCursor(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "user", `{"id":"1","uuid":"u1","text":"clean up"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m1","index":0,"delta":"Let me look.\nFirst a listing,\nthen a removal."}`)
	c.ev(t, "permission", `{"id":"1","request_id":"r1","kind":"bash","tool":"Bash","summary":"Bash: ls","input":{"command":"ls"}}`)
	c.ev(t, "permission", `{"id":"1","request_id":"r2","kind":"bash","tool":"Bash","summary":"Bash: rm -rf build","input":{"command":"rm -rf build"}}`)
	c.focus(t, "1", "t")
	row := func(text string) int {
		t.Helper()
		for i, l := range strings.Split(c.transcript(t, "1"), "\n") {
			if strings.Contains(l, text) {
				return i + 1
			}
		}
		t.Fatalf("no %q in the transcript:\n%s", text, c.transcript(t, "1"))
		return 0
	}
	at := func(line int) {
		t.Helper()
		c.Exec(t, `vim.api.nvim_win_set_cursor(0, { select(1, ...), 0 })`, line)
	}

	// On the user's text: nothing is answered, the way there is named.
	at(row("clean up"))
	c.feed(t, "a")
	if rs := c.reqs(t, "chat_permission"); len(rs) != 0 {
		t.Fatalf("a key away from any prompt answered %v", rs)
	}
	if notes := jsonOf(c.notes(t)); !strings.Contains(notes, "Bash") || !strings.Contains(notes, "]p") {
		t.Errorf("the user is not told which prompt waits and how to reach it: %s", notes)
	}

	// On the newer prompt: that one is answered, not the oldest.
	at(row("rm -rf build"))
	c.feed(t, "a")
	if p := c.lastReq(t, "chat_permission"); p["request_id"] != "r2" {
		t.Fatalf("answered %v, want r2 (the prompt under the cursor)", p)
	}
	c.ev(t, "permission_done", `{"id":"1","request_id":"r2","behavior":"allow","by":"user"}`)

	// ]p goes to the one still waiting; then the key answers it.
	c.Exec(t, `_G.inputs = { "not now" }`)
	at(1)
	c.feed(t, "]p")
	c.feed(t, "d")
	if p := c.lastReq(t, "chat_permission"); p["request_id"] != "r1" || p["behavior"] != "deny" {
		t.Fatalf("after ]p: %v, want r1 denied", p)
	}
}

// An Edit prompt names its file once (in its heading);
// the prompt's header names both send keys; a narrow transcript window
// keeps the chat's name in its header and drops the tail.
func TestChatUIHeadersAndEditPrompt(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.ev(t, "permission", `{"id":"1","request_id":"r1","kind":"edit","tool":"Edit","summary":"Edit main.txt","diff":false,
"input":{"file_path":"/p/main.txt","old_string":"three","new_string":"THREE"}}`)
	tr := c.transcript(t, "1")
	if strings.Count(tr, "main.txt") != 1 || !strings.Contains(tr, "Permission: Edit main.txt") {
		t.Errorf("the edit prompt names its file more than once:\n%s", tr)
	}
	var bars struct {
		Prompt string `json:"prompt"`
		Narrow string `json:"narrow"`
	}
	c.Eval(t, `local chat = require("claude.chat").get("1")
local pw = vim.fn.win_findbuf(chat.pbuf)[1]
local tw = vim.fn.win_findbuf(chat.tbuf)[1]
vim.cmd("vertical resize 24")
vim.api.nvim_win_set_width(tw, 24)
require("claude.chat").refresh_header(chat)
local shown = vim.api.nvim_eval_statusline(vim.wo[tw].winbar, { winid = tw, use_winbar = true, maxwidth = 24 }).str
return { prompt = vim.wo[pw].winbar, narrow = shown }`, &bars)
	if !strings.Contains(bars.Prompt, "<C-s>") || !strings.Contains(bars.Prompt, "<CR>") {
		t.Errorf("prompt header %q names not both send keys", bars.Prompt)
	}
	if !strings.HasPrefix(bars.Narrow, "Claude 1") {
		t.Errorf("narrow header %q lost the chat's name", bars.Narrow)
	}
}

// "@no<Tab>" arriving in one batch (fast typing, a
// paste, a slow link) completes the file, and what follows in the batch
// comes after the completion; a <Tab> elsewhere stays a <Tab>. (It gave
// "@no" and two spaces: the <Tab> was decided before "@no" was in the line.)
func TestChatUICompletionWithBatchedInput(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	c.focus(t, "1", "p")
	c.Exec(t, `vim.fn.writefile({ "x" }, "notes.txt")`)
	c.feed(t, "ilook @no<Tab> and<C-c>")
	c.feed(t, "<Esc>")
	var line string
	c.Eval(t, `return vim.api.nvim_get_current_line()`, &line)
	if line != "look @notes.txt and" {
		t.Errorf("batched @no<Tab>: %q", line)
	}
	c.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, { "" }) vim.bo.expandtab = false`)
	c.feed(t, "ia<Tab>b<Esc>")
	c.Eval(t, `return vim.api.nvim_get_current_line()`, &line)
	if line != "a\tb" {
		t.Errorf("<Tab> outside a completion: %q", line)
	}
}

// R lists what it will change and delete and does
// nothing unless the user says "Rewind"; U undoes the whole rewind, the
// deleted file included. (R used to rewind at once, and u could not bring
// a deleted file back.)
func TestChatUIRewindAsksAndUndoes(t *testing.T) {
	c := startChatUI(t, "")
	dir := c.Dir
	a, created := filepath.Join(dir, "a.txt"), filepath.Join(dir, "new.txt")
	for p, text := range map[string]string{a: "claude a\n", created: "created by claude\n"} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.Exec(t, `local a, n = ...
_G.stub.chat_rewind = function() return { files = {
  { path = a, contents = "before a\n", changed = true },
  { path = n, contents = vim.NIL, changed = true } } } end`, a, created)
	c.open(t)
	c.ev(t, "user", `{"id":"1","uuid":"u1","text":"do it"}`)
	c.focus(t, "1", "t")
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return "<absent>"
		}
		return string(b)
	}
	rewinds := func() []map[string]any { return c.reqs(t, "chat_rewind") }
	// Cancel: only the plan was asked for; nothing changed.
	c.Exec(t, `vim.api.nvim_win_set_cursor(0, { 1, 0 }) _G.selects = { "Cancel" }`)
	c.feed(t, "R")
	if rs := rewinds(); len(rs) != 1 || rs[0]["plan"] != true {
		t.Fatalf("after Cancel: chat_rewind requests %v", rs)
	}
	var prompts []string
	c.Eval(t, `return _G.select_prompts`, &prompts)
	if len(prompts) != 1 || !strings.Contains(prompts[0], "change a.txt") || !strings.Contains(prompts[0], "delete new.txt") {
		t.Errorf("the question %q does not list the change and the deletion", prompts)
	}
	if read(a) != "claude a\n" || read(created) != "created by claude\n" {
		t.Fatalf("Cancel changed files: %q %q", read(a), read(created))
	}
	// Rewind: a.txt back, new.txt gone.
	c.Exec(t, `_G.selects = { "Rewind" }`)
	c.feed(t, "R")
	if rs := rewinds(); len(rs) != 3 || rs[2]["plan"] != nil {
		t.Fatalf("after Rewind: chat_rewind requests %v", rs)
	}
	if read(a) != "before a\n" || read(created) != "<absent>" {
		t.Fatalf("after Rewind: %q %q", read(a), read(created))
	}
	// U: the whole rewind undone, the deleted file written again.
	c.Exec(t, `_G.selects = { "Undo" }`)
	c.feed(t, "U")
	if read(a) != "claude a\n" || read(created) != "created by claude\n" {
		t.Fatalf("after U: %q %q", read(a), read(created))
	}
	// Nothing more to undo.
	c.Exec(t, `_G.notes = {}`)
	c.feed(t, "U")
	if ns := c.notes(t); len(ns) != 1 || !strings.Contains(ns[0].Msg, "no rewind to undo") {
		t.Errorf("second U: %+v", ns)
	}
}

// The to-do window follows the list: shown while something is in
// progress, gone when the list empties (the last background task ended).
func TestChatUITodoWindowFollowsTheList(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	shown := func() int {
		var n int
		c.Eval(t, `local b = require("claude.chat").get("1").dbuf return b and #vim.fn.win_findbuf(b) or 0`, &n)
		return n
	}
	c.ev(t, "todos", `{"id":"1","source":"tasks","todos":[{"content":"background command: build","status":"in_progress","active_form":"background command: build"}]}`)
	if shown() != 1 {
		t.Fatal("the to-do window did not open")
	}
	c.ev(t, "todos", `{"id":"1","source":"tasks","todos":[]}`)
	if n := shown(); n != 0 {
		t.Errorf("the to-do window stays with an empty list (%d windows)", n)
	}
}
