//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The transcript's folds come from a sparse map (b:claude_chat_folds) kept
// in place as the buffer changes: after long thinking, tool blocks and a
// history put above them in slices, every line's fold level is the one the
// renderer meant (chat.levels), every fold closes where it should, the
// history comes whole and in order above the live turn, its prompts are
// found by rewind and fork, and the transcript that passed
// treesitter_max_lines left treesitter for Vim's markdown syntax.
func TestChatUIFoldMapAndLongTranscript(t *testing.T) {
	c := startChatUI(t, `, chat = { treesitter_max_lines = 150 }`)
	c.open(t)
	// Short, the transcript keeps the filetype's highlighting (treesitter
	// from Neovim 0.12's markdown ftplugin).
	var tsAtStart bool
	c.Eval(t, `local h = package.loaded["vim.treesitter.highlighter"]
return vim.fn.has("nvim-0.12") == 0 or (h ~= nil and h.active[require("claude.chat").get("1").tbuf] ~= nil)`, &tsAtStart)
	if !tsAtStart {
		t.Errorf("a short transcript with treesitter_max_lines = 150 lost treesitter")
	}
	lines := func(prefix string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(`\n`)
			}
			fmt.Fprintf(&b, "%s %d", prefix, i)
		}
		return b.String()
	}
	c.ev(t, "user", `{"id":"1","uuid":"u-live","text":"go on","attachments":[]}`)
	c.ev(t, "thinking", `{"id":"1","message_id":"m1","index":0,"delta":"`+lines("think", 100)+`"}`)
	c.ev(t, "thinking", `{"id":"1","message_id":"m1","index":0,"delta":"`+lines(" more", 30)+`"}`)
	for i := 0; i < 8; i++ {
		c.ev(t, "text", `{"id":"1","message_id":"m1","index":1,"delta":"`+lines(fmt.Sprintf("text%d", i), 10)+`\n"}`)
	}
	c.ev(t, "tool_use", `{"id":"1","tool_use_id":"t1","name":"Write","input":{"content":"`+lines("input", 70)+`","file_path":"/x/a"},"summary":"Write a"}`)
	c.ev(t, "tool_result", `{"id":"1","tool_use_id":"t1","is_error":false,"summary":"ok","text":"`+lines("out", 90)+`"}`)
	c.ev(t, "text", `{"id":"1","message_id":"m2","index":0,"delta":"the end"}`)
	c.ev(t, "turn_done", `{"id":"1","is_error":false,"subtype":"success","cost_usd":0.01,"session_cost_usd":0.01,"duration_ms":100}`)

	// A history of 4,000+ lines goes above in slices (the first at once).
	var live int
	c.Eval(t, `local chat = require("claude.chat").get("1")
local live = vim.api.nvim_buf_line_count(chat.tbuf)
local msgs = {}
for i = 1, 40 do
  table.insert(msgs, { role = "user", text = "prompt " .. i, uuid = "hu" .. i })
  local body = {}
  for j = 1, 100 do body[j] = "answer " .. i .. " line " .. j end
  table.insert(msgs, { role = "assistant", text = table.concat(body, "\n"), tools = { "Read x" .. i } })
end
require("claude.chat.render").prepend_history(chat, msgs)
return live`, &live)
	history := 40*(3+1+100+1) - 1 + 2 // prompts with their separator, answers, the marker lines
	c.WaitFor(t, 10*time.Second, fmt.Sprintf(`vim.api.nvim_buf_line_count(require("claude.chat").get("1").tbuf) >= %d`, live+history),
		`return vim.api.nvim_buf_line_count(require("claude.chat").get("1").tbuf)`, "the whole history")

	tr := c.transcript(t, "1")
	if !strings.HasPrefix(tr, "## You\nprompt 1\n## Claude\nanswer 1 line 1\n") {
		t.Errorf("the transcript does not start with the history:\n%.200s", tr)
	}
	if !strings.Contains(tr, "answer 40 line 100\n● Read x40\n\n─ earlier messages above ─\n## You\ngo on\n## Claude\n▸ Thinking\nthink 0\n") {
		t.Errorf("the history does not end right above the live turn")
	}
	for i := 1; i < 40; i++ {
		if !strings.Contains(tr, fmt.Sprintf("● Read x%d\n\n## You\nprompt %d\n", i, i+1)) {
			t.Fatalf("history message %d is not followed by %d", i, i+1)
		}
	}
	// Every line's fold level is the renderer's, every fold is closed
	// from its summary to the line before the next level-0 line or fold:
	// as Neovim kept them through the changes, and computed afresh from
	// the map (as for a new window on the transcript).
	for _, afresh := range []bool{false, true} {
		var bad []string
		c.Eval(t, `local chat = require("claude.chat").get("1")
local render = require("claude.chat.render")
local w = vim.fn.win_findbuf(chat.tbuf)[1]
local afresh = ...
return vim.api.nvim_win_call(w, function()
  if afresh then vim.cmd("let &l:foldexpr = &l:foldexpr") end
  local out = {}
  local n = vim.api.nvim_buf_line_count(0)
  if #chat.levels ~= n then table.insert(out, "levels " .. #chat.levels .. " for " .. n .. " lines") end
  for l = 1, n do
    local lv = render.foldexpr(l)
    local want = lv == "0" and 0 or 1
    if vim.fn.foldlevel(l) ~= want then
      table.insert(out, "line " .. l .. ": foldlevel " .. vim.fn.foldlevel(l) .. ", level " .. lv)
    end
    if lv == ">1" then
      local e = l
      while e < n and render.foldexpr(e + 1) == "1" do e = e + 1 end
      if vim.fn.foldclosed(l) ~= l or vim.fn.foldclosedend(l) ~= e then
        table.insert(out, "fold at " .. l .. ": closed " .. vim.fn.foldclosed(l) .. "-" .. vim.fn.foldclosedend(l) .. ", want " .. l .. "-" .. e)
      end
    end
    if #out > 10 then break end
  end
  return out
end)`, &bad, afresh)
		if len(bad) > 0 {
			t.Errorf("folds (afresh %v):\n%s", afresh, strings.Join(bad, "\n"))
		}
	}
	// The history's prompts are found at their rows (rewind, fork).
	var rows map[string]string
	c.Eval(t, `local chat = require("claude.chat").get("1")
local render = require("claude.chat.render")
local out = {}
for _, u in ipairs(chat.users) do
  local r = render.mark_row(chat, u.mark)
  out[u.uuid] = vim.api.nvim_buf_get_lines(chat.tbuf, r, r + 2, false)[1] .. "|" .. vim.api.nvim_buf_get_lines(chat.tbuf, r + 1, r + 2, false)[1]
end
return out`, &rows)
	if rows["hu1"] != "## You|prompt 1" || rows["hu40"] != "## You|prompt 40" || rows["u-live"] != "## You|go on" || len(rows) != 41 {
		t.Errorf("user marks: %d, hu1 %q, hu40 %q, u-live %q", len(rows), rows["hu1"], rows["hu40"], rows["u-live"])
	}
	// Past treesitter_max_lines: Vim's markdown syntax, not treesitter.
	var hl struct {
		TS     bool   `json:"ts"`
		Syntax string `json:"syntax"`
	}
	c.Eval(t, `local chat = require("claude.chat").get("1")
local h = package.loaded["vim.treesitter.highlighter"]
return { ts = h ~= nil and h.active[chat.tbuf] ~= nil, syntax = vim.bo[chat.tbuf].syntax }`, &hl)
	if hl.TS || hl.Syntax != "markdown" {
		t.Errorf("long transcript highlighting: treesitter %v, syntax %q", hl.TS, hl.Syntax)
	}
}

// By default the transcript never uses treesitter: Vim's markdown syntax
// from the start.
func TestChatUITranscriptSyntaxByDefault(t *testing.T) {
	c := startChatUI(t, "")
	c.open(t)
	var hl struct {
		TS     bool   `json:"ts"`
		Syntax string `json:"syntax"`
		FT     string `json:"ft"`
	}
	c.Eval(t, `local chat = require("claude.chat").get("1")
local h = package.loaded["vim.treesitter.highlighter"]
return { ts = h ~= nil and h.active[chat.tbuf] ~= nil, syntax = vim.bo[chat.tbuf].syntax, ft = vim.bo[chat.tbuf].filetype }`, &hl)
	if hl.TS || hl.Syntax != "markdown" || hl.FT != "markdown" {
		t.Errorf("transcript highlighting: treesitter %v, syntax %q, filetype %q", hl.TS, hl.Syntax, hl.FT)
	}
}
