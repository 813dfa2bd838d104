//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/neovim/go-client/nvim"
)

// editorOpts configure a headless Neovim child.
type editorOpts struct {
	// plugin puts this checkout on 'runtimepath' (plugin/claude.lua is
	// sourced) and calls setup(); without it Neovim runs bare (the floor).
	plugin bool
	// setup holds extra setup() fields, Lua syntax ("selection = {…}").
	setup string
	// ui attaches a UI of this size (cols, rows) so that Neovim really
	// draws; zero means none.
	uiCols, uiRows int
	// dir is the working directory (the project); it must exist.
	dir string
}

// editor is a running headless Neovim with a msgpack-RPC connection, the
// way a GUI or a test drives it.
type editor struct {
	*nvim.Nvim
	r      *runner
	cmd    *exec.Cmd
	pid    int
	dir    string
	cfgDir string // CLAUDE_CONFIG_DIR: where the lock file goes
	opts   editorOpts
	events chan benchEvent // from the bench Lua hook (rpcnotify "bench")

	closeOnce sync.Once
	waitDone  chan struct{}
}

// benchEvent is what the bench Lua hook reports (see hookLua).
type benchEvent struct {
	Ev   string          `json:"ev"`
	T    int64           `json:"t"` // CLOCK_MONOTONIC, µs
	Wins int             `json:"wins"`
	Buf  int             `json:"buf"`
	Data json.RawMessage `json:"data"`
}

// startEditor starts `nvim --embed --headless --clean` in o.dir. Its
// process group is the runner's to kill, whatever happens.
func (r *runner) startEditor(ctx context.Context, o editorOpts) (*editor, error) {
	r.mu.Lock()
	r.seq++
	seq := r.seq
	r.mu.Unlock()
	home := filepath.Join(r.tmp, fmt.Sprintf("nvim-%d", seq))
	cfg := filepath.Join(home, "claude-config")
	for _, d := range []string{filepath.Join(home, "state"), filepath.Join(home, "data"), filepath.Join(home, "cache")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	args := []string{"--embed", "--headless", "--clean", "-n", "-i", "NONE"}
	if o.plugin {
		args = append(args, "--cmd", "set rtp^="+r.root, "--cmd", "runtime! plugin/claude.lua")
	}
	cmd := exec.Command(r.nvimBin, args...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(),
		"CLAUDE_CONFIG_DIR="+cfg,
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := os.Create(filepath.Join(home, "stderr.log"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.nvimBin, err)
	}
	e := &editor{r: r, cmd: cmd, pid: cmd.Process.Pid, dir: o.dir, cfgDir: cfg, opts: o,
		events: make(chan benchEvent, 64), waitDone: make(chan struct{})}
	r.track(e)
	go func() {
		_ = cmd.Wait()
		close(e.waitDone)
	}()
	v, err := nvim.New(stdout, stdin, stdin, func(string, ...any) {})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("msgpack-rpc: %w", err)
	}
	e.Nvim = v
	if err := v.RegisterHandler("bench", func(payload string) {
		var ev benchEvent
		if json.Unmarshal([]byte(payload), &ev) == nil {
			select {
			case e.events <- ev:
			default:
			}
		}
	}); err != nil {
		e.close()
		return nil, err
	}
	if err := v.RegisterHandler("redraw", func(...any) {}); err != nil {
		e.close()
		return nil, err
	}
	go func() { _ = v.Serve() }()

	if err := e.exec(ctx, "return 1", nil); err != nil {
		e.close()
		return nil, fmt.Errorf("neovim did not start: %w", err)
	}
	if o.uiCols > 0 {
		// ext_messages: no message ever waits for Enter (which would block
		// the main loop). Attached before any message exists: Neovim 0.12.4
		// crashes when an ext_messages UI attaches after messages were shown.
		if err := v.AttachUI(o.uiCols, o.uiRows, map[string]any{"ext_linegrid": true, "ext_messages": true, "rgb": true}); err != nil {
			e.close()
			return nil, fmt.Errorf("attach UI: %w", err)
		}
	}
	if o.plugin {
		setup := fmt.Sprintf(`require("claude").setup({ bin = %q, log_file = %q, log_level = %q, %s })`,
			r.hostBin, filepath.Join(home, "nvim-claude.log"), r.hostLogLevel, o.setup)
		if err := e.exec(ctx, setup, nil); err != nil {
			e.close()
			return nil, fmt.Errorf("setup(): %w", err)
		}
	}
	ch := v.ChannelID()
	if err := e.exec(ctx, hookLua, nil, ch); err != nil {
		e.close()
		return nil, fmt.Errorf("bench hook: %w", err)
	}
	return e, nil
}

// execTimeout bounds a Neovim call whose context has no deadline.
const execTimeout = 60 * time.Second

// exec runs Lua in Neovim, bounded by ctx (a Neovim call cannot be
// cancelled: on timeout it is abandoned and the editor is unusable).
func (e *editor) exec(ctx context.Context, code string, result any, args ...any) error {
	if args == nil {
		args = []any{}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, execTimeout)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() { done <- e.ExecLua(code, result, args...) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-e.waitDone:
		return errors.New("neovim exited")
	}
}

// eval runs Lua whose result is JSON-encoded in Neovim and decoded into out.
func (e *editor) eval(ctx context.Context, code string, out any, args ...any) error {
	var s string
	wrapped := "local res = (function(...) " + code + " end)(...)\nreturn vim.json.encode(res == nil and vim.NIL or res)"
	if err := e.exec(ctx, wrapped, &s, args...); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal([]byte(s), out)
}

// input types keys as a user would (nvim_input: the typeahead, so that
// CursorMoved fires as for real keys).
func (e *editor) input(keys string) error {
	_, err := e.Input(keys)
	return err
}

// waitEvent waits for the next bench event named ev.
func (e *editor) waitEvent(ctx context.Context, ev string, timeout time.Duration) (benchEvent, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case got := <-e.events:
			if got.Ev == ev {
				return got, nil
			}
		case <-t.C:
			return benchEvent{}, fmt.Errorf("no %s event within %v", ev, timeout)
		case <-ctx.Done():
			return benchEvent{}, ctx.Err()
		case <-e.waitDone:
			return benchEvent{}, errors.New("neovim exited")
		}
	}
}

