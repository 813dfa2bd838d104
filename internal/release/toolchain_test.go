package release

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app"
)

// oldGo is Go 1.22.12 (Ubuntu 24.04's Go), fetched from the module proxy
// into the module cache the way any Go 1.21+ fetches a toolchain
// (golang.org/toolchain@v0.0.1-go1.22.12.<os>-<arch>). The test skips, saying
// so, when the proxy cannot be reached.
func oldGo(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	modcache, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(modcache)), "golang.org",
		fmt.Sprintf("toolchain@v0.0.1-go1.22.12.%s-%s", runtime.GOOS, runtime.GOARCH), "bin", "go")
	if _, err := os.Stat(bin); err != nil {
		cmd := exec.CommandContext(ctx, "go", "version")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=go1.22.12")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("cannot fetch Go 1.22.12 from the module proxy to test with (%v): %s", err, out)
		}
	}
	if out, err := exec.Command(bin, "env", "GOVERSION").Output(); err != nil || strings.TrimSpace(string(out)) != "go1.22.12" {
		t.Fatalf("%s: %v %s", bin, err, out)
	}
	return bin
}

// TestMakeFetchesToolchain: with only Go 1.22 on hand and GOTOOLCHAIN=local
// in the environment (what Debian's and Go's own go.env may say), `make`
// does not refuse: it says that Go 1.22 fetches the toolchain go.mod names,
// that it overrides GOTOOLCHAIN for the build, shows go's progress, and
// builds a host that runs as this version.
func TestMakeFetchesToolchain(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches a toolchain and builds the host; -short skips it")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	goBin := oldGo(t)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "nvim-claude")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", root, "BIN="+bin, bin)
	cmd.Env = append(os.Environ(), "GO="+goBin, "GOTOOLCHAIN=local", "MAKEFLAGS=", "NVIM_CLAUDE_NVIM=/nonexistent")
	// the deadline kills make, not the go it started, which holds the
	// output pipe while its download stalls: stop waiting for it
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	for _, w := range []string{
		"is Go 1.22.12, older than the 1.25 the host needs; Go 1.22.12 can fetch Go 1.25 itself",
		"GOTOOLCHAIN=local in your environment is overridden with GOTOOLCHAIN=auto for this build",
		"fetched: go version go1.25",
		"building " + bin + " with go1.25",
		"built " + bin,
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("make's output lacks %q:\n%s", w, out)
		}
	}
	if v, err := exec.Command(bin, "-version").CombinedOutput(); err != nil || !strings.Contains(string(v), app.Version) {
		t.Errorf("the host make built: -version: %v %s", err, v)
	}
}

// TestMakeIgnoresGoWork: make builds the module as go.mod and go.sum pin
// it, whatever go.work is around ($GOWORK stands for one found above the
// checkout): a go.work could otherwise pick the toolchain and replace the
// host's dependencies.
func TestMakeIgnoresGoWork(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"go.work": "go 1.21\n\nuse ./other\n", "other/go.mod": "module other\n\ngo 1.21\n"} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "nvim-claude")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", root, "BIN="+bin, bin)
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(work, "go.work"), "MAKEFLAGS=", "NVIM_CLAUDE_NVIM=/nonexistent")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make with a foreign go.work: %v\n%s", err, out)
	}
	checkStatic(t, bin)
}

// checkStatic fails unless the ELF binary at path has no program
// interpreter: make builds the host as the releases are (CGO_ENABLED=0),
// which spares the dynamic loader's work at every start of the host and of
// each hook process.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return // an ELF check; the release tests check the other formats
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("the built host: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (it has a PT_INTERP): built with cgo", path)
		}
	}
}
