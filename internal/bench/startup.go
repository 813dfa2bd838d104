//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startupLog holds the figures of one `nvim --startuptime` log (ms).
type startupLog struct {
	initSourced float64 // "sourcing <init>": self+sourced
	plugin      float64 // "sourcing …/plugin/claude.lua": self+sourced
	total       float64 // clock at "--- NVIM STARTED ---"
}

// parseStartupLog reads the figures from a --startuptime log: initName is
// the base name of the -u file.
func parseStartupLog(s, initName string) (startupLog, error) {
	var l startupLog
	found := false
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		clock, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(line, "--- NVIM STARTED ---"):
			l.total = clock
			found = true
		case strings.Contains(line, "sourcing ") && strings.HasSuffix(line, "/"+initName) || strings.HasSuffix(line, "sourcing "+initName):
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				l.initSourced = v
			}
		case strings.HasSuffix(line, "/plugin/claude.lua"):
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				l.plugin = v
			}
		}
	}
	if !found {
		return l, fmt.Errorf("no \"--- NVIM STARTED ---\" line in the --startuptime log")
	}
	return l, nil
}

// optionalOff is setup()'s options with every optional feature off: cursor
// sharing, the editor tools, the sessions' hooks and notices, the diff
// notice.
const optionalOff = "selection = { track = false }, editor_tools = { enable = false }, " +
	"sessions = { hooks = false, notify = false }, notify = { needs_input = false }, chat = { notify = false }"

