//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/pty"
)

// firstScreenMark is the text of the file Neovim opens: its appearance on
// the terminal is the first screen.
const firstScreenMark = "FIRST-SCREEN-MARK-7f3a"

// runFirstScreen is the startup row: Neovim's real TUI in a
// pseudo-terminal, from exec to the first screen (the opened file's text on
// the terminal), for a config without the plugin, with setup(), and with
// setup({ auto_start = true }) — the host must start after the first
// screen, never on its way.
func runFirstScreen(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	dir, err := r.project("first-screen", map[string]string{"mark.txt": firstScreenMark + "\n"})
	if err != nil {
		return sec, err
	}
	cfg := filepath.Join(dir, "claude-config")
	autoStart := fmt.Sprintf("vim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q, auto_start = true, env = { CLAUDE_CONFIG_DIR = %q } })\n",
		r.root, r.hostBin, cfg)
	floor := fmt.Sprintf(lockFloorLua, filepath.Join(cfg, "ide"))
	variants := []struct {
		name, desc, init string
		lock, headless   bool // wait for a lock file; no TUI (no first screen)
	}{
		{"none", "no plugin", "-- empty\n", false, false},
		{"setup", "plugin + `setup({})`",
			fmt.Sprintf("vim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q })\n", r.root, r.hostBin), false, false},
		{"auto_start", "plugin + `setup({ auto_start = true })`", autoStart, true, false},
		// Neovim 0.9+'s byte-code cache, which lazy.nvim turns on by
		// default: what parsing the plugin's Lua costs of the above.
		{"none_loader", "no plugin, `vim.loader.enable()`", "if vim.loader then vim.loader.enable() end\n", false, false},
		{"setup_loader", "`vim.loader.enable()` + plugin + `setup({})`",
			fmt.Sprintf("if vim.loader then vim.loader.enable() end\nvim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q })\n", r.root, r.hostBin), false, false},
		// The floor of the lock: what the reference plugin does in its
		// setup(), in the config itself — a vim.loop TCP server on
		// 127.0.0.1 and a lock file written — with nothing else.
		{"floor", "no plugin; the config listens (`vim.loop` TCP on 127.0.0.1) and writes a lock file, as the reference plugin's setup() does", floor, true, false},
		// The same two without a TUI: what a side-by-side bench that runs
		// `nvim --headless` measures (no terminal, no first screen).
		{"auto_start_headless", "`--headless`, plugin + `setup({ auto_start = true })`", autoStart, true, true},
		{"floor_headless", "`--headless`, the floor's config", floor, true, true},
	}
	for _, v := range variants {
		if err := os.WriteFile(filepath.Join(dir, "init-"+v.name+".lua"), []byte(v.init), 0o644); err != nil {
			return sec, err
		}
	}
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "TERM=xterm-256color", "COLORTERM=truecolor")

	runs := 30
	if r.quick {
		runs = 5
	}
	res := map[string]sample{}
	locks := map[string]sample{}
	for i := -1; i < runs; i++ { // run -1 warms the file cache
		for k := range variants {
			v := variants[(k+i+1)%len(variants)]
			_ = os.RemoveAll(filepath.Join(cfg, "ide"))
			ms, ready, err := r.firstScreen(ctx, dir, "init-"+v.name+".lua", env, v.lock, v.headless, filepath.Join(cfg, "ide"))
			if err != nil {
				return sec, fmt.Errorf("%s: %w", v.name, err)
			}
			if i >= 0 {
				if !v.headless {
					res[v.name] = append(res[v.name], ms)
				}
				if v.lock {
					locks[v.name] = append(locks[v.name], ready)
				}
			}
		}
	}
	paired := func(name, base string) sample {
		d := sample{}
		for i := range res[name] {
			d = append(d, res[name][i]-res[base][i])
		}
		return d
	}
	for _, v := range []struct {
		name, base, label string
		order             float64
	}{
		{"setup", "none", "`setup()`", 12},
		{"auto_start", "none", "`setup({ auto_start = true })`", 12.1},
		{"setup_loader", "none_loader", "`setup()` and `vim.loader.enable()` (lazy.nvim's default)", 12.2},
	} {
		d := paired(v.name, v.base)
		cost := res[v.name].median() - res[v.base].median()
		sec.add(row{order: v.order, num: "12", scenario: "Neovim's TUI in a terminal, " + v.label + " in the config",
			figure: "exec → first screen, plugin vs no plugin",
			result: fmt.Sprintf("%+.2f ms (%s vs %s)", cost, fmtMS(res[v.name].median()), fmtMS(res[v.base].median())),
			spread: fmt.Sprintf("paired difference p25–p75 %+.2f…%+.2f ms, n=%d", d.quantile(0.25), d.quantile(0.75), len(d)),
			target: "≤ +1 ms", verdict: verdict(cost <= 1), ref: "+10.5 ms (claudecode.nvim, auto_start)"})
	}
	hostReady := locks["auto_start"]
	res0 := func(name string) float64 { return res[name].median() }
	lockRow := func(order float64, scenario, plugin, floor, screen string) {
		p, f := locks[plugin], locks[floor]
		over := sample{}
		for i := range p {
			over = append(over, p[i]-f[i])
		}
		out := fmt.Sprintf("%s; floor %s (%+.1f ms, paired median %+.1f ms)", fmtMS(p.median()), fmtMS(f.median()), p.median()-f.median(), over.median())
		if screen != "" {
			out += fmt.Sprintf("; the bare Neovim's first screen %s (lock %+.1f ms after it)", fmtMS(res0(screen)), p.median()-res0(screen))
		}
		sec.add(row{order: order, num: "12", scenario: scenario,
			figure: "exec → the host's lock file on disk (the server listening), against the floor: the same Neovim with a config that listens and writes a lock itself",
			result: out,
			spread: fmt.Sprintf("plugin p25–p75 %s, p99 %s; floor p25–p75 %s; n=%d", fmtRange(p.quantile(0.25), p.quantile(0.75)), fmtMS(p.quantile(0.99)),
				fmtRange(f.quantile(0.25), f.quantile(0.75)), len(p)),
			target: "≤ 14.9 ms (the reference plugin's)", verdict: verdict(p.median() <= 14.9), ref: "14.9 ms"})
	}
	lockRow(12.3, "Neovim's TUI in a terminal, `setup({ auto_start = true })` in the config", "auto_start", "floor", "none")
	lockRow(12.4, "`nvim --headless`, `setup({ auto_start = true })` in the config", "auto_start_headless", "floor_headless", "")
	sec.printf("`%s -u <init.lua> -i NONE -n mark.txt` with its real TUI in a %dx%d pseudo-terminal (TERM=xterm-256color), "+
		"in a fresh HOME/XDG tree, %d times per variant (interleaved, after one warm-up round); the time from exec to the "+
		"file's text appearing on the terminal. Variants:\n\n", r.shown(r.nvimBin), 40, 120, runs)
	for _, v := range variants {
		sec.printf("- **%s**: %s\n", v.name, v.desc)
	}
	sec.printf("\n| variant | first screen p50 | p25–p75 |\n|---|---|---|\n")
	for _, v := range variants {
		s := res[v.name]
		if v.headless {
			continue
		}
		sec.printf("| %s | %s | %s |\n", v.name, fmtMS(s.median()), fmtRange(s.quantile(0.25), s.quantile(0.75)))
	}
	sec.printf("\n| variant | exec → lock file p50 | p25–p75 |\n|---|---|---|\n")
	for _, v := range variants {
		if s := locks[v.name]; v.lock {
			sec.printf("| %s | %s | %s |\n", v.name, fmtMS(s.median()), fmtRange(s.quantile(0.25), s.quantile(0.75)))
		}
	}
	sec.printf("\nWith auto_start the host's lock file (the server listening) appears %s after exec (p50; p25–p75 %s). "+
		"The plugin starts its host after the first screen (never on its way), so in a terminal its lock follows the first screen; "+
		"the floor writes its lock in the config, before Neovim has drawn anything, as the reference plugin does. "+
		"Headless (no terminal to draw, as a side-by-side bench with `--headless` runs it) the plugin starts right after VimEnter.\n\n",
		fmtMS(hostReady.median()), fmtRange(hostReady.quantile(0.25), hostReady.quantile(0.75)))
	return sec, nil
}

