package archtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLayoutDocsNameEveryPackage: README's Layout paragraph and
// :help nvim-claude-layout name every package of the module (internal/
// aside), so that the map a newcomer reads cannot drift from the code.
func TestLayoutDocsNameEveryPackage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := Load(ctx, "../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := section(t, "../../README.md", "Layout (", "\n\n")
	help := section(t, "../../doc/nvim-claude.txt", "*nvim-claude-layout*", "*nvim-claude-remote*")
	for p := range g {
		if p == "." || strings.HasPrefix(p, "internal/") {
			continue
		}
		for name, text := range map[string]string{"README.md's Layout": readme, ":help nvim-claude-layout": help} {
			if !strings.Contains(text, "`"+p+"`") && !strings.Contains(text, "`"+p+"/`") {
				t.Errorf("%s does not name the package %s", name, p)
			}
		}
	}
}

// section is the text of file from the first from to the next to after it.
func section(t *testing.T, file, from, to string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("%s: no %q", file, from)
	}
	s = s[i:]
	if j := strings.Index(s[len(from):], to); j >= 0 {
		s = s[:len(from)+j]
	}
	return s
}
