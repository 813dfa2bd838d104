package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/testhome"
)

// TestMakeRun: `make run DIR=<project>` opens Neovim in that project with
// this checkout's plugin and the host make built, and a second run, with
// nothing to rebuild, prints no "Nothing to be done" from make. (nvim and
// claude on PATH are stand-ins that say where and how they were started.)
func TestMakeRun(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "nvim-claude")
	tools := t.TempDir()
	for name, body := range map[string]string{
		"nvim":   "#!/bin/sh\necho \"cwd=$(pwd)\"\nfor a; do echo \"arg=$a\"; done\n",
		"claude": "#!/bin/sh\necho 'claude stand-in'\n",
	} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	// make builds the host with go, which writes under $HOME/.config
	testhome.QuietGo(t, filepath.Join(home, ".config"))
	project := filepath.Join(home, "src", "app")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	makeRun := func(t *testing.T, dir string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "make", "-C", root, "run", "DIR="+dir, "BIN="+bin)
		cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"), "HOME="+home, "MAKEFLAGS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for i, dir := range []string{project, "~/src/app"} {
		out, err := makeRun(t, dir)
		if err != nil {
			t.Fatalf("make run DIR=%s: %v\n%s", dir, err, out)
		}
		for _, w := range []string{"cwd=" + project, "arg=set rtp^=" + root, "bin = '" + bin + "'", "arg=ClaudeStart", "project: " + project} {
			if !strings.Contains(out, w) {
				t.Errorf("make run DIR=%s: output lacks %q:\n%s", dir, w, out)
			}
		}
		if i > 0 && (strings.Contains(out, "Nothing to be done") || strings.Contains(out, "is up to date")) {
			t.Errorf("a second make run talks about make's targets:\n%s", out)
		}
	}
	// a project whose name has a space and a quote opens like any other
	odd := filepath.Join(home, "src", "bob's app")
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := makeRun(t, odd); err != nil || !strings.Contains(out, "cwd="+odd+"\n") {
		t.Errorf("make run DIR=%s: %v\n%s", odd, err, out)
	}
	if out, err := makeRun(t, filepath.Join(home, "nope")); err == nil || !strings.Contains(out, "is not a directory") {
		t.Errorf("make run DIR=<missing>: %v\n%s", err, out)
	}
}
