package testkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// DenyCase is one row of the deny-list table (workspace/testdata/deny_table.json).
type DenyCase struct {
	Path string `json:"path"` // relative to HOME
	// Denied is the verdict on a case-sensitive file system; FoldDenied,
	// when set, where names are compared without case (macOS, Windows).
	Denied     bool  `json:"denied"`
	FoldDenied *bool `json:"fold_denied"`
	// Rule is "glob" (the globs decide, symlink targets included) or
	// "identity" (another hard link: only the host's boundary knows).
	Rule string `json:"rule"`
	Text string `json:"text"` // a line of the file, to look for in what leaves
}

// Want is the verdict expected on this platform.
func (c DenyCase) Want() bool {
	if c.FoldDenied != nil && (runtime.GOOS == "darwin" || runtime.GOOS == "windows") {
		return *c.FoldDenied
	}
	return c.Denied
}

// DenyTable is the one table of deny-list cases that the host's judge and
// the plugin's sharing are both tested against.
type DenyTable struct {
	Deny      []string          `json:"deny"` // the default security.deny
	DenyExtra []string          `json:"deny_extra"`
	Files     map[string]string `json:"files"`
	Symlinks  map[string]string `json:"symlinks"`  // link → target (as written in the link)
	Hardlinks map[string]string `json:"hardlinks"` // new name → existing file, both relative to HOME
	Cases     []DenyCase        `json:"cases"`
}

// LoadDenyTable reads the table at path and builds its files under home.
func LoadDenyTable(t testing.TB, path, home string) DenyTable {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tb DenyTable
	if err := json.Unmarshal(b, &tb); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for name, text := range tb.Files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(p); err == nil {
			continue // a name differing only in case, on a case-insensitive file system
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range tb.Symlinks {
		if err := os.Symlink(target, filepath.Join(home, link)); err != nil {
			t.Fatal(err)
		}
	}
	for name, old := range tb.Hardlinks {
		if err := os.Link(filepath.Join(home, old), filepath.Join(home, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}