// firstScreen runs Neovim once in a pseudo-terminal: the milliseconds from
// exec to the mark on its screen and, with waitLock, to a lock file in
// lockDir. Neovim and everything it started are gone when it returns.
func (r *runner) firstScreen(ctx context.Context, dir, init string, env []string, waitLock, headless bool, lockDir string) (screen, lock float64, err error) {
	master, slave, err := pty.Open(40, 120)
	if err != nil {
		return 0, 0, err
	}
	defer master.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	args := []string{"-u", init, "-i", "NONE", "-n", "mark.txt"}
	if headless {
		args = append([]string{"--headless"}, args...)
	}
	cmd := exec.CommandContext(cctx, r.nvimBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The lock is watched from exec on (inotify, no polling that would
	// take a core from Neovim): a lock written before the first screen,
	// as the floor's is, is timed when it appears, not when looked for.
	var w *dirWatch
	if waitLock {
		if err := os.MkdirAll(lockDir, 0o700); err != nil {
			slave.Close()
			return 0, 0, err
		}
		if w, err = watchDir(lockDir); err != nil {
			slave.Close()
			return 0, 0, err
		}
		defer w.close()
	}
	start := time.Now()
	startMono := monoMicros()
	if err := cmd.Start(); err != nil {
		slave.Close()
		return 0, 0, err
	}
	slave.Close()
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	}()
	var mu sync.Mutex
	var out []byte
	seen := make(chan time.Time, 1)
	go func() { // ends when the terminal closes (master.Close above)
		buf := make([]byte, 64<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				now := time.Now()
				mu.Lock()
				answerQueries(master, buf[:n])
				out = append(out, buf[:n]...)
				if bytes.Contains(out, []byte(firstScreenMark)) {
					select {
					case seen <- now:
					default:
					}
				}
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case at := <-seen:
		screen = float64(at.Sub(start).Microseconds()) / 1000
	case <-waitNot(headless):
	case <-cctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return 0, 0, fmt.Errorf("no first screen within 20 s; the terminal shows %q", lastBytes(out, 400))
	}
	for waitLock {
		select {
		case ev := <-w.Events:
			if lockCreated(ev) {
				lock = usMS(ev.Mono - startMono)
				waitLock = false
			}
		case <-cctx.Done():
			return 0, 0, errors.New("no lock file within 20 s")
		}
	}
	if headless {
		return screen, lock, nil // the deferred kill ends it
	}
	_, _ = master.Write([]byte("\x1b:qa!\r"))
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
	}
	return screen, lock, nil
}

// answerQueries answers the terminal queries Neovim's TUI sends at start
// as a terminal would (an xterm-like one on a dark background), so that no
// variant waits for a reply that never comes.
func answerQueries(w *os.File, chunk []byte) {
	for _, q := range []struct{ ask, answer string }{
		{"\x1b[c", "\x1b[?62;22c"},                        // DA1
		{"\x1b[5n", "\x1b[0n"},                            // status report
		{"\x1b]11;?", "\x1b]11;rgb:0000/0000/0000\x1b\\"}, // background colour
		{"\x1b[?u", "\x1b[?0u"},                           // kitty keyboard flags
	} {
		if bytes.Contains(chunk, []byte(q.ask)) {
			_, _ = w.Write([]byte(q.answer))
		}
	}
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// lockFloorLua is the lock's floor (%s: the lock directory): a TCP server and a
// lock file written from the config, as the reference plugin's setup()
// does, renamed into place so that it appears whole.
const lockFloorLua = `local uv = vim.uv or vim.loop
local srv = uv.new_tcp()
srv:bind("127.0.0.1", 0)
srv:listen(16, function() end)
local port = srv:getsockname().port
local dir = %q
vim.fn.mkdir(dir, "p")
local tmp = dir .. "/." .. port .. ".tmp"
local f = io.open(tmp, "w")
f:write(vim.json.encode({ pid = vim.fn.getpid(), workspaceFolders = { vim.fn.getcwd() }, ideName = "Neovim", transport = "ws", authToken = "floor" }))
f:close()
os.rename(tmp, dir .. "/" .. port .. ".lock")
`

// waitNot is a closed channel when skip is true (nothing to wait for).
func waitNot(skip bool) <-chan struct{} {
	if !skip {
		return nil
	}
	c := make(chan struct{})
	close(c)
	return c
}