func runStartup(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	dir, err := r.project("startup", nil)
	if err != nil {
		return sec, err
	}
	variants := []struct {
		name, desc, init string
	}{
		{"setup", "plugin on 'runtimepath' + `require(\"claude\").setup({})`",
			fmt.Sprintf("vim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q })\n", r.root, r.hostBin)},
		{"off", "plugin on 'runtimepath' + `setup()` with every optional feature off: " + optionalOff,
			fmt.Sprintf("vim.opt.rtp:prepend(%q)\nrequire(\"claude\").setup({ bin = %q, %s })\n", r.root, r.hostBin, optionalOff)},
		{"installed", "plugin on 'runtimepath', no setup()", fmt.Sprintf("vim.opt.rtp:prepend(%q)\n", r.root)},
		{"none", "no plugin", "-- empty\n"},
	}
	for _, v := range variants {
		if err := os.WriteFile(filepath.Join(dir, "init-"+v.name+".lua"), []byte(v.init), 0o644); err != nil {
			return sec, err
		}
	}
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"))
	once := func(name string) (startupLog, error) {
		logPath := filepath.Join(dir, "startup-"+name+".log")
		_ = os.Remove(logPath)
		init := "init-" + name + ".lua"
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, r.nvimBin, "--headless", "--startuptime", logPath, "-u", init, "-i", "NONE", "-n", "+qa!")
		cmd.Dir = dir
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return startupLog{}, fmt.Errorf("nvim (%s): %v\n%s", name, err, out)
		} else if len(strings.TrimSpace(string(out))) > 0 {
			return startupLog{}, fmt.Errorf("nvim (%s) printed: %s", name, out)
		}
		b, err := os.ReadFile(logPath)
		if err != nil {
			return startupLog{}, err
		}
		return parseStartupLog(string(b), init)
	}
	runs := 30
	if r.quick {
		runs = 5
	}
	res := map[string][]startupLog{}
	for i := -1; i < runs; i++ { // run -1 warms the file cache
		for k := range variants {
			v := variants[(k+i+1)%len(variants)]
			l, err := once(v.name)
			if err != nil {
				return sec, err
			}
			if i >= 0 {
				res[v.name] = append(res[v.name], l)
			}
		}
	}
	pick := func(name string, f func(startupLog) float64) sample {
		s := sample{}
		for _, l := range res[name] {
			s = append(s, f(l))
		}
		return s
	}
	initT := func(l startupLog) float64 { return l.initSourced }
	totalT := func(l startupLog) float64 { return l.total }
	pluginT := func(l startupLog) float64 { return l.plugin }
	// setup() in a config where the plugin is installed either way: what
	// the init file and plugin/claude.lua cost together, with vs without
	// the call (plugin/claude.lua loads part of what setup() needs).
	both := func(l startupLog) float64 { return l.initSourced + l.plugin }
	sBoth, iBoth := pick("setup", both), pick("installed", both)
	cost := sBoth.median() - iBoth.median()
	diffs := sample{}
	for i := range sBoth {
		diffs = append(diffs, sBoth[i]-iBoth[i])
	}
	sec.add(row{order: 8, num: "8", scenario: "`nvim --startuptime` with `setup()` in the config",
		figure: "cost of `setup()`: init.lua + plugin/claude.lua, with vs without the call",
		result: fmt.Sprintf("%s (%s vs %s)", fmtMS(cost), fmtMS(sBoth.median()), fmtMS(iBoth.median())),
		spread: fmt.Sprintf("per-run difference p25–p75 %s, n=%d", fmtRange(diffs.quantile(0.25), diffs.quantile(0.75)), len(diffs)),
		target: "≤ 1 ms", verdict: verdict(cost <= 1), ref: "+7.6 ms"})
	oBoth := pick("off", both)
	offCost := oBoth.median() - iBoth.median()
	offDiffs := sample{}
	for i := range oBoth {
		offDiffs = append(offDiffs, oBoth[i]-sBoth[i])
	}
	// What the optional features cost at startup when left off: setup()
	// with them off against setup() with the defaults (on). Zero or less
	// means a feature left off loads nothing of its own.
	offVsOn := offDiffs.median()
	sec.add(row{order: 8.1, num: "8", scenario: "same, `setup()` with every optional feature off (" + optionalOff + ")",
		figure: "startup cost of the features left off: setup() with them off vs with the defaults",
		result: fmt.Sprintf("%+.3f ms, median of the paired differences (%s vs %s; vs no setup() %+.3f ms)", offVsOn, fmtMS(oBoth.median()), fmtMS(sBoth.median()), offCost),
		spread: fmt.Sprintf("per-run difference p25–p75 %s, n=%d", fmtRange(offDiffs.quantile(0.25), offDiffs.quantile(0.75)), len(offDiffs)),
		target: "≤ 0 (zero: off costs nothing more than on; met within 0.05 ms)", verdict: verdict(offVsOn <= 0.05), ref: "—"})
	sec.printf("`%s --headless --startuptime <log> -u <init.lua> -i NONE -n +qa!` in a fresh HOME/XDG tree, %d times per "+
		"variant (interleaved, after one warm-up round), for four init files:\n\n", r.shown(r.nvimBin), runs)
	for _, v := range variants {
		sec.printf("- **%s**: %s\n", v.name, v.desc)
	}
	sec.printf("\nThe cost of `setup()` is the difference between the medians of \"sourcing init-….lua\" + \"sourcing " +
		"…/plugin/claude.lua\" (self+sourced: everything they do, the `require`s included) with and without the call — " +
		"plugin/claude.lua loads the command module either way, setup() finds it loaded. " +
		"The whole plugin's cost (sourcing plugin/claude.lua at startup, plus setup()) is the difference of the " +
		"\"--- NVIM STARTED ---\" clocks, which includes the noise of the whole startup.\n\n")
	sec.printf("| variant | init.lua self+sourced p50 | p25–p75 | plugin/claude.lua p50 | NVIM STARTED p50 | p25–p75 |\n|---|---|---|---|---|---|\n")
	for _, v := range variants {
		in, tot, pl := pick(v.name, initT), pick(v.name, totalT), pick(v.name, pluginT)
		plS := "—"
		if pl.max() > 0 {
			plS = fmtMS(pl.median())
		}
		sec.printf("| %s | %s | %s | %s | %s | %s |\n", v.name, fmtMS(in.median()), fmtRange(in.quantile(0.25), in.quantile(0.75)),
			plS, fmtMS(tot.median()), fmtRange(tot.quantile(0.25), tot.quantile(0.75)))
	}
	sec.printf("\nWhole plugin (setup vs none, NVIM STARTED): %+.2f ms.\n\n", pick("setup", totalT).median()-pick("none", totalT).median())
	return sec, nil
}

