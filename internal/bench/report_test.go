//go:build linux

package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// absPath finds an absolute path in text: a slash that starts a word (after
// a space, a quote, a backtick, "(", "=" or ":") followed by a name.
var absPath = regexp.MustCompile("(^|[\\s`'\"(=:])/[A-Za-z0-9._~-]")

// TestReportNamesNoPathOfTheMachine: BENCHMARKS.md is committed, so its
// machine section, its command lines and the sections' write-ups name the
// repository's files relative to it and no directory of the machine the
// run was on (not the checkout, not the temporary directory, not $HOME).
func TestReportNamesNoPathOfTheMachine(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	root := filepath.Join(home, "src", "nvim-claude")
	tmp := filepath.Join(t.TempDir(), "nvim-claude-bench-123")
	cache := filepath.Join(home, "shared", ".cache", "nvim", "0.12", "bin", "nvim")
	tests := []struct {
		name    string
		nvimBin string
		args    []string
		body    string
	}{
		{"make bench", filepath.Join(root, ".cache", "nvim", "0.12", "bin", "nvim"),
			[]string{"go", "run", "./internal/bench", "-nvim", filepath.Join(root, ".cache", "nvim", "0.12", "bin", "nvim"), "-host", filepath.Join(root, "bin", "nvim-claude")}, "plain"},
		{"shared cache", cache,
			[]string{"go", "run", "./internal/bench", "-nvim=" + cache, "-host", filepath.Join(root, "bin", "nvim-claude"), "-out", filepath.Join(home, "b.md")}, "plain"},
		{"Neovim elsewhere", "/opt/neovim/bin/nvim",
			[]string{"go", "run", "./internal/bench", "-nvim", "/opt/neovim/bin/nvim"}, "`/opt/neovim/bin/nvim --headless --startuptime <log>`"},
		{"Neovim in a shared cache outside the checkout", "/srv/shared/.cache/nvim/0.12/bin/nvim",
			[]string{"go", "run", "./internal/bench"}, "`/srv/shared/.cache/nvim/0.12/bin/nvim -u <init.lua> -i NONE -n mark.txt`"},
		{"write-up with paths", cache, []string{"go", "run", "./internal/bench"},
			"log at " + filepath.Join(tmp, "nvim-1", "nvim-claude.log") + ", config `" + filepath.Join(home, ".config", "nvim") + "`, file " + filepath.Join(root, "lua", "claude", "init.lua")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{root: root, tmp: tmp, nvimBin: tt.nvimBin, hostBin: filepath.Join(root, "bin", "nvim-claude"),
				goBin: "go", log: io.Discard, args: tt.args}
			sec := &section{id: "3", title: "3: a scenario"}
			sec.printf("%s\n", tt.body)
			sec.add(row{order: 3, num: "3", scenario: "s", figure: "f", result: "r", spread: "s", target: "t", verdict: verdictInfo, ref: "—"})
			out := r.report([]*section{sec})
			for i, line := range strings.Split(out, "\n") {
				if m := absPath.FindString(line); m != "" {
					t.Errorf("line %d names an absolute path (%q): %s", i+1, m, line)
				}
				if strings.Contains(line, home) {
					t.Errorf("line %d names $HOME: %s", i+1, line)
				}
			}
			if strings.Contains(strings.Join(tt.args, " "), "-host") && !strings.Contains(out, "-host bin/nvim-claude") {
				t.Errorf("the command line does not name the host relative to the repository:\n%s", out[:min(len(out), 600)])
			}
		})
	}
	if _, err := os.Stat(root); err == nil {
		t.Fatal("the test made the fake checkout")
	}
}
