package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// With a mapping, a far path a client names is judged as the local one by
// the same boundary and deny-list; a far path outside the mapping is
// refused naming it even when the same path exists locally; the lock's
// folders are spelled the far way.
func TestFarMapCheckAndLock(t *testing.T) {
	root := t.TempDir()
	local := filepath.Join(root, "app")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.go", ".env"} {
		if err := os.WriteFile(filepath.Join(local, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := New()
	w.Boundary().Update(Settings{Deny: []string{"**/.env"}})
	w.SetCwd(local)
	var written [][]string
	w.SetLockWriter(func(f []string) error { written = append(written, f); return nil }, nil)
	m, err := pathmap.New("/workspaces/app", local, "")
	if err != nil {
		t.Fatal(err)
	}
	w.SetFolders([]string{local, "/elsewhere"})
	w.SetMap(m)
	if last := written[len(written)-1]; !slices.Equal(last, []string{"/workspaces/app"}) {
		t.Fatalf("lock folders = %q", last)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		in      string
		want    string
		refused error
	}{
		{"/workspaces/app/a.go", filepath.Join(local, "a.go"), nil},
		{"file:///workspaces/app/a.go", filepath.Join(local, "a.go"), nil},
		{"a.go", filepath.Join(local, "a.go"), nil},
		{"/workspaces/app/.env", "", ErrDenied},
		// the local spelling is not a far path: refused, not opened
		{filepath.Join(local, "a.go"), "", ErrOutside},
		{"/workspaces/other/a.go", "", ErrOutside},
		{`C:\workspaces\app\a.go`, "", ErrInvalid},
	} {
		p, err := w.Check(ctx, tc.in, Read, nil)
		if tc.refused != nil {
			if !errors.Is(err, tc.refused) || !Refused(err) {
				t.Errorf("Check(%q) err = %v, want %v", tc.in, err, tc.refused)
			}
			if tc.refused != ErrDenied && !strings.Contains(err.Error(), strconv.Quote(tc.in)) {
				t.Errorf("Check(%q): the refusal %q does not name the path", tc.in, err)
			}
			continue
		}
		if err != nil || p.Abs != tc.want {
			t.Errorf("Check(%q) = %q, %v; want %q", tc.in, p.Abs, err, tc.want)
		}
	}
	if got, err := w.FarURI(filepath.Join(local, "a.go")); err != nil || got != "file:///workspaces/app/a.go" {
		t.Errorf("FarURI = %q, %v", got, err)
	}
	if _, err := w.Far("/etc/passwd"); !Refused(err) {
		t.Errorf("Far(outside) err = %v", err)
	}
	w.SetMap(pathmap.Map{})
	if got, err := w.Far("/etc/passwd"); err != nil || got != "/etc/passwd" {
		t.Errorf("without a mapping Far = %q, %v", got, err)
	}
}
