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
	"slices"
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
	variants := []struct{ name, desc, init string }{
		{"none", "no plugin", "-- empty\n"},
		{"setup", "plugin + `setup({})`",
			fmt.Sprintf("vim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q })\n", r.root, r.hostBin)},
		{"auto_start", "plugin + `setup({ auto_start = true })`",
			fmt.Sprintf("vim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q, auto_start = true, env = { CLAUDE_CONFIG_DIR = %q } })\n",
				r.root, r.hostBin, cfg)},
		// Neovim 0.9+'s byte-code cache, which lazy.nvim turns on by
		// default: what parsing the plugin's Lua costs of the above.
		{"none_loader", "no plugin, `vim.loader.enable()`", "if vim.loader then vim.loader.enable() end\n"},
		{"setup_loader", "`vim.loader.enable()` + plugin + `setup({})`",
			fmt.Sprintf("if vim.loader then vim.loader.enable() end\nvim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q })\n", r.root, r.hostBin)},
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
	var hostReady sample
	for i := -1; i < runs; i++ { // run -1 warms the file cache
		for k := range variants {
			v := variants[(k+i+1)%len(variants)]
			_ = os.RemoveAll(filepath.Join(cfg, "ide"))
			ms, ready, err := r.firstScreen(ctx, dir, "init-"+v.name+".lua", env, v.name == "auto_start", filepath.Join(cfg, "ide"))
			if err != nil {
				return sec, fmt.Errorf("%s: %w", v.name, err)
			}
			if i >= 0 {
				res[v.name] = append(res[v.name], ms)
				if v.name == "auto_start" {
					hostReady = append(hostReady, ready)
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
	sec.add(row{order: 12.3, num: "12", scenario: "Neovim's TUI in a terminal, `setup({ auto_start = true })` in the config",
		figure: "exec → the host's lock file on disk (the server listening)",
		result: fmtMS(hostReady.median()),
		spread: fmt.Sprintf("p25–p75 %s, p99 %s, n=%d", fmtRange(hostReady.quantile(0.25), hostReady.quantile(0.75)), fmtMS(hostReady.quantile(0.99)), len(hostReady)),
		target: "≤ 14.9 ms (the reference plugin's)", verdict: verdict(hostReady.median() <= 14.9), ref: "14.9 ms"})
	sec.printf("`%s -u <init.lua> -i NONE -n mark.txt` with its real TUI in a %dx%d pseudo-terminal (TERM=xterm-256color), "+
		"in a fresh HOME/XDG tree, %d times per variant (interleaved, after one warm-up round); the time from exec to the "+
		"file's text appearing on the terminal. Variants:\n\n", r.shown(r.nvimBin), 40, 120, runs)
	for _, v := range variants {
		sec.printf("- **%s**: %s\n", v.name, v.desc)
	}
	sec.printf("\n| variant | first screen p50 | p25–p75 |\n|---|---|---|\n")
	for _, v := range variants {
		s := res[v.name]
		sec.printf("| %s | %s | %s |\n", v.name, fmtMS(s.median()), fmtRange(s.quantile(0.25), s.quantile(0.75)))
	}
	sec.printf("\nWith auto_start the host's lock file (the server listening) appears %s after exec (p50; p25–p75 %s): "+
		"after the first screen, as it must.\n\n", fmtMS(hostReady.median()), fmtRange(hostReady.quantile(0.25), hostReady.quantile(0.75)))
	return sec, nil
}

// firstScreen runs Neovim once in a pseudo-terminal: the milliseconds from
// exec to the mark on its screen and, with waitLock, to a lock file in
// lockDir. Neovim and everything it started are gone when it returns.
func (r *runner) firstScreen(ctx context.Context, dir, init string, env []string, waitLock bool, lockDir string) (screen, lock float64, err error) {
	master, slave, err := pty.Open(40, 120)
	if err != nil {
		return 0, 0, err
	}
	defer master.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, r.nvimBin, "-u", init, "-i", "NONE", "-n", "mark.txt")
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
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
	case <-cctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return 0, 0, fmt.Errorf("no first screen within 20 s; the terminal shows %q", lastBytes(out, 400))
	}
	if waitLock {
		for {
			ents, _ := os.ReadDir(lockDir)
			if slices.ContainsFunc(ents, func(e os.DirEntry) bool { return lockCreated(fileEvent{Name: e.Name(), Mask: syscall.IN_MOVED_TO}) }) {
				lock = float64(time.Since(start).Microseconds()) / 1000
				break
			}
			if cctx.Err() != nil {
				return 0, 0, errors.New("auto_start: no lock file within 20 s")
			}
			time.Sleep(200 * time.Microsecond)
		}
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
