//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/neovim/go-client/nvim"
	"github.com/nvim-claude/nvim-claude/internal/bench/chatwire"
)

// The chat scenarios drive the chat panel (:ClaudeChat) of a
// real Neovim 0.12 that runs this checkout's plugin and host, with the
// stand-in CLI (internal/bench/standin) as the chat's CLI (chat.cmd): it
// replays the real CLI's stream-json turn with numbered marker words at a
// set rate and logs when it wrote each delta. The bench is the Neovim's UI
// (screen.go): a marker is "on screen" at the first flush whose grid holds
// it.

// Size of the UI the bench attaches: the chat's transcript window is 40 %
// of it (80 columns), the layout's default.
const (
	chatCols = 200
	chatRows = 50
)

// chatHookLua adds to the bench hook (hookLua): a "chat_turn_done" event
// when the chat says a turn ended.
const chatHookLua = `
local B = _G.__nvim_claude_bench
vim.api.nvim_create_autocmd("User", {
  pattern = "ClaudeChatTurnDone",
  desc = "nvim-claude bench: a chat turn ended",
  callback = function() B.send({ ev = "chat_turn_done", t = B.us() }) end,
})
`

// standinBin builds the stand-in CLI once per run.
func (r *runner) standinBin(ctx context.Context) (string, error) {
	bin := filepath.Join(r.tmp, "standin")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := r.goBuild(ctx, bin, "./internal/bench/standin"); err != nil {
		return "", err
	}
	return bin, nil
}

// chatEditor is a Neovim with the plugin, the bench's UI and the stand-in
// as the chat's CLI.
type chatEditor struct {
	*editor
	scr     *screen
	logPath string
	seq     int // the next marker number
	cli     map[int]bool
}

// startChatEditor starts a Neovim for the chat scenarios; layout is the
// chat's layout option, extra more fields of setup()'s chat table (Lua).
func (r *runner) startChatEditor(ctx context.Context, layout, extra string) (*chatEditor, error) {
	bin, err := r.standinBin(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := r.project("chat", map[string]string{"README.md": "# a project\n"})
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, ".standin.log")
	setup := fmt.Sprintf(`chat = { cmd = %q, layout = %q, env = { %s = %q }, %s }`, bin, layout, chatwire.LogEnv, logPath, extra)
	e, err := r.startEditor(ctx, editorOpts{plugin: true, setup: setup, uiCols: chatCols, uiRows: chatRows, dir: dir})
	if err != nil {
		return nil, err
	}
	ce := &chatEditor{editor: e, scr: newScreen(chatCols, chatRows), logPath: logPath, cli: map[int]bool{}}
	if err := ce.attachScreen(ctx); err != nil {
		ce.close()
		return nil, err
	}
	if err := e.exec(ctx, chatHookLua, nil); err != nil {
		ce.close()
		return nil, err
	}
	return ce, nil
}

// attachScreen makes the bench's screen the UI's: the editor's UI was
// attached at start (see startEditor); a full redraw fills the screen.
func (ce *chatEditor) attachScreen(ctx context.Context) error {
	if err := ce.RegisterHandler("redraw", ce.scr.redraw); err != nil {
		return err
	}
	return ce.exec(ctx, `vim.cmd("redraw!")`, nil)
}

