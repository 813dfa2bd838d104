//go:build unix

package nvimbridge

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Issue 14, finding 9: the proposal directories of hosts that are gone are
// swept at the next start; a live host's are not.
func TestSweepStaleProposals(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })

	old := time.Now().Add(-2 * legacyProposalAge)
	for _, tt := range []struct {
		name string
		mod  time.Time
		gone bool
	}{
		{fmt.Sprintf("%s%d-123", proposalDirPrefix, dead.Process.Pid), time.Now(), true},
		{fmt.Sprintf("%s%d-456", proposalDirPrefix, live.Process.Pid), old, false},
		{fmt.Sprintf("%s%d-789", proposalDirPrefix, os.Getpid()), old, false},
		{proposalDirPrefix + "1234567", old, true},         // named before the pid was in the name, old
		{proposalDirPrefix + "7654321", time.Now(), false}, // … and recent: maybe a running old host's
		{"nvim-claude-other-" + "1", old, false},           // not ours to sweep
	} {
		dir := filepath.Join(tmp, tt.name)
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "proposal-1"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, tt.mod, tt.mod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, err := os.Stat(dir)
			if gone := os.IsNotExist(err); gone != tt.gone {
				t.Errorf("%s: gone=%v, want %v", tt.name, gone, tt.gone)
			}
		})
	}
	if n := SweepStaleProposals(); n != 2 {
		t.Errorf("swept %d, want 2", n)
	}
}

// A host's own proposal directory carries its pid, and close removes it.
func TestProposalDirNamedByPIDAndRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var p proposals
	pf, err := p.write("hello\n")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s%d-", proposalDirPrefix, os.Getpid())
	if rel, _ := filepath.Rel(tmp, pf.File); len(rel) < len(want) || rel[:len(want)] != want {
		t.Fatalf("proposal %s is not under %s*", pf.File, want)
	}
	if fi, err := os.Stat(filepath.Dir(pf.File)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v %v", fi.Mode(), err)
	}
	p.close()
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
