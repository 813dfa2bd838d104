//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// profiler samples processes with `perf record` while a scenario repeats
// the work behind a missed target, and summarises where their CPU went.
type profiler struct {
	r    *runner
	cmd  *exec.Cmd
	data string
	what string
}

// perfUsable reports whether perf can sample our own processes here.
func (r *runner) perfUsable() (string, bool) {
	if !r.profile {
		return "profiles are off (-profile=false)", false
	}
	if _, err := exec.LookPath("perf"); err != nil {
		return "perf is not installed, so no profile", false
	}
	return "", true
}

// startProfile starts sampling pids (at 2 kHz, user and kernel).
func (r *runner) startProfile(what string, pids ...int) (*profiler, error) {
	if why, ok := r.perfUsable(); !ok {
		return nil, fmt.Errorf("%s", why)
	}
	var ids []string
	for _, p := range pids {
		if p > 0 {
			ids = append(ids, strconv.Itoa(p))
		}
	}
	r.mu.Lock()
	r.seq++
	data := filepath.Join(r.tmp, fmt.Sprintf("perf-%d.data", r.seq))
	r.mu.Unlock()
	// -g: Go keeps frame pointers, so the host's call chains are exact (for
	// Neovim's C and LuaJIT frames only the self time is meaningful).
	cmd := exec.Command("perf", "record", "-q", "-g", "-F", "2000", "-p", strings.Join(ids, ","), "-o", data)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := r.startProc(cmd); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	time.Sleep(300 * time.Millisecond) // perf attaches
	if !alive(cmd.Process.Pid) {
		r.stopProc(cmd)
		return nil, fmt.Errorf("perf record could not sample pids %s (perf_event_paranoid?)", strings.Join(ids, ","))
	}
	return &profiler{r: r, cmd: cmd, data: data, what: what}, nil
}

// stop ends sampling and returns the hottest symbols as markdown.
func (p *profiler) stop(ctx context.Context) string {
	if p == nil {
		return ""
	}
	// SIGINT: perf writes its data and exits.
	p.r.signalProc(p.cmd, syscall.SIGINT, 20*time.Second)
	if !p.r.keep {
		defer os.Remove(p.data)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	report := func(args ...string) (string, error) {
		base := []string{"report", "-i", p.data, "--stdio", "-q"}
		out, err := exec.CommandContext(rctx, "perf", append(base, args...)...).Output()
		return string(out), err
	}
	byObj, err := report("--no-children", "-g", "none", "--sort", "comm,dso", "--percent-limit", "2")
	if err != nil {
		return fmt.Sprintf("*(perf report failed: %v)*\n\n", err)
	}
	self, err := report("--no-children", "-g", "none", "--sort", "comm,dso,symbol", "--percent-limit", "1")
	if err != nil {
		return fmt.Sprintf("*(perf report failed: %v)*\n\n", err)
	}
	// Inclusive time of the host's Go functions (call chains are exact).
	incl, _ := report("--children", "-g", "none", "--comm", "nvim-claude", "--dso", "nvim-claude", "--sort", "symbol", "--percent-limit", "4")
	return formatPerf(p.what, byObj, self, incl)
}

// perfLine is one line of `perf report --stdio -q`: the share and the
// sort keys.
type perfLine struct {
	share string
	keys  []string
}

func parsePerf(out string) []perfLine {
	var lines []perfLine
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], "%") {
			continue
		}
		keys := f[1:]
		for len(keys) > 1 && keys[len(keys)-1] == "-" {
			keys = keys[:len(keys)-1]
		}
		// --children prints two shares (children, self): keep the first
		if len(keys) > 1 && strings.HasSuffix(keys[0], "%") {
			keys = keys[1:]
		}
		lines = append(lines, perfLine{share: f[0], keys: keys})
	}
	return lines
}

// symbolOf joins the symbol fields, without perf's [.] / [k] marker.
func symbolOf(keys []string) string {
	if len(keys) > 0 && (keys[0] == "[.]" || keys[0] == "[k]") {
		keys = keys[1:]
	}
	return strings.ReplaceAll(strings.Join(keys, " "), "|", "\\|")
}

// formatPerf renders three perf reports (self time by process and object,
// self time by symbol, the host's inclusive time by Go function) as
// markdown.
func formatPerf(what, byObj, self, incl string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Profile (`perf record -g -F 2000` of %s):\n\n", what)
	objs := parsePerf(byObj)
	if len(objs) == 0 {
		return fmt.Sprintf("*(no samples in the profile of %s)*\n\n", what)
	}
	b.WriteString("- CPU by process and object (≥ 2 %): ")
	var parts []string
	for _, l := range objs {
		if len(l.keys) >= 2 {
			parts = append(parts, fmt.Sprintf("%s %s/%s", l.share, l.keys[0], filepath.Base(l.keys[1])))
		}
	}
	b.WriteString(strings.Join(parts, ", ") + "\n")
	if inc := parsePerf(incl); len(inc) > 0 {
		b.WriteString("- the host's Go functions, inclusive (≥ 4 % of all samples; runtime.* left out): ")
		parts = parts[:0]
		for _, l := range inc {
			sym := symbolOf(l.keys)
			if strings.HasPrefix(sym, "runtime.") || strings.Contains(sym, "gowrap") || sym == "" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s `%s`", l.share, sym))
			if len(parts) == 14 {
				break
			}
		}
		b.WriteString(strings.Join(parts, ", ") + "\n")
	}
	b.WriteString("\n| self | process | object | symbol |\n|---|---|---|---|\n")
	n := 0
	for _, l := range parsePerf(self) {
		if len(l.keys) < 3 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` |\n", l.share, l.keys[0], filepath.Base(l.keys[1]), symbolOf(l.keys[2:]))
		n++
		if n == 20 {
			break
		}
	}
	b.WriteString("\n")
	return b.String()
}
