package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeTestRunsEveryPackage fails when a package with tests is in
// neither of the Makefile's lists make test runs (PURE_PKGS, NVIM_PKGS): a
// new feature's tests would pass by never running.
func TestMakeTestRunsEveryPackage(t *testing.T) {
	root := "../.."
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, name := range []string{"PURE_PKGS", "NVIM_PKGS"} {
		m := regexp.MustCompile(`(?m)^` + name + ` :=(.*)$`).FindSubmatch(mk)
		if m == nil {
			t.Fatalf("Makefile has no %s", name)
		}
		patterns = append(patterns, strings.Fields(string(m[1]))...)
	}
	list := exec.Command("go", "list", "-f", "{{.Dir}} {{len .TestGoFiles}} {{len .XTestGoFiles}}", "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	covered := func(rel string) bool {
		for _, p := range patterns {
			p = strings.TrimPrefix(p, "./")
			if base, ok := strings.CutSuffix(p, "/..."); ok {
				if rel == base || strings.HasPrefix(rel, base+"/") {
					return true
				}
			} else if rel == p {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || (f[1] == "0" && f[2] == "0") {
			continue
		}
		rel, err := filepath.Rel(abs, f[0])
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if !covered(filepath.ToSlash(rel)) {
			t.Errorf("package ./%s has tests, but make test does not run it: add it to PURE_PKGS or NVIM_PKGS in the Makefile", rel)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages with tests found: the go list output was not read right", checked)
	}
}
