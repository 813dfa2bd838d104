package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repoRoot is the checkout, from this package's directory.
const repoRoot = "../.."

// TestMakeRebuildsHostOnAnyEdit: an edit in any package the host is built
// from — a Go file of each of its packages, each of its embedded files — makes `make`
// rebuild bin/nvim-claude, and with no edit the host is up to date. The
// Makefile's list of sources is read from `go list`, so a package added or
// renamed cannot be missed. (make -n -W FILE: "what if FILE had just
// changed", without running anything; BIN points at a scratch file newer
// than every source.)
func TestMakeRebuildsHostOnAnyEdit(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	goList := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
		`{{if not .Standard}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .EmbedFiles ","}}{{end}}`, "./cmd/nvim-claude")
	goList.Dir = root
	list, err := goList.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "nvim-claude")
	if err := os.WriteFile(bin, []byte("host"), 0o755); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, future, future); err != nil {
		t.Fatal(err)
	}
	rebuilds := func(t *testing.T, what ...string) bool {
		t.Helper()
		args := []string{"-C", root, "-n", "BIN=" + bin}
		for _, f := range what {
			args = append(args, "-W", f)
		}
		cmd := exec.CommandContext(ctx, "make", append(args, bin)...)
		cmd.Env = append(os.Environ(), "MAKEFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		return strings.Contains(string(out), "scripts/build-host")
	}
	if rebuilds(t) {
		t.Fatal("make rebuilds a host newer than every source")
	}
	var pkgs int
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 4 || !strings.HasPrefix(parts[1], root+string(filepath.Separator)) {
			continue // a dependency in the module cache
		}
		pkgs++
		rel, _ := filepath.Rel(root, parts[1])
		// one Go file a package (each costs a make run), every embedded file
		files := strings.Split(parts[2], ",")[:1]
		if parts[3] != "" {
			files = append(files, strings.Split(parts[3], ",")...)
		}
		for _, f := range files {
			f := filepath.Join(rel, f)
			t.Run(f, func(t *testing.T) {
				if !rebuilds(t, f) {
					t.Errorf("an edit of %s (package %s) does not rebuild the host", f, parts[0])
				}
			})
		}
	}
	if pkgs < 10 {
		t.Fatalf("go list named %d packages of this module: %s", pkgs, list)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if !rebuilds(t, f) {
			t.Errorf("an edit of %s does not rebuild the host", f)
		}
	}
}