// hostPID is the pid of the nvim-claude job Neovim runs (0 if none).
func (e *editor) hostPID() int {
	comm := filepath.Base(e.r.hostBin)
	if len(comm) > 15 { // the kernel keeps 15 bytes of the name
		comm = comm[:15]
	}
	for _, p := range childPIDs(e.pid, comm) {
		return p
	}
	return 0
}

// serve runs :ClaudeServe and returns the lock file it wrote.
func (e *editor) serve(ctx context.Context) (lockFile, error) {
	if err := e.exec(ctx, `vim.cmd("ClaudeServe")`, nil); err != nil {
		return lockFile{}, fmt.Errorf(":ClaudeServe: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := findLock(e.cfgDir)
		if err == nil {
			return l, nil
		}
		if time.Now().After(deadline) {
			return lockFile{}, fmt.Errorf(":ClaudeServe wrote no lock file: %w", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// close ends Neovim (and with it the host job): :qa!, then the process
// group is killed if anything is left.
func (e *editor) close() {
	e.closeOnce.Do(func() {
		host := e.hostPID()
		if e.Nvim != nil {
			done := make(chan struct{})
			go func() {
				_ = e.Command("qa!")
				close(done)
			}()
			select {
			case <-done:
			case <-e.waitDone:
			case <-time.After(3 * time.Second):
			}
		}
		select {
		case <-e.waitDone:
		case <-time.After(3 * time.Second):
		}
		_ = syscall.Kill(-e.pid, syscall.SIGKILL)
		if host > 0 && alive(host) {
			// The host leaves when its stdin closes; give it a moment.
			deadline := time.Now().Add(2 * time.Second)
			for alive(host) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if alive(host) {
				_ = syscall.Kill(host, syscall.SIGKILL)
			}
		}
		<-e.waitDone
		if e.Nvim != nil {
			_ = e.Nvim.Close()
		}
		e.r.untrack(e)
	})
}

// lockFile is the part of the lock file a client needs.
type lockFile struct {
	Path      string
	Port      int
	AuthToken string `json:"authToken"`
	// Via, when set, is the local port a client dials instead of Port (an
	// SSH forward's): the Host header still names Port, as the far CLI's
	// does.
	Via int `json:"-"`
}

func findLock(cfgDir string) (lockFile, error) {
	matches, err := filepath.Glob(filepath.Join(cfgDir, "ide", "*.lock"))
	if err != nil {
		return lockFile{}, err
	}
	if len(matches) == 0 {
		return lockFile{}, errors.New("no lock file yet")
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		return lockFile{}, err
	}
	var l lockFile
	if err := json.Unmarshal(b, &l); err != nil {
		return lockFile{}, fmt.Errorf("lock %s: %w", matches[0], err)
	}
	l.Path = matches[0]
	if _, err := fmt.Sscanf(strings.TrimSuffix(filepath.Base(matches[0]), ".lock"), "%d", &l.Port); err != nil {
		return lockFile{}, fmt.Errorf("lock file name %s: %w", matches[0], err)
	}
	return l, nil
}

// hookLua is installed in every editor: a main-loop stall meter (a 1 ms
// Vim timer noting the gaps between its ticks) and a watcher for the
// plugin's documented User ClaudeDiffOpened event, which redraws and then
// reports the time to the runner. Times are CLOCK_MONOTONIC microseconds.
const hookLua = `
local chan = ...
local uv = vim.uv or vim.loop
local B = { chan = chan }
_G.__nvim_claude_bench = B
local function us() return math.floor(uv.hrtime() / 1000) end
B.us = us
local function send(ev) vim.rpcnotify(chan, "bench", vim.json.encode(ev)) end
B.send = send

-- meter_start(period_ms, min_gap_ms): every tick more than min_gap_ms after
-- the previous one is recorded as a gap {from, to}. The ticks come from a
-- Vim timer (timer_start), which Neovim runs only from its main loop, where
-- it also handles a typed key: a gap is time in which a key would have
-- waited. (A vim.loop timer's callback also runs from the breakchecks inside
-- a long command, when a key is read but not acted on, so it sees a 5 s
-- :diffthis as many short gaps.)
function B.meter_start(period, min_gap)
  if B.timer then vim.fn.timer_stop(B.timer) end
  B.gaps, B.max, B.min_gap = {}, 0, min_gap * 1000
  local last = us()
  B.started, B.last = last, last
  B.timer = vim.fn.timer_start(period, function()
    local now = us()
    local g = now - B.last
    if g >= B.min_gap then B.gaps[#B.gaps + 1] = { B.last, now } end
    if g > B.max then B.max = g end
    B.last = now
  end, { ["repeat"] = -1 })
end

-- meter_stop ends the meter; it runs from the main loop too (an RPC
-- request), so the time since the last tick counts as a gap: the meter
-- covers the work up to the moment Neovim could answer.
function B.meter_stop()
  local now = us()
  if not B.timer then return { max = 0, gaps = {}, started = 0, stopped = now } end
  vim.fn.timer_stop(B.timer) B.timer = nil
  local g = now - B.last
  if g >= B.min_gap then B.gaps[#B.gaps + 1] = { B.last, now } end
  if g > B.max then B.max = g end
  return { max = B.max, gaps = B.gaps, started = B.started, stopped = now }
end

vim.api.nvim_create_autocmd("User", {
  pattern = "ClaudeDiffOpened",
  desc = "nvim-claude bench: report when a diff is on screen",
  callback = function(a)
    local wins = 0
    for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if vim.wo[w].diff then wins = wins + 1 end
    end
    vim.cmd("redraw")
    send({ ev = "diff_opened", t = us(), wins = wins, buf = vim.api.nvim_get_current_buf(), data = a.data })
  end,
})
`

func bufHandle(n int) nvim.Buffer { return nvim.Buffer(n) }
