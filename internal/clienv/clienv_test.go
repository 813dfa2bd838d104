package clienv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// stopTB records how Binary ends a test instead of ending it.
type stopTB struct {
	testing.TB
	how string // "fatal" or "skip"
	msg string
}

// stopped is what stopTB panics with to end the call, as Goexit would.
type stopped struct{}

func (s *stopTB) Helper() {}
func (s *stopTB) Fatal(args ...any) {
	s.how, s.msg = "fatal", fmt.Sprint(args...)
	panic(stopped{})
}
func (s *stopTB) Fatalf(format string, args ...any) { s.Fatal(fmt.Sprintf(format, args...)) }
func (s *stopTB) Skip(args ...any) {
	s.how, s.msg = "skip", fmt.Sprint(args...)
	panic(stopped{})
}

// callBinary runs Binary and reports the path or how it stopped.
func callBinary(t *testing.T) (path, how, msg string) {
	tb := &stopTB{TB: t}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
			how, msg = tb.how, tb.msg
		}
	}()
	return Binary(tb), "", ""
}

func TestBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "claude")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	pinned := filepath.Join(cache, "claude", Version, "node_modules", ".bin", "claude")
	if err := os.MkdirAll(filepath.Dir(pinned), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pinned, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name     string
		env      map[string]string
		wantPath string
		wantHow  string
		wantMsg  string
	}{
		{"CLAUDE_BIN", map[string]string{"CLAUDE_BIN": exe}, exe, "", ""},
		{"CLAUDE_BIN missing", map[string]string{"CLAUDE_BIN": filepath.Join(dir, "nope")}, "", "fatal", "CLAUDE_BIN"},
		{"pinned in cache", map[string]string{"CACHE_DIR": cache}, pinned, "", ""},
		{"not installed", map[string]string{"CACHE_DIR": empty}, "", "skip", "scripts/install-claude)"},
		{"not installed in CI", map[string]string{"CACHE_DIR": empty, "CI": "true"}, "", "fatal", "scripts/install-claude)"},
		{"other version", map[string]string{"CACHE_DIR": cache, "CLAUDE_VERSION": "9.9.9"}, "", "skip", "scripts/install-claude 9.9.9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"CLAUDE_BIN", "CACHE_DIR", "CI", "CLAUDE_VERSION"} {
				t.Setenv(k, tt.env[k])
			}
			path, how, msg := callBinary(t)
			if path != tt.wantPath || how != tt.wantHow || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("Binary = %q, %s %q; want %q, %s containing %q", path, how, msg, tt.wantPath, tt.wantHow, tt.wantMsg)
			}
		})
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "module github.com/nvim-claude/nvim-claude") {
		t.Errorf("RepoRoot = %s: go.mod %q, %v", root, mod, err)
	}
}

func TestKeyTail(t *testing.T) {
	tests := []struct{ key, want string }{
		{"sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "ghijklmnopqrstuvwxyz"},
		{"  sk-ant-api03-abcdefghijklmnopqrstuvwxyz \n", "ghijklmnopqrstuvwxyz"},
		{"short", "short"},
		{fakeapi.APIKey, "ABCDEFGHIJKLMNOPQRST"},
	}
	for _, tt := range tests {
		if got := KeyTail(tt.key); got != tt.want {
			t.Errorf("KeyTail(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestSeed(t *testing.T) {
	resolved := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(resolved, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		cwd          string
		wantProjects []string
	}{
		{"plain directory", resolved, []string{resolved}},
		{"through a symlink", link, []string{link, resolved}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(Seed("sk-test-0123456789abcdefghijKLMN", tt.cwd))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				HasCompletedOnboarding bool   `json:"hasCompletedOnboarding"`
				Theme                  string `json:"theme"`
				CustomAPIKeyResponses  struct {
					Approved []string `json:"approved"`
					Rejected []string `json:"rejected"`
				} `json:"customApiKeyResponses"`
				Projects map[string]struct {
					HasTrustDialogAccepted bool `json:"hasTrustDialogAccepted"`
				} `json:"projects"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if !got.HasCompletedOnboarding || got.Theme != "dark" {
				t.Errorf("onboarding/theme wrong: %s", raw)
			}
			if a := got.CustomAPIKeyResponses; len(a.Approved) != 1 || a.Approved[0] != "0123456789abcdefghijKLMN"[4:] || a.Rejected == nil {
				t.Errorf("customApiKeyResponses wrong: %s", raw)
			}
			if len(got.Projects) != len(tt.wantProjects) {
				t.Errorf("projects %s, want %q", raw, tt.wantProjects)
			}
			for _, p := range tt.wantProjects {
				if !got.Projects[p].HasTrustDialogAccepted {
					t.Errorf("project %s not trusted: %s", p, raw)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "leak")
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "1")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	t.Setenv("https_proxy", "http://proxy.invalid:3128")
	t.Setenv("KEEP_ME", "yes")
	cwd := t.TempDir()
	e := New(t, "http://127.0.0.1:1234", cwd)

	if e.ConfigDir != filepath.Join(e.Home, "cfg") || e.APIKey != fakeapi.APIKey {
		t.Errorf("Env = %+v", e)
	}
	path := filepath.Join(e.ConfigDir, ".claude.json")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(Seed(e.APIKey, cwd), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(want) {
		t.Errorf(".claude.json = %s, want %s", raw, want)
	}

	m := e.Map()
	wantVars := map[string]string{
		"HOME":               e.Home,
		"CLAUDE_CONFIG_DIR":  e.ConfigDir,
		"ANTHROPIC_API_KEY":  fakeapi.APIKey,
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:1234",
		"DISABLE_TELEMETRY":  "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC":             "1",
		"DISABLE_AUTOUPDATER":                                  "1",
		"DISABLE_ERROR_REPORTING":                              "1",
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
		"CLAUDE_CODE_TMPDIR":                                   filepath.Join(e.Home, "tmp"),
		"NO_PROXY":                                             "localhost,127.0.0.1,::1",
		"no_proxy":                                             "localhost,127.0.0.1,::1",
	}
	if len(m) != len(wantVars) || len(e.Vars) != len(wantVars) {
		t.Errorf("Map = %v, want %v", m, wantVars)
	}
	for k, v := range wantVars {
		if m[k] != v {
			t.Errorf("Map[%s] = %q, want %q", k, m[k], v)
		}
	}

	env := map[string][]string{}
	for _, kv := range e.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = append(env[k], v)
	}
	tests := []struct {
		key  string
		want []string
	}{
		{"ANTHROPIC_AUTH_TOKEN", nil},
		{"CLAUDE_CODE_USE_BEDROCK", nil},
		{"HTTPS_PROXY", nil},
		{"https_proxy", nil},
		{"KEEP_ME", []string{"yes"}},
		{"HOME", []string{e.Home}},
		{"ANTHROPIC_BASE_URL", []string{"http://127.0.0.1:1234"}},
	}
	for _, tt := range tests {
		if strings.Join(env[tt.key], "|") != strings.Join(tt.want, "|") {
			t.Errorf("Environ %s = %q, want %q", tt.key, env[tt.key], tt.want)
		}
	}
}
