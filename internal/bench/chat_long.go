//go:build linux

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/bench/chatwire"
)

// resumeHookLua wraps, in the Neovim being measured, the steps of a
// resume that the bench reports apart: the chat_history request (sent
// asynchronously: the host reads the transcript off Neovim's main loop),
// the rendering of the history's end when the answer comes, and the end of
// the background rendering of the rest. Times are µs on the bench clock,
// kept in B.resume.
const resumeHookLua = `
local B = _G.__nvim_claude_bench
local server = require("claude.server")
local render = require("claude.chat.render")
if not B.resume_wrapped then
  B.resume_wrapped = true
  local request_async, prepend = server.request_async, render.prepend_history
  server.request_async = function(m, p, cb)
    if m ~= "chat_history" then return request_async(m, p, cb) end
    local t = B.us()
    return request_async(m, p, function(...)
      local t1 = B.us()
      cb(...)
      B.resume.history = { t, t1, B.us() }
    end)
  end
  render.prepend_history = function(chat, msgs, on_done)
    return prepend(chat, msgs, function()
      B.resume.done = B.us()
      if on_done then on_done() end
    end)
  end
end
B.resume = {}
`

// resumeRun is one resume of the long session.
type resumeRun struct {
	usable    float64 // ms: open → the last message and a typed key on screen
	lastShown float64 // ms: open → the last message on screen
	keyShown  float64 // ms: open → the typed key on screen
	history   float64 // ms: open → chat_history's answer in Lua (decoded)
	render    float64 // ms rendering the history's end (the answer's callback)
	complete  float64 // ms: open → every history line in the transcript
	lines     int     // transcript lines then
}

