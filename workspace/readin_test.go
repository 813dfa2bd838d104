package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadIn(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"in/a.md": "abcdef", "out.md": "secret"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "out.md"), filepath.Join(in, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../out.md", filepath.Join(in, "rel.md")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		max   int64
		want  string
		whole bool
		ok    bool
	}{
		{"a.md", 100, "abcdef", true, true},
		{"a.md", 6, "abcdef", true, true},
		{"a.md", 4, "abcd", false, true},
		{"link.md", 100, "", false, false},
		{"rel.md", 100, "", false, false},
		{"../out.md", 100, "", false, false},
		{"..", 100, "", false, false},
		{".", 100, "", false, false},
		{"", 100, "", false, false},
		{"missing.md", 100, "", false, false},
	} {
		got, whole, err := ReadIn(in, tc.name, tc.max)
		if (err == nil) != tc.ok || string(got) != tc.want || whole != tc.whole {
			t.Errorf("ReadIn(%q, %d) = %q, %v, %v; want %q, %v, ok %v", tc.name, tc.max, got, whole, err, tc.want, tc.whole, tc.ok)
		}
	}
}
