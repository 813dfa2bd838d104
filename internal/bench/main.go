//go:build linux

// Command bench measures nvim-claude against its targets and
// writes BENCHMARKS.md: scripted scenarios against a real headless Neovim
// running the real host binary, driven over the wire (msgpack-RPC into
// Neovim, the IDE protocol's WebSocket JSON-RPC into the host), each
// compared with a floor measured in the same run (the same work in a
// Neovim without the plugin, or a bare gorilla/websocket echo server), plus
// the Go micro-benchmarks.
//
//	go run ./internal/bench [-nvim path] [-host path] [-only 1,3,go] [-quick] [-out BENCHMARKS.md]
//
// It reports; it never fails on a missed target. It exits non-zero when a
// scenario breaks (an error other than a feature that is not there yet).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// runner holds what every scenario needs and every process the run started.
type runner struct {
	root    string // repository root (go.mod)
	nvimBin string
	hostBin string
	echoBin string
	goBin   string
	tmp     string
	quick   bool
	keep    bool
	profile bool
	// hostLogLevel is setup()'s log_level.
	hostLogLevel string
	log          io.Writer
	args         []string // the command line, for the report
	all          bool     // every scenario runs (no -only)

	mu      sync.Mutex
	seq     int
	editors map[*editor]struct{}
	procs   map[*exec.Cmd]struct{}
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nvimBin := fs.String("nvim", "", "Neovim binary (default $NVIM_BIN, else .cache/nvim/0.12/bin/nvim)")
	hostBin := fs.String("host", "", "nvim-claude binary (default: built from this checkout with -trimpath)")
	only := fs.String("only", "", "comma-separated scenarios to run: 1 (covers 1-2), 3 (covers 3-5 and 10), 6 (6-7), 8, 9, 11, 12, 20, 21, 22, 23, 24, go")
	quick := fs.Bool("quick", false, "fewer repetitions (a smoke run; figures are not for publishing)")
	out := fs.String("out", "", "write the report here (default <repo>/BENCHMARKS.md; - for stdout)")
	keep := fs.Bool("keep", false, "keep the temporary directory (Neovim stderr, host logs) for debugging")
	profile := fs.Bool("profile", true, "when a target is missed, repeat its work under `perf record` and report the hottest symbols")
	hostLog := fs.String("host-log-level", "warn", "the host's log_level (its log is kept with -keep)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	r, err := newRunner(ctx, *nvimBin, *hostBin, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer r.cleanup()
	r.quick = *quick
	r.keep = *keep
	r.profile = *profile
	r.hostLogLevel = *hostLog
	r.args = append([]string{"go", "run", "./internal/bench"}, args...)

	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	r.all = len(want) == 0
	var sections []*section
	broken := 0
	for _, sc := range scenarios() {
		if len(want) > 0 && !want[sc.id] {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		r.logf("== %s", sc.title)
		start := time.Now()
		sec, err := sc.run(ctx, r)
		if sec == nil {
			sec = &section{}
		}
		sec.id, sec.title = sc.id, sc.title
		sec.elapsed = time.Since(start)
		if err != nil {
			broken++
			sec.err = err
			r.logf("   BROKEN: %v", err)
		}
		r.logf("   done in %v", sec.elapsed.Round(time.Millisecond))
		sections = append(sections, sec)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "bench: interrupted")
		return 1
	}
	report := r.report(sections)
	path := *out
	if path == "" {
		path = filepath.Join(r.root, "BENCHMARKS.md")
	}
	if path == "-" {
		_, _ = io.WriteString(os.Stdout, report)
	} else if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	} else {
		r.logf("wrote %s", path)
	}
	if broken > 0 {
		fmt.Fprintf(stderr, "bench: %d scenario(s) broken\n", broken)
		return 1
	}
	return 0
}

