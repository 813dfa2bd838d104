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

// The proposal directories of hosts that are gone are
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

// The host reads an accepted text only from the file it named for it: a
// regular proposal-*.accepted file in one of its own proposal directories.
func TestReadAcceptedRefusesOtherFiles(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var p proposals
	t.Cleanup(p.close)
	pf, err := p.write("proposal\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pf.Accepted, []byte("accepted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(pf.File)
	other := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-x", proposalDirPrefix, os.Getpid()+1))
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "proposal-link.accepted")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	subdir := filepath.Join(dir, "proposal-dir.accepted")
	if err := os.Mkdir(subdir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path, want string
	}{
		{"the named file", pf.Accepted, "accepted\n"},
		{"the same through ..", filepath.Join(dir, "..", filepath.Base(dir), filepath.Base(pf.Accepted)), "accepted\n"},
		{"the proposal itself", pf.File, ""},
		{"a file elsewhere", secret, ""},
		{"another host's directory", filepath.Join(other, "proposal-1.accepted"), ""},
		{"a symlink out", link, ""},
		{"a directory", subdir, ""},
		{"relative", "proposal-1.accepted", ""},
	} {
		got, err := readAccepted(tt.path)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: read %q, want a refusal", tt.name, got)
			}
		} else if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