// close ends Neovim, the host and every stand-in the host started.
func (ce *chatEditor) close() {
	ce.noteCLIs()
	ce.editor.close()
	for pid := range ce.cli {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// noteCLIs remembers the stand-ins the host runs now (close kills any that
// outlive it).
func (ce *chatEditor) noteCLIs() {
	if host := ce.hostPID(); host > 0 {
		for _, p := range childPIDs(host, "standin") {
			ce.cli[p] = true
		}
	}
}

// openChat opens a new chat (opts: more fields of require("claude.chat").open's
// argument, Lua) and waits until its CLI runs; it returns the chat's id.
func (ce *chatEditor) openChat(ctx context.Context, opts string) (string, error) {
	var id string
	if err := ce.eval(ctx, `local c = require("claude.chat").open({ new = true, `+opts+` })
return c and c.id`, &id); err != nil {
		return "", fmt.Errorf("open a chat: %w", err)
	}
	if id == "" {
		return "", errors.New("open a chat: no chat")
	}
	if err := ce.waitState(ctx, id, "idle", 20*time.Second); err != nil {
		return "", err
	}
	ce.noteCLIs()
	return id, nil
}

// waitState polls until the chat's state is want.
func (ce *chatEditor) waitState(ctx context.Context, id, want string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var st string
		if err := ce.eval(ctx, `local c = require("claude.chat").get(...) return c and c.state`, &st, id); err != nil {
			return err
		}
		if st == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chat %s is %q after %v, not %q", id, st, limit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pids are the processes a profile of the chat samples: Neovim and the
// host.
func (ce *chatEditor) pids() []int { return []int{ce.pid, ce.hostPID()} }

// profileMiss repeats work under `perf record` of pids after a missed
// target and adds the hottest symbols to sec.
func (r *runner) profileMiss(ctx context.Context, sec *section, what string, pids []int, work func() error) {
	if why, ok := r.perfUsable(); !ok {
		sec.printf("No profile: %s.\n\n", why)
		return
	}
	p, err := r.startProfile(what, pids...)
	if err != nil {
		sec.printf("No profile: %v.\n\n", err)
		return
	}
	werr := work()
	sec.printf("%s", p.stop(ctx))
	if werr != nil {
		sec.printf("(The profiled repeat failed: %v.)\n\n", werr)
	}
}

// closeChat ends a chat (its CLI stops, its buffers go).
func (ce *chatEditor) closeChat(ctx context.Context, id string) error {
	return ce.exec(ctx, `require("claude.chat").close(require("claude.chat").get(...))`, nil, id)
}

// nextAsk is an answer of n deltas at rate whose markers are new in this
// editor.
func (ce *chatEditor) nextAsk(n int, rate float64) chatwire.Ask {
	a := chatwire.Ask{N: n, Rate: rate, Seq: ce.seq}
	ce.seq += n + 1000
	return a
}

// send sends a prompt to the chat as the prompt buffer's send key does.
func (ce *chatEditor) send(ctx context.Context, id, text string) error {
	var ok bool
	if err := ce.eval(ctx, `local chat = require("claude.chat")
return require("claude.chat.prompt").send(chat.get(select(1, ...)), select(2, ...))`, &ok, id, text); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("chat %s did not send the prompt", id)
	}
	return nil
}

// streamRun is one streamed answer as the bench saw it.
type streamRun struct {
	ask      chatwire.Ask
	lat      sample // ms from the stand-in writing a delta to its marker on screen
	scrolled int    // markers scrolled past within one flush (timed by the next marker shown)
	missing  int    // markers never seen on screen, nor any after them
	intact   bool   // the transcript holds the answer exactly
	problem  string // what differs, if not intact
	nvimCPU  time.Duration
	hostCPU  time.Duration
	wall     time.Duration
	achieved float64 // deltas per second the stand-in reached
}

// stream asks the chat for an answer and measures it: every delta's
// write → screen time, Neovim's and the host's CPU time over the turn,
// and whether the transcript holds the answer exactly.
func (ce *chatEditor) stream(ctx context.Context, id string, ask chatwire.Ask) (streamRun, error) {
	run := streamRun{ask: ask}
	last := ask.Seq + ask.N - 1
	lastSeen := ce.scr.wait(func(rows []string) bool {
		found := false
		for _, r := range rows {
			chatwire.Markers(r, func(n int) { found = found || n == last })
		}
		return found
	})
	drainEvents(ce.editor)
	host := ce.hostPID()
	n0, err := cpuClock(ce.pid)
	if err != nil {
		return run, err
	}
	h0, _ := cpuClock(host)
	start := time.Now()
	if err := ce.send(ctx, id, ask.Prompt()); err != nil {
		return run, err
	}
	limit := time.Duration(float64(ask.N)/ask.Rate*float64(time.Second)) + 30*time.Second
	if _, err := ce.waitEvent(ctx, "chat_turn_done", limit); err != nil {
		return run, fmt.Errorf("%v answer: %w", ask, err)
	}
	run.wall = time.Since(start)
	n1, _ := cpuClock(ce.pid)
	h1, _ := cpuClock(host)
	run.nvimCPU, run.hostCPU = n1-n0, h1-h0
	// The last marker is drawn before the turn's end line, or soon after.
	select {
	case <-lastSeen:
	case <-time.After(2 * time.Second):
	}
	log, err := chatwire.FindLog(ce.logPath, ask.Seq)
	if err != nil {
		return run, err
	}
	if len(log.Written) != ask.N {
		return run, fmt.Errorf("the stand-in wrote %d deltas, not %d", len(log.Written), ask.N)
	}
	if span := log.Written[ask.N-1] - log.Written[0]; span > 0 {
		run.achieved = float64(ask.N-1) / (float64(span) / 1e6)
	}
	run.lat, run.scrolled, run.missing = screenLatencies(ce.scr, ask.Seq, log.Written)
	run.intact, run.problem, err = ce.checkAnswer(ctx, id, ask)
	return run, err
}

// screenLatencies are the write → screen times (ms) of the markers seq,
// seq+1, … written at the times written. A marker that scrolled past
// between two flushes (more text came at once than the window shows) never
// was on screen: its text had reached the screen when a later marker was
// first shown, and that time counts (scrolled says how many); markers
// after which nothing was shown are missing.
func screenLatencies(scr *screen, seq int, written []int64) (lat sample, scrolled, missing int) {
	lat = make(sample, 0, len(written))
	next := int64(0) // the earliest time a later marker was seen
	times := make([]int64, len(written))
	for i := len(written) - 1; i >= 0; i-- {
		at := scr.seenAt(seq + i)
		switch {
		case at != 0:
			times[i] = at
			if next == 0 || at < next {
				next = at
			}
		case next != 0:
			times[i] = next
			scrolled++
		default:
			missing++
		}
	}
	for i, w := range written {
		if times[i] != 0 {
			lat = append(lat, float64(times[i]-w)/1000)
		}
	}
	return lat, scrolled, missing
}

// checkAnswer compares the transcript's last answer with the text the
// stand-in sent: every delta, once, in order.
func (ce *chatEditor) checkAnswer(ctx context.Context, id string, ask chatwire.Ask) (bool, string, error) {
	var lines []string
	if err := ce.eval(ctx, `local c = require("claude.chat").get(...)
return vim.api.nvim_buf_get_lines(c.tbuf, 0, -1, false)`, &lines, id); err != nil {
		return false, "", err
	}
	head := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] == "## Claude" {
			head = i
			break
		}
	}
	end := len(lines)
	for i := len(lines) - 1; i > head; i-- {
		if strings.HasPrefix(lines[i], "─ done") {
			end = i
			break
		}
	}
	if head < 0 || head+1 > end {
		return false, "the transcript has no answer block", nil
	}
	got := strings.Join(lines[head+1:end], "\n")
	want := ask.Text()
	if got == want {
		return true, "", nil
	}
	// Where it goes wrong, as marker numbers: lost, repeated or out of
	// order.
	var nums []int
	chatwire.Markers(got, func(n int) { nums = append(nums, n) })
	for i, n := range nums {
		if n != ask.Seq+i {
			return false, fmt.Sprintf("marker %d is w%d, want w%d (%d markers, want %d)", i, n, ask.Seq+i, len(nums), ask.N), nil
		}
	}
	return false, fmt.Sprintf("%d markers in order (want %d) but the text differs", len(nums), ask.N), nil
}

