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
// neither of the lists make test runs (PURE_PKGS, NVIM_PKGS), or in both:
// a new feature's tests would pass by never running, or run twice. The
// lists are what make itself expands them to (scripts/go-files reads them
// from go list).
func TestMakeTestRunsEveryPackage(t *testing.T) {
	root := "../.."
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	printer := filepath.Join(t.TempDir(), "print.mk")
	if err := os.WriteFile(printer, []byte("print-pkgs:\n\t@echo PURE_PKGS $(PURE_PKGS)\n\t@echo NVIM_PKGS $(NVIM_PKGS)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := exec.Command("make", "-s", "--no-print-directory", "-f", "Makefile", "-f", printer, "print-pkgs")
	mk.Dir = root
	mk.Env = append(os.Environ(), "MAKEFLAGS=")
	lists, err := mk.Output()
	if err != nil {
		t.Fatalf("make print-pkgs: %v", err)
	}
	var patterns []string
	for _, name := range []string{"PURE_PKGS", "NVIM_PKGS"} {
		m := regexp.MustCompile(`(?m)^` + name + `(.*)$`).FindSubmatch(lists)
		if m == nil || len(strings.Fields(string(m[1]))) == 0 {
			t.Fatalf("make expands %s to nothing:\n%s", name, lists)
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
	covered := func(rel string) int {
		n := 0
		for _, p := range patterns {
			p = strings.TrimPrefix(p, "./")
			if base, ok := strings.CutSuffix(p, "/..."); ok {
				if rel == base || strings.HasPrefix(rel, base+"/") {
					n++
				}
			} else if rel == p {
				n++
			}
		}
		return n
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
		switch n := covered(filepath.ToSlash(rel)); {
		case n == 0:
			t.Errorf("package ./%s has tests, but make test does not run it (scripts/go-files)", rel)
		case n > 1:
			t.Errorf("package ./%s is in both PURE_PKGS and NVIM_PKGS", rel)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages with tests found: the go list output was not read right", checked)
	}
}
