//go:build unix

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// TestPureLua runs tests/run.lua (what `make test-lua` runs on 0.12 with
// nvim -l) on this suite's Neovim line, 0.7 included: the pure modules'
// tests hold on every line the plugin supports.
func TestPureLua(t *testing.T) {
	root := nvimtest.RepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"-c", "luafile "+filepath.Join(root, "tests", "run.lua"))
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "XDG_STATE_HOME="+home, "XDG_CACHE_HOME="+home)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("tests/run.lua: %v", err)
	}
	m := regexp.MustCompile(`(?m)^([0-9]+) passed, 0 failed$`).FindSubmatch(out)
	if m == nil || string(m[1]) == "0" {
		t.Fatal("tests/run.lua did not end with 'N passed, 0 failed' for N > 0")
	}
}
