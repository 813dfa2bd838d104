//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// TestREADMELazySpecLoadsEveryCommand reads the commands and <Plug> mappings
// plugin/claude.lua defines (from a real Neovim) and the lazy.nvim spec in
// README.md and in doc/nvim-claude.txt: each must load the plugin eagerly (lazy = false), or list
// every command in `cmd` — otherwise a command or a <Plug> mapping it does
// not name does nothing until something else loads the plugin.
func TestREADMELazySpecLoadsEveryCommand(t *testing.T) {
	nv := nvimtest.Bin(t)
	root := nvimtest.RepoRoot(t)
	cmd := exec.Command(nv, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "set rtp^="+root,
		"-c", "runtime plugin/claude.lua",
		"-c", `call writefile([json_encode(keys(nvim_get_commands({})))], '/dev/stdout')`,
		"-c", "qa!")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	var names []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &names); err != nil {
		t.Fatalf("commands: %v\n%s", err, out)
	}
	var commands []string
	for _, n := range names {
		if strings.HasPrefix(n, "Claude") {
			commands = append(commands, n)
		}
	}
	if len(commands) < 10 {
		t.Fatalf("plugin/claude.lua defined only %v", commands)
	}
	for _, doc := range []struct{ file, pattern string }{
		{"README.md", "(?s)lazy\\.nvim:\\s*```lua\\n(.*?)```"},
		{"doc/nvim-claude.txt", "(?s)With lazy\\.nvim: >lua\\n(.*?)\\n<"},
	} {
		text, err := os.ReadFile(filepath.Join(root, doc.file))
		if err != nil {
			t.Fatal(err)
		}
		spec := regexp.MustCompile(doc.pattern).FindSubmatch(text)
		if spec == nil {
			t.Errorf("%s has no lazy.nvim spec (%s)", doc.file, doc.pattern)
			continue
		}
		if problems := lazySpecProblems(string(spec[1]), commands); len(problems) > 0 {
			t.Errorf("%s's lazy.nvim spec:\n%s\n%s", doc.file, strings.Join(problems, "\n"), spec[1])
		}
	}
}

// lazySpecProblems says what makes a lazy.nvim spec miss some of commands.
func lazySpecProblems(spec string, commands []string) []string {
	if regexp.MustCompile(`(?m)^\s*lazy\s*=\s*false\b`).MatchString(spec) {
		return nil
	}
	var problems []string
	for _, c := range commands {
		if !strings.Contains(spec, `"`+c+`"`) {
			problems = append(problems, "neither lazy = false nor :"+c+" in its cmd list")
		}
	}
	return problems
}

func TestLazySpecProblems(t *testing.T) {
	cmds := []string{"ClaudeStart", "ClaudeSend"}
	for _, tt := range []struct {
		name, spec string
		want       int
	}{
		{"eager", "{\n  \"x/y\",\n  lazy = false,\n}", 0},
		{"every command listed", `{ cmd = { "ClaudeStart", "ClaudeSend" } }`, 0},
		{"one missing", `{ cmd = { "ClaudeStart" } }`, 1},
		{"lazy = true is not eager", "{\n  lazy = true,\n}", 2},
		{"commented out", "{\n  -- lazy = false,\n}", 2},
	} {
		if got := lazySpecProblems(tt.spec, cmds); len(got) != tt.want {
			t.Errorf("%s: %d problems %v, want %d", tt.name, len(got), got, tt.want)
		}
	}
}