func newRunner(ctx context.Context, nvimBin, hostBin string, log io.Writer) (*runner, error) {
	root, err := findRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "nvim-claude-bench-")
	if err != nil {
		return nil, err
	}
	r := &runner{root: root, tmp: tmp, log: log, editors: map[*editor]struct{}{}, procs: map[*exec.Cmd]struct{}{}}
	r.goBin = os.Getenv("GO")
	if r.goBin == "" {
		r.goBin = "go"
	}
	if nvimBin == "" {
		nvimBin = os.Getenv("NVIM_BIN")
	}
	if nvimBin == "" {
		nvimBin = filepath.Join(root, ".cache", "nvim", "0.12", "bin", "nvim")
	}
	if r.nvimBin, err = exec.LookPath(nvimBin); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("no Neovim at %s (make test-deps, or scripts/get-nvim 0.12, or -nvim): %w", nvimBin, err)
	}
	if r.nvimBin, err = filepath.Abs(r.nvimBin); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if hostBin == "" {
		hostBin = filepath.Join(tmp, "nvim-claude")
		r.logf("building the host (go build -trimpath ./cmd/nvim-claude)")
		if err := r.goBuild(ctx, hostBin, "./cmd/nvim-claude"); err != nil {
			_ = os.RemoveAll(tmp)
			return nil, err
		}
	}
	if r.hostBin, err = filepath.Abs(hostBin); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	r.echoBin = filepath.Join(tmp, "echo")
	if err := r.goBuild(ctx, r.echoBin, "./internal/bench/echo"); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return r, nil
}

func (r *runner) goBuild(ctx context.Context, out, pkg string) error {
	cmd := exec.CommandContext(ctx, r.goBin, "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = r.root
	// static, like `make` and the released hosts build it
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the nvim-claude checkout (go.mod not found)")
		}
		dir = parent
	}
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "bench: "+format+"\n", args...)
}

func (r *runner) track(e *editor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.editors[e] = struct{}{}
}

func (r *runner) untrack(e *editor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.editors, e)
}

// startProc starts a helper process (the echo server) in its own process
// group; cleanup kills it.
func (r *runner) startProc(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	r.mu.Lock()
	r.procs[cmd] = struct{}{}
	r.mu.Unlock()
	return nil
}

// stopProc ends a helper process: SIGTERM to its process group, SIGKILL
// after 3 s.
func (r *runner) stopProc(cmd *exec.Cmd) { r.signalProc(cmd, syscall.SIGTERM, 3*time.Second) }

// signalProc sends sig to a helper's process group, waits up to grace for it
// to exit, then kills the group.
func (r *runner) signalProc(cmd *exec.Cmd, sig syscall.Signal, grace time.Duration) {
	r.mu.Lock()
	_, ok := r.procs[cmd]
	delete(r.procs, cmd)
	r.mu.Unlock()
	if !ok || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// cleanup ends everything still running and removes the temporary files.
func (r *runner) cleanup() {
	r.mu.Lock()
	eds := make([]*editor, 0, len(r.editors))
	for e := range r.editors {
		eds = append(eds, e)
	}
	cmds := make([]*exec.Cmd, 0, len(r.procs))
	for c := range r.procs {
		cmds = append(cmds, c)
	}
	r.mu.Unlock()
	for _, e := range eds {
		e.close()
	}
	for _, c := range cmds {
		r.stopProc(c)
	}
	if r.keep {
		r.logf("kept %s", r.tmp)
		return
	}
	_ = os.RemoveAll(r.tmp)
}

// scenario is one group of figures of the table.
type scenario struct {
	id    string
	title string
	run   func(ctx context.Context, r *runner) (*section, error)
}

func scenarios() []scenario {
	return []scenario{
		{"go", "Go micro-benchmarks (JSON-RPC codec, selection coalescer)", runGoBench},
		{"8", "8: startup cost of setup()", runStartup},
		{"12", "12: first screen of Neovim's TUI (setup, auto_start)", runFirstScreen},
		{"9", "9: :ClaudeServe → lock file", runServe},
		{"11", "11: trivial tool round trip vs a bare WebSocket echo", runRoundTrip},
		{"1", "1–2: cursor moves: Neovim CPU and selection_changed latency", runCursor},
		{"6", "6–7: getDiagnostics and getOpenEditors with 500 buffers", runContext},
		{"3", "3–5, 10: openDiff, stalls, accept, memory", runDiff},
		{"20", "20: chat: stream → screen, and no delta lost", runChatStream},
		{"21", "21: chat: Neovim CPU per streamed delta", runChatCPU},
		{"22", "22: chat: long sessions (resume, typing while streaming)", runChatLong},
		{"23", "23: chat: host memory with 5 chats streaming", runChatMem},
		{"24", "24: dictation: stop → text", runDictation},
		{"25", "25: sessions hooks: cost per tool call", runHooks},
		{"26", "26: review queue while a transcript grows", runTranscript},
		{"27", "27: remote: round trip and openDiff 1 MB through an SSH forward vs direct", runRemote},
	}
}