// resume opens a chat on session ls and times it.
func (ce *chatEditor) resume(ctx context.Context, ls longSession) (resumeRun, string, error) {
	var run resumeRun
	if err := ce.exec(ctx, resumeHookLua, nil); err != nil {
		return run, "", err
	}
	marker := chatwire.Marker(ls.last)
	lastShown := ce.scr.wait(func(rows []string) bool {
		for _, r := range rows {
			if strings.Contains(r, marker) {
				return true
			}
		}
		return false
	})
	keyShown := ce.scr.wait(func(rows []string) bool {
		for _, r := range rows {
			if strings.Contains(r, "QZ") {
				return true
			}
		}
		return false
	})
	t0 := chatwire.Mono()
	var id string
	if err := ce.eval(ctx, `local c = require("claude.chat").open({ new = true, resume = ... })
return c and c.id`, &id, ls.id); err != nil {
		return run, "", fmt.Errorf("resume: %w", err)
	}
	// The user types at once: Insert mode and two letters in the prompt
	// (which open focused).
	if err := ce.input("iQZ"); err != nil {
		return run, id, err
	}
	var tLast, tKey int64
	limit := time.After(2 * time.Minute)
	for tLast == 0 || tKey == 0 {
		select {
		case tLast = <-lastShown:
		case tKey = <-keyShown:
		case <-limit:
			return run, id, fmt.Errorf("resume: not usable after 2 minutes (last message shown: %v, key shown: %v)", tLast != 0, tKey != 0)
		case <-ctx.Done():
			return run, id, ctx.Err()
		}
	}
	run.lastShown, run.keyShown = float64(tLast-t0)/1000, float64(tKey-t0)/1000
	run.usable = max(run.lastShown, run.keyShown)
	// The rest of the history fills in meanwhile.
	var st struct {
		History []int64 `json:"history"`
		Done    int64   `json:"done"`
		Lines   int     `json:"lines"`
	}
	deadline := time.Now().Add(2 * time.Minute)
	for st.Done == 0 {
		if err := ce.eval(ctx, `local B = _G.__nvim_claude_bench
local c = require("claude.chat").get(...)
return { history = B.resume.history, done = B.resume.done, lines = vim.api.nvim_buf_line_count(c.tbuf) }`, &st, id); err != nil {
			return run, id, err
		}
		if time.Now().After(deadline) {
			return run, id, fmt.Errorf("resume: the history was not all in after 2 minutes (%d lines)", st.Lines)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(st.History) == 3 {
		run.history = float64(st.History[1]-t0) / 1000
		run.render = float64(st.History[2]-st.History[1]) / 1000
	}
	run.complete = float64(st.Done-t0) / 1000
	run.lines = st.Lines
	return run, id, nil
}

// typeWhileStreaming types keys into chat id's prompt (in Insert mode)
// while an answer of ask streams into its transcript, one key every
// interval, and returns each key's nvim_input → screen time (ms).
func (ce *chatEditor) typeWhileStreaming(ctx context.Context, id string, ask chatwire.Ask, keys int, interval time.Duration) (sample, streamRun, error) {
	var lat sample
	var pos struct {
		Row, Col, Height, Width int
	}
	if err := ce.eval(ctx, `local c = require("claude.chat").get(...)
local w = vim.fn.win_findbuf(c.pbuf)[1]
local p = vim.api.nvim_win_get_position(w)
return { row = p[1], col = p[2], height = vim.api.nvim_win_get_height(w), width = vim.api.nvim_win_get_width(w) }`, &pos, id); err != nil {
		return nil, streamRun{}, err
	}
	// The prompt's text rows: below its winbar.
	prompt := func(rows []string) string {
		return region(rows, pos.Row+1, pos.Col, pos.Height, pos.Width)
	}
	const letters = "QZXJKVBYPGFHDLTRWM"
	type result struct {
		run streamRun
		err error
	}
	done := make(chan result, 1)
	// The answer streams on its own goroutine (owned here: this function
	// waits for it before returning).
	go func() {
		r, err := ce.stream(ctx, id, ask)
		done <- result{r, err}
	}()
	// Let the stream start.
	time.Sleep(300 * time.Millisecond)
	typed := ""
	var first error
	for k := 0; k < keys && first == nil; k++ {
		if len(typed) == 48 {
			// A full line: empty the prompt and wait until the screen shows it.
			old := typed[:4]
			cleared := ce.scr.wait(func(rows []string) bool { return !strings.Contains(prompt(rows), old) })
			if err := ce.exec(ctx, `local c = require("claude.chat").get(...)
vim.api.nvim_buf_set_lines(c.pbuf, 0, -1, false, { "" })`, nil, id); err != nil {
				first = err
				break
			}
			select {
			case <-cleared:
			case <-time.After(10 * time.Second):
				first = fmt.Errorf("the prompt did not clear on screen")
			}
			typed = ""
			continue
		}
		c := string(letters[(k+len(typed)/len(letters))%len(letters)])
		want := typed + c
		shown := ce.scr.wait(func(rows []string) bool { return strings.Contains(prompt(rows), want) })
		t0 := chatwire.Mono()
		if err := ce.input(c); err != nil {
			first = err
			break
		}
		select {
		case at := <-shown:
			lat = append(lat, float64(at-t0)/1000)
		case <-time.After(10 * time.Second):
			first = fmt.Errorf("key %q not on screen after 10 s", c)
		case <-ctx.Done():
			first = ctx.Err()
		}
		typed = want
		time.Sleep(interval)
	}
	res := <-done
	if first != nil {
		return lat, res.run, first
	}
	return lat, res.run, res.err
}

// runChatLong is scenario 22: resuming a session of 2,000 messages (100k
// transcript lines), and typing in the prompt while a long answer streams
// into that transcript.
func runChatLong(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	turns, answerLines, runs, keys := 1000, 94, 5, 250
	if r.quick {
		runs, keys = 2, 60
	}
	ce, err := r.startChatEditor(ctx, "right", "")
	if err != nil {
		return sec, err
	}
	defer ce.close()
	ls, err := writeLongSession(r.root, ce.cfgDir, ce.dir, turns, answerLines, 999999)
	if err != nil {
		return sec, fmt.Errorf("long session: %w", err)
	}
	r.logf("   session: %d messages, %d transcript lines, %s", ls.messages, ls.lines, fmtMB(float64(ls.bytes)))
	var rr []resumeRun
	var id string
	for i := 0; i < runs; i++ {
		if id != "" {
			if err := ce.closeChat(ctx, id); err != nil {
				return sec, err
			}
			if err := ce.exec(ctx, `vim.cmd("stopinsert")`, nil); err != nil {
				return sec, err
			}
		}
		var run resumeRun
		run, id, err = ce.resume(ctx, ls)
		if err != nil {
			return sec, err
		}
		ce.noteCLIs()
		rr = append(rr, run)
		r.logf("   resume %d: usable after %s (chat_history answered %s, its end rendered in %s, all in at %s), %d lines", i+1,
			fmtMS(run.usable), fmtMS(run.history), fmtMS(run.render), fmtMS(run.complete), run.lines)
	}
	// Typing in the last resumed chat while a long answer streams in.
	if err := ce.waitState(ctx, id, "idle", 20*time.Second); err != nil {
		return sec, err
	}
	ask := ce.nextAsk(int(float64(keys)*0.1*200)+600, 200)
	lat, sr, err := ce.typeWhileStreaming(ctx, id, ask, keys, 100*time.Millisecond)
	if err != nil {
		return sec, fmt.Errorf("typing: %w", err)
	}
	ks := lat.summarize()
	r.logf("   typing: %d keys, p50 %s p99 %s max %s; the answer: stream p99 %s, intact %v", ks.N, fmtMS(ks.Median), fmtMS(ks.P99),
		fmtMS(ks.Max), fmtMS(sr.lat.summarize().P99), sr.intact)

	var usable, hist, complete sample
	for _, x := range rr {
		usable = append(usable, x.usable)
		hist = append(hist, x.history)
		complete = append(complete, x.complete)
	}
	sec.printf("**Session.** %d messages (%d prompts of 3 lines, %d answers of %d lines of markdown: paragraphs, a bullet list, a "+
		"fenced Lua block each) — %d transcript lines once rendered — in a %s transcript file the host reads where the CLI keeps "+
		"it (`$CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl`). The file is generated from the transcript the real CLI 2.1.331 kept "+
		"of the recorded session (`internal/bench/standin/testdata/session.jsonl`): the entries of its first turn as they are, "+
		"then the entries the CLI wrote for its second turn (queue operations, the prompt, the file-history snapshot, the API "+
		"request, the answer, last-prompt) once per turn, uuids chained, text replaced.\n\n",
		ls.messages, ls.messages/2, ls.messages/2, answerLines, ls.lines, fmtMB(float64(ls.bytes)))
	sec.printf("**Resume → usable.** The bench calls `require(\"claude.chat\").open({ new = true, resume = <id> })` (what " +
		"`:ClaudeChatSessions` → resume does) and at once types `iQZ` (`nvim_input`). The panel is **usable** when the UI's " +
		"screen shows both the last message's last word and the `QZ` typed into the prompt: the user can read where the " +
		"conversation stopped and type the next prompt. Timed from just before the call to the first flush that shows each. " +
		"Inside Neovim, wrappers the bench installs time the chat_history request (sent asynchronously: the host reads the " +
		"transcript while the chat's CLI starts and Neovim goes on) until its answer is decoded, the rendering of the " +
		"history's end, and the moment the background rendering of the rest (in slices, between which keys and redraws go) " +
		"has put every line in. The stand-in CLI starts in a few ms; the real one takes about a second, which the history no " +
		"longer waits for. Each run resumes in a new chat (the previous one closed).\n\n")
	sec.printf("| run | usable | last message shown | key shown | chat_history answered | end rendered in | all lines in | transcript lines |\n|---|---|---|---|---|---|---|---|\n")
	for i, x := range rr {
		sec.printf("| %d | %s | %s | %s | %s | %s | %s | %d |\n", i+1, fmtMS(x.usable), fmtMS(x.lastShown), fmtMS(x.keyShown),
			fmtMS(x.history), fmtMS(x.render), fmtMS(x.complete), x.lines)
	}
	sec.printf("\n**Typing while an answer streams.** In the last resumed chat (%d lines), an answer of %d deltas streams at %g/s "+
		"while the bench types %d letters into the prompt (Insert mode), one `nvim_input` every %v, each timed from just before "+
		"the call to the first flush whose prompt rows show the text typed so far (every 48 letters the prompt is emptied, "+
		"untimed). p50 %s, p90 %s, p99 %s, max %s over %d keys. The answer meanwhile: write → screen p50 %s, p99 %s; "+
		"transcript %s.\n\n",
		ls.lines, ask.N, ask.Rate, keys, 100*time.Millisecond, fmtMS(ks.Median), fmtMS(ks.P90), fmtMS(ks.P99), fmtMS(ks.Max), ks.N,
		fmtMS(sr.lat.summarize().Median), fmtMS(sr.lat.summarize().P99), map[bool]string{true: "intact", false: "**not intact: " + sr.problem + "**"}[sr.intact])
	sec.printf("**Reading it.** The resume's time to the last message is mostly chat_history: the host decoding the transcript's "+
		"JSON lines (only those that can be messages) and Neovim decoding the answer; the last %d rows are then written at once "+
		"(the \"end rendered in\" column) and the rest in slices of 5,000 rows on timers, keys and redraws between them. "+
		"Typing stays fast while the answer streams into the 100k-line transcript because each streamed write costs the same "+
		"as in a short one: the fold map is updated in place and keeps a level every 64 lines (Neovim's fold update walks up "+
		"to the nearest), and Vim's markdown syntax draws from the lines on screen where treesitter would re-parse the buffer "+
		"(the transcript leaves treesitter past `chat.treesitter_max_lines`, 0 by default).\n\n", 1500)
	sec.add(row{order: 22, num: "22", scenario: fmt.Sprintf("chat: resume a session of %s messages (%dk transcript lines)", thousands(float64(ls.messages)), ls.lines/1000),
		figure: "open → last message and a typed key on screen",
		result: fmtMS(usable.median()) + fmt.Sprintf(" (chat_history answered at %s; all %dk lines in at %s)", fmtMS(hist.median()), ls.lines/1000, fmtMS(complete.median())),
		spread: fmt.Sprintf("%s (min–max, %d runs)", fmtRange(usable.min(), usable.max()), len(usable)),
		target: "≤ 300 ms", verdict: verdict(usable.median() <= 300), ref: "—"})
	sec.add(row{order: 22.1, num: "22", scenario: fmt.Sprintf("chat: typing in the prompt while an answer streams (%g deltas/s) into that transcript", ask.Rate),
		figure: "key → screen", result: fmt.Sprintf("p99 %s (p50 %s)", fmtMS(ks.P99), fmtMS(ks.Median)),
		spread: fmt.Sprintf("max %s, %d keys", fmtMS(ks.Max), ks.N), target: "p99 ≤ 16 ms", verdict: verdict(ks.P99 <= 16), ref: "—"})
	if usable.median() > 300 {
		sec.printf("**Resume missed 300 ms.** ")
		r.profileMiss(ctx, sec, "Neovim and the host during a resume", ce.pids(), func() error {
			if err := ce.closeChat(ctx, id); err != nil {
				return err
			}
			if err := ce.exec(ctx, `vim.cmd("stopinsert")`, nil); err != nil {
				return err
			}
			_, id, err = ce.resume(ctx, ls)
			return err
		})
	}
	if ks.P99 > 16 {
		sec.printf("**Typing missed 16 ms.** ")
		r.profileMiss(ctx, sec, "Neovim and the host while typing during a stream", ce.pids(), func() error {
			if err := ce.exec(ctx, `local c = require("claude.chat").get(...)
vim.api.nvim_buf_set_lines(c.pbuf, 0, -1, false, { "" })
vim.cmd("startinsert")`, nil, id); err != nil {
				return err
			}
			_, _, err := ce.typeWhileStreaming(ctx, id, ce.nextAsk(int(float64(keys)*0.1*200)+600, 200), keys, 100*time.Millisecond)
			return err
		})
	}
	return sec, nil
}
