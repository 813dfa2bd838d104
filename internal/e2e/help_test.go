//go:build unix

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// TestHelpResolvesFromAPlainPackage installs the plugin as a plain package
// the way the README says (a copy under pack/*/start, then the build's help
// step) and asks Neovim for its help tags: each must open nvim-claude.txt,
// not fail with E149 as it did when nothing generated doc/tags.
func TestHelpResolvesFromAPlainPackage(t *testing.T) {
	nv := nvimtest.Bin(t)
	root := nvimtest.RepoRoot(t)
	pack := t.TempDir()
	plug := filepath.Join(pack, "pack", "claude", "start", "nvim-claude")
	for _, d := range []string{"doc", "lua", "plugin", "scripts"} {
		cp := exec.Command("cp", "-r", filepath.Join(root, d), filepath.Join(plug, d))
		if err := os.MkdirAll(plug, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := cp.CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", d, err, out)
		}
	}
	_ = os.Remove(filepath.Join(plug, "doc", "tags")) // as in a fresh clone
	if out, err := exec.Command(filepath.Join(plug, "scripts", "helptags")).CombinedOutput(); err != nil {
		t.Fatalf("scripts/helptags: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", root, "check-ignore", "-q", "doc/tags").CombinedOutput(); err != nil {
		t.Errorf("doc/tags is not gitignored (a generated file would show in git status): %v %s", err, out)
	}
	for _, tag := range []string{"nvim-claude", ":ClaudeStart", "claude-config"} {
		t.Run(tag, func(t *testing.T) {
			cmd := exec.Command(nv, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "set packpath^="+pack,
				"-c", "packloadall",
				"-c", "try | help "+tag+" | call writefile([expand('%:t')], '/dev/stdout') | catch | call writefile([v:exception], '/dev/stdout') | endtry",
				"-c", "qa!")
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("nvim: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); !strings.HasSuffix(got, "nvim-claude.txt") {
				t.Errorf(":help %s opened %q, want nvim-claude.txt", tag, got)
			}
		})
	}
}