// drainEvents drops the bench events waiting.
func drainEvents(e *editor) {
	for {
		select {
		case <-e.events:
		default:
			return
		}
	}
}

// floorEditor is a Neovim without the plugin, with the same UI, showing a
// markdown buffer in an 80-column window on the right (the transcript's
// place), which the bench appends to with nvim_buf_set_text.
type floorEditor struct {
	*editor
	scr      *screen
	buf      nvim.Buffer
	win      nvim.Window
	row, col int // where the next text goes (0-based; col in bytes)
	seq      int
}

// floorLua makes the floor's window and buffer: the options the chat
// gives its transcript window that change drawing (wrap, linebreak, no
// number or sign column) and the markdown filetype (treesitter
// highlighting in 0.12), then returns the buffer and window.
const floorLua = `
vim.cmd("botright vsplit")
local win = vim.api.nvim_get_current_win()
vim.api.nvim_win_set_width(win, 80)
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_win_set_buf(win, buf)
vim.bo[buf].filetype = "markdown"
for k, v in pairs({ wrap = true, linebreak = true, number = false, relativenumber = false, signcolumn = "no", list = false, spell = false }) do
  vim.wo[win][k] = v
end
vim.cmd("wincmd p")
return { buf, win }
`

// startFloorEditor starts the floor Neovim; with syntax, its buffer is
// highlighted with Vim's markdown syntax instead of treesitter.
func (r *runner) startFloorEditor(ctx context.Context, syntax bool) (*floorEditor, error) {
	dir, err := r.project("chat-floor", nil)
	if err != nil {
		return nil, err
	}
	e, err := r.startEditor(ctx, editorOpts{uiCols: chatCols, uiRows: chatRows, dir: dir})
	if err != nil {
		return nil, err
	}
	fe := &floorEditor{editor: e, scr: newScreen(chatCols, chatRows)}
	if err := e.RegisterHandler("redraw", fe.scr.redraw); err != nil {
		e.close()
		return nil, err
	}
	var ids []int
	if err := e.exec(ctx, floorLua, &ids); err != nil || len(ids) != 2 {
		e.close()
		return nil, fmt.Errorf("floor window: %v", err)
	}
	fe.buf, fe.win = nvim.Buffer(ids[0]), nvim.Window(ids[1])
	if syntax {
		// stop() gives the buffer back to 'syntax' (markdown)
		var st string
		if err := e.exec(ctx, `local b = ... pcall(vim.treesitter.stop, b) return vim.bo[b].syntax`, &st, ids[0]); err != nil || st != "markdown" {
			e.close()
			return nil, fmt.Errorf("floor syntax: %q, %v", st, err)
		}
	}
	if err := e.exec(ctx, `vim.cmd("redraw!")`, nil); err != nil {
		e.close()
		return nil, err
	}
	return fe, nil
}