func runServe(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	dir, err := r.project("serve", nil)
	if err != nil {
		return sec, err
	}
	e, err := r.startEditor(ctx, editorOpts{plugin: true, dir: dir})
	if err != nil {
		return sec, err
	}
	defer e.close()
	ideDir := filepath.Join(e.cfgDir, "ide")
	if err := os.MkdirAll(ideDir, 0o700); err != nil {
		return sec, err
	}
	w, err := watchDir(ideDir)
	if err != nil {
		return sec, err
	}
	defer w.close()
	runs := 20
	if r.quick {
		runs = 5
	}
	var lat, ret sample
	for i := 0; i < runs; i++ {
		for len(w.Events) > 0 {
			<-w.Events
		}
		start := monoMicros()
		if err := e.exec(ctx, `vim.cmd("ClaudeServe")`, nil); err != nil {
			return sec, fmt.Errorf(":ClaudeServe: %w", err)
		}
		ret = append(ret, usMS(monoMicros()-start))
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case ev := <-w.Events:
				if lockCreated(ev) {
					lat = append(lat, usMS(ev.Mono-start))
					break wait
				}
			case <-timeout:
				return sec, fmt.Errorf(":ClaudeServe wrote no lock file in %s within 10 s", ideDir)
			case <-ctx.Done():
				return sec, ctx.Err()
			}
		}
		host := e.hostPID()
		if err := e.exec(ctx, `vim.cmd("ClaudeStop")`, nil); err != nil {
			return sec, fmt.Errorf(":ClaudeStop: %w", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			m, _ := filepath.Glob(filepath.Join(ideDir, "*.lock"))
			if len(m) == 0 && !alive(host) {
				break
			}
			if time.Now().After(deadline) {
				return sec, fmt.Errorf(":ClaudeStop left %v (host alive: %v)", m, alive(host))
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sec.add(row{order: 9, num: "9", scenario: "`:ClaudeServe` (host not running yet)", figure: "command → lock file on disk",
		result: fmtMS(lat.median()), spread: fmt.Sprintf("p25–p75 %s, max %s, n=%d", fmtRange(lat.quantile(0.25), lat.quantile(0.75)), fmtMS(lat.max()), len(lat)),
		target: "≤ 30 ms", verdict: verdict(lat.median() <= 30), ref: "—"})
	sec.printf("A Neovim with the plugin set up (nothing started). The runner watches `$CLAUDE_CONFIG_DIR/ide` with inotify, "+
		"sends `:ClaudeServe` (`nvim_exec_lua`), and stops the clock at the event that completes `<port>.lock` (renamed into "+
		"place or closed after writing); then `:ClaudeStop`, waits for the lock to go and the host to exit, and repeats (%d "+
		"times). Each run starts the host process (jobstart), which the first `:ClaudeServe` of a session does.\n\n", runs)
	sec.printf("| | p50 | p25–p75 | min | max |\n|---|---|---|---|---|\n")
	sec.printf("| command → lock file | %s | %s | %s | %s |\n", fmtMS(lat.median()), fmtRange(lat.quantile(0.25), lat.quantile(0.75)), fmtMS(lat.min()), fmtMS(lat.max()))
	sec.printf("| command → `:ClaudeServe` returned | %s | %s | %s | %s |\n\n", fmtMS(ret.median()), fmtRange(ret.quantile(0.25), ret.quantile(0.75)), fmtMS(ret.min()), fmtMS(ret.max()))
	return sec, nil
}
