// Package nvimtest starts real headless Neovim children for tests, with the
// plugin's runtime files on 'runtimepath', and kills them when the test ends.
//
// The Neovim binary comes from NVIM_BIN (else nvim on PATH). Without one, a
// test is skipped — except under CI=true, where a missing Neovim fails it.
package nvimtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neovim/go-client/nvim"
)

// Bin returns the Neovim binary tests should use.
func Bin(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("NVIM_BIN"); b != "" {
		if abs, err := filepath.Abs(b); err == nil && strings.Contains(b, string(filepath.Separator)) {
			return abs
		}
		return b
	}
	if b, err := exec.LookPath("nvim"); err == nil {
		return b
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Neovim: set NVIM_BIN (scripts/get-nvim 0.12 prints one)")
	}
	t.Skip("no Neovim: set NVIM_BIN (scripts/get-nvim 0.12 prints one)")
	return ""
}

// RepoRoot is the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
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
			return "", fmt.Errorf("go.mod not found above %s", dir)
		}
		dir = parent
	}
}

// BuildHost builds cmd/nvim-claude (with -race when the tests run with it)
// into a new temporary directory. Call it once from TestMain and remove the
// directory afterwards.
func BuildHost() (path string, cleanup func(), err error) {
	root, err := findRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "nvim-claude-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	path = filepath.Join(dir, "nvim-claude")
	args := []string{"build", "-o", path}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/nvim-claude")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	return path, cleanup, nil
}

// Options configure a Neovim child.
type Options struct {
	Dir  string   // working directory (default: a new temp dir)
	Env  []string // extra KEY=VALUE
	Init string   // Lua run after the plugin is on 'runtimepath'
	// NoPlugin leaves the plugin off 'runtimepath' (for baselines).
	NoPlugin bool
}

// Nvim is a running headless Neovim child.
type Nvim struct {
	*nvim.Nvim
	Dir string
	t   testing.TB
}

// Start launches `nvim --embed --headless --clean` with the repository on
// 'runtimepath' (so plugin/claude.lua is sourced) and registers cleanup.
func Start(t testing.TB, o Options) *Nvim {
	t.Helper()
	bin := Bin(t)
	root := RepoRoot(t)
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"--embed", "--headless", "--clean", "-n", "-i", "NONE"}
	if !o.NoPlugin {
		args = append(args, "--cmd", "set rtp^="+root, "--cmd", "runtime! plugin/claude.lua")
	}
	env := append(os.Environ(), o.Env...)
	v, err := nvim.NewChildProcess(
		nvim.ChildProcessCommand(bin),
		nvim.ChildProcessArgs(args...),
		nvim.ChildProcessDir(o.Dir),
		nvim.ChildProcessEnv(env),
		nvim.ChildProcessContext(ctx),
		nvim.ChildProcessLogf(t.Logf),
	)
	if err != nil {
		cancel()
		t.Fatalf("start %s: %v", bin, err)
	}
	n := &Nvim{Nvim: v, Dir: o.Dir, t: t}
	t.Cleanup(func() {
		// A graceful exit lets Neovim stop its jobs (the Go host, the CLI);
		// the context then kills whatever is left.
		done := make(chan struct{})
		go func() {
			_ = v.Command("qa!")
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * Slack * time.Second):
		}
		_ = v.Close()
		cancel()
	})
	if o.Init != "" {
		n.Exec(t, o.Init)
	}
	return n
}

// Exec runs Lua code and fails the test on error.
func (n *Nvim) Exec(t testing.TB, code string, args ...any) {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	if err := n.ExecLua(code, nil, args...); err != nil {
		t.Fatalf("lua: %v\n%s", err, code)
	}
}

// Eval runs Lua code whose return value is JSON-encoded in Neovim and
// decoded into out (which may be nil).
func (n *Nvim) Eval(t testing.TB, code string, out any, args ...any) {
	t.Helper()
	if err := n.TryEval(code, out, args...); err != nil {
		t.Fatalf("lua: %v\n%s", err, code)
	}
}

// TryEval is Eval that returns the error.
func (n *Nvim) TryEval(code string, out any, args ...any) error {
	if args == nil {
		args = []any{}
	}
	var s string
	wrapped := "local res = (function(...) " + code + " end)(...)\nreturn vim.json.encode(res == nil and vim.NIL or res)"
	if err := n.ExecLua(wrapped, &s, args...); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal([]byte(s), out)
}

// Slack stretches every failure guard in the tests: a wait that would
// pass given time must not fail because two cores were busy with -race.
const Slack = 3

// WaitFor polls cond (Lua returning a boolean-ish value) until it is truthy
// or timeout passes; on timeout it fails with msg and the last value of
// debug (Lua returning anything, may be empty). The timeout is a failure
// guard, never a timing assertion: it is stretched by Slack so that a loaded
// CI machine does not fail a test that would pass given time.
func (n *Nvim) WaitFor(t testing.TB, timeout time.Duration, cond, debug, msg string) {
	t.Helper()
	timeout *= Slack
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		err := n.TryEval("return not not ("+cond+")", &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			var dbg any
			if debug != "" {
				_ = n.TryEval(debug, &dbg)
			}
			t.Fatalf("timed out after %v waiting for %s (%s); err=%v; debug=%v", timeout, msg, cond, err, dbg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Lines returns a buffer's lines joined by newlines.
func (n *Nvim) Lines(t testing.TB, buf int) string {
	t.Helper()
	var lines []string
	n.Eval(t, "return vim.api.nvim_buf_get_lines(...)", &lines, buf, 0, -1, false)
	return strings.Join(lines, "\n")
}

// Gopls is the gopls that scripts/install-gopls builds into the cache
// (CACHE_DIR, else the repository's .cache), or GOPLS_BIN. Without one the
// test is skipped — or fails under CI=true, where `make test` installs it.
func Gopls(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("GOPLS_BIN"); b != "" {
		return b
	}
	cache := os.Getenv("CACHE_DIR")
	if cache == "" {
		cache = filepath.Join(RepoRoot(t), ".cache")
	}
	p := filepath.Join(cache, "gopls", "v0.23.0", "gopls")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	const msg = "gopls is not installed: run scripts/install-gopls (about 90 s the first time), or set GOPLS_BIN"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