// reset empties the floor's buffer.
func (fe *floorEditor) reset(ctx context.Context) error {
	fe.row, fe.col = 0, 0
	return fe.exec(ctx, `vim.api.nvim_buf_set_lines(..., 0, -1, false, {})`, nil, int(fe.buf))
}

// stream appends ask's tokens to the floor's buffer, arriving at ask.Rate,
// as chatpanel's outbox writes the chat's: a write as soon as Neovim
// answered the previous one, carrying every token that arrived meanwhile
// (one token a write while Neovim keeps up). Each write is one
// nvim_call_atomic (nvim_buf_set_text at the end, nvim_win_set_cursor to
// the last line so that the window follows, as the transcript's does). A
// token's latency runs from its arrival, as a delta's runs from the
// stand-in's write: where Neovim falls behind the rate (treesitter's
// re-parse), both sides write less often with more, instead of the floor
// queueing calls that arrive seconds late. Measured as chatEditor.stream.
func (fe *floorEditor) stream(ctx context.Context, ask chatwire.Ask) (streamRun, error) {
	run := streamRun{ask: ask, intact: true}
	n0, err := cpuClock(fe.pid)
	if err != nil {
		return run, err
	}
	written := make([]int64, ask.N)
	interval := time.Duration(float64(time.Second) / ask.Rate)
	start := time.Now()
	// The tokens arrive on schedule (arrived counts them), whatever the
	// writes do.
	var mu sync.Mutex
	arrived := 0
	wake := make(chan struct{}, 1)
	actx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // ends with the ask or stop
		for i := 0; i < ask.N; i++ {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-actx.Done():
					t.Stop()
					return
				}
			}
			mu.Lock()
			written[i] = chatwire.Mono()
			arrived = i + 1
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	var text strings.Builder
	for next := 0; next < ask.N; {
		mu.Lock()
		upto := arrived
		mu.Unlock()
		if upto == next {
			select {
			case <-wake:
			case <-ctx.Done():
				return run, ctx.Err()
			}
			continue
		}
		var chunk strings.Builder
		for i := next; i < upto; i++ {
			chunk.WriteString(ask.Token(i))
		}
		next = upto
		text.WriteString(chunk.String())
		parts := strings.Split(chunk.String(), "\n")
		lines := make([][]byte, len(parts))
		for j, p := range parts {
			lines[j] = []byte(p)
		}
		row, col := fe.row, fe.col
		if len(parts) == 1 {
			fe.col += len(parts[0])
		} else {
			fe.row += len(parts) - 1
			fe.col = len(parts[len(parts)-1])
		}
		b := fe.NewBatch()
		b.SetBufferText(fe.buf, row, col, row, col, lines)
		b.SetWindowCursor(fe.win, [2]int{fe.row + 1, 0})
		if err := b.Execute(); err != nil {
			return run, fmt.Errorf("floor set_text: %w", err)
		}
	}
	if err := fe.exec(ctx, "return 1", nil); err != nil {
		return run, err
	}
	run.wall = time.Since(start)
	// The last redraw follows the last call at once.
	deadline := time.Now().Add(2 * time.Second)
	for fe.scr.seenAt(ask.Seq+ask.N-1) == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	n1, _ := cpuClock(fe.pid)
	run.nvimCPU = n1 - n0
	if span := written[len(written)-1] - written[0]; span > 0 {
		run.achieved = float64(ask.N-1) / (float64(span) / 1e6)
	}
	run.lat, run.scrolled, run.missing = screenLatencies(fe.scr, ask.Seq, written)
	var lines []string
	if err := fe.exec(ctx, `return vim.api.nvim_buf_get_lines(..., 0, -1, false)`, &lines, int(fe.buf)); err != nil {
		return run, err
	}
	if strings.Join(lines, "\n") != text.String() {
		run.intact, run.problem = false, "the floor's buffer differs from the text sent"
	}
	return run, nil
}

// nextAsk is as chatEditor.nextAsk.
func (fe *floorEditor) nextAsk(n int, rate float64) chatwire.Ask {
	a := chatwire.Ask{N: n, Rate: rate, Seq: fe.seq}
	fe.seq += n + 1000
	return a
}
