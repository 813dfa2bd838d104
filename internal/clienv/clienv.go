// Package clienv prepares the real Claude Code CLI for tests: it finds the
// pinned binary and builds an isolated home, config dir and environment in
// which the CLI talks only to a fake Messages API and shows no first-run
// dialog.
package clienv

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// Version is the Claude Code CLI version the tests pin (env CLAUDE_VERSION
// overrides it).
const Version = "2.1.332"

// Binary returns the path of the claude binary for tests: env CLAUDE_BIN if
// set, else <cache>/claude/<version>/node_modules/.bin/claude, where cache
// is env CACHE_DIR or <repo root>/.cache (as for scripts/install-claude) and
// version is env CLAUDE_VERSION or [Version]. If the binary is missing the
// test is skipped with the command that installs it, or fails when env CI
// is "true".
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("CLAUDE_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("CLAUDE_BIN=%s: %v", bin, err)
		}
		return bin
	}
	version := os.Getenv("CLAUDE_VERSION")
	if version == "" {
		version = Version
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("CACHE_DIR")
	if cache == "" {
		cache = filepath.Join(root, ".cache")
	}
	bin := filepath.Join(cache, "claude", version, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	install := "scripts/install-claude"
	if version != Version {
		install += " " + version
	}
	msg := "the Claude Code CLI " + version + " is not installed at " + bin +
		"; install it with: (cd " + root + " && " + install + ")"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// RepoRoot returns the nearest directory at or above the working directory
// that holds a go.mod file.
func RepoRoot() (string, error) {
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
			return "", errors.New("clienv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// loopback lists the local addresses that must bypass any proxy.
const loopback = "localhost,127.0.0.1,::1"

// Env is an isolated environment for one run of the CLI.
type Env struct {
	// Home is a fresh temporary directory used as HOME.
	Home string
	// ConfigDir is CLAUDE_CONFIG_DIR, <Home>/cfg; it holds the seeded
	// .claude.json.
	ConfigDir string
	// APIKey is the value of ANTHROPIC_API_KEY ([fakeapi.APIKey]).
	APIKey string
	// Vars are the variables to set for the CLI, as KEY=VALUE.
	Vars []string
}

// New makes an isolated environment for a CLI that talks to the Messages
// API at apiURL and runs in the directory cwd. It seeds
// <ConfigDir>/.claude.json so that onboarding is done, the API key is
// approved and cwd is trusted: the CLI starts straight at its prompt. The
// CLI's temp files go to <Home>/tmp. Everything is removed when the test
// ends.
func New(t testing.TB, apiURL string, cwd string) *Env {
	t.Helper()
	home := t.TempDir()
	// Runs before the temp dir goes (cleanups run last-registered first):
	// whatever still runs with this home — a CLI, a process it left behind
	// detached from any tree a test kills — is killed, so nothing writes
	// into the directory while it is removed.
	t.Cleanup(func() { killByEnv("HOME=" + home) })
	cfg := filepath.Join(home, "cfg")
	if err := os.Mkdir(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	e := &Env{Home: home, ConfigDir: cfg, APIKey: fakeapi.APIKey}
	seed, err := json.MarshalIndent(Seed(e.APIKey, cwd), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, ".claude.json"), seed, 0o600); err != nil {
		t.Fatal(err)
	}
	e.Vars = []string{
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + cfg,
		"ANTHROPIC_API_KEY=" + e.APIKey,
		"ANTHROPIC_BASE_URL=" + apiURL,
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		// Without it the interactive CLI clones the official plugin
		// marketplace from GitHub (ssh, then https) and fetches it from
		// downloads.claude.ai at startup, even with the variables above.
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1",
		// The CLI's temp files and its messaging socket (cc-socks/<pid>.sock,
		// unless XDG_RUNTIME_DIR is set) go here instead of /tmp, so they
		// go away with the test's temp dir.
		"CLAUDE_CODE_TMPDIR=" + tmp,
		// A proxy in the environment would otherwise get the loopback
		// requests to the fake API.
		"NO_PROXY=" + loopback,
		"no_proxy=" + loopback,
	}
	return e
}

// Seed returns the contents of .claude.json for a CLI that uses apiKey and
// runs in cwd: onboarding done, dark theme, the key approved (the CLI
// stores the last 20 characters of an approved key) and cwd trusted (under
// its own path and, if different, the path with symlinks resolved).
func Seed(apiKey, cwd string) map[string]any {
	trusted := map[string]any{"hasTrustDialogAccepted": true}
	projects := map[string]any{cwd: trusted}
	if resolved, err := filepath.EvalSymlinks(cwd); err == nil && resolved != cwd {
		projects[resolved] = trusted
	}
	return map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses": map[string]any{
			"approved": []string{KeyTail(apiKey)},
			"rejected": []string{},
		},
		"projects": projects,
	}
}

// KeyTail returns what the CLI records for an approved API key: its last 20
// characters after trimming spaces.
func KeyTail(key string) string {
	key = strings.TrimSpace(key)
	if len(key) > 20 {
		return key[len(key)-20:]
	}
	return key
}

// Map returns Vars as a map, e.g. for the env of a Lua jobstart/termopen.
func (e *Env) Map() map[string]string {
	m := make(map[string]string, len(e.Vars))
	for _, kv := range e.Vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// Environ returns the environment for a child process (the CLI, or a Neovim
// that starts it): the test's own environment without the variables that
// Vars sets and without those that would steer the CLI elsewhere
// (ANTHROPIC_*, CLAUDE*, proxies), followed by Vars.
func (e *Env) Environ() []string {
	set := e.Map()
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok && inherited(k) {
			out = append(out, kv)
		}
	}
	return append(out, e.Vars...)
}

// inherited reports whether the variable k of the test's environment may
// pass to the CLI.
func inherited(k string) bool {
	up := strings.ToUpper(k)
	for _, p := range []string{"ANTHROPIC_", "CLAUDE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"} {
		if strings.HasPrefix(up, p) {
			return false
		}
	}
	return true
}

// killByEnv kills every process of this user whose environment holds kv
// exactly, and waits (a few seconds at most) for them to be gone.
func killByEnv(kv string) {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range strings.Split(string(b), "\x00") {
			if v == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	for _, pid := range pids {
		killPID(pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			if err != nil {
				break // gone
			}
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				break // a zombie writes nothing
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
