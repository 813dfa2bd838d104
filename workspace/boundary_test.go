package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The deny-list the Lua side sends by default (lua/claude/config.lua).
var defaultDeny = []string{"~/.ssh/*", "*.pem", "*.key", "~/.aws/*", "~/.gnupg/*", "~/.kube/config",
	"~/.docker/config.json", "~/.config/gh/hosts.yml", "~/.git-credentials", "~/.netrc", "~/.npmrc", "~/.pypirc",
	".env", ".env.*", "id_rsa*", "id_ed25519*", "id_ecdsa*", ".netrc"}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGlobsMatchLikeTheLuaMatcher(t *testing.T) {
	home := "/home/u"
	for _, tt := range []struct {
		glob, path string
		want       bool
	}{
		{".env", "/p/.env", true},
		{".env", "/p/sub/.env", true},
		{".env", "/p/.envrc", false},
		{".env.*", "/p/.env.local", true},
		{"*.pem", "/p/a/b/cert.pem", true},
		{"*.pem", "/p/cert.pem.txt", false},
		{"id_rsa*", "/home/u/.ssh/id_rsa.pub", true},
		{"~/.ssh/*", "/home/u/.ssh/id_ecdsa", true},
		{"~/.ssh/*", "/home/u/.ssh/sub/key", true}, // "*" crosses "/", as glob2regpat's does
		{"~/.ssh/*", "/p/.ssh/id_ecdsa", false},
		{"~/.aws/*", "/home/u/.aws/credentials", true},
		{"~/.kube/config", "/home/u/.kube/config", true},
		{"secrets/*.txt", "/p/secrets/a.txt", true}, // relative with "/": anywhere in the path
		{"secrets/*.txt", "/p/x/secrets/a.txt", true},
		{"secrets/*.txt", "/p/secret/a.txt", false},
		{"/etc/shadow", "/etc/shadow", true},
		{"*.{key,crt}", "/p/a.crt", true},
		{"[ab].txt", "/p/a.txt", true},
		{"[!ab].txt", "/p/a.txt", false},
		{"?.txt", "/p/ab.txt", false},
	} {
		pats := compileGlobs([]string{tt.glob}, home)
		if got := matchAny(pats, tt.path); got != tt.want {
			t.Errorf("%q on %q: %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "proj")
	other := filepath.Join(home, "lib")
	outside := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "a")
	write(t, filepath.Join(ws, ".env"), "SECRET=1")
	write(t, filepath.Join(ws, "config", ".env.local"), "SECRET=2")
	write(t, filepath.Join(other, "b.txt"), "b")
	write(t, filepath.Join(outside, "o.txt"), "o")
	write(t, filepath.Join(home, ".ssh", "id_ecdsa"), "KEY")
	write(t, filepath.Join(home, ".bashrc"), "rc")
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "a.txt"), filepath.Join(ws, "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(ws, "innocent")); err != nil {
		t.Fatal(err)
	}
	b := NewBoundary(Settings{Home: home, Deny: defaultDeny})
	open := func(abs string) bool { return abs == filepath.Join(outside, "o.txt") }
	for _, tt := range []struct {
		name    string
		folders []string
		path    string
		access  Access
		isOpen  func(string) bool
		want    error // nil: allowed
		rel     string
	}{
		{"relative inside", []string{ws}, "a.txt", Read, nil, nil, "a.txt"},
		{"absolute inside", []string{ws}, filepath.Join(ws, "a.txt"), Write, nil, nil, "a.txt"},
		{"second folder", []string{ws, other}, filepath.Join(other, "b.txt"), Read, nil, nil, filepath.Join(other, "b.txt")},
		{"empty", []string{ws}, "", Read, nil, ErrInvalid, ""},
		{"dotdot", []string{ws}, "../lib/b.txt", Read, nil, ErrInvalid, ""},
		{"NUL", []string{ws}, "a\x00b", Read, nil, ErrInvalid, ""},
		{"outside", []string{ws}, filepath.Join(outside, "o.txt"), Read, nil, ErrOutside, ""},
		{"outside but open: read", []string{ws}, filepath.Join(outside, "o.txt"), Read, open, nil, filepath.Join(outside, "o.txt")},
		{"outside but open: write", []string{ws}, filepath.Join(outside, "o.txt"), Write, open, ErrOutside, ""},
		{"symlink leads out", []string{ws}, "out/o.txt", Read, nil, ErrOutside, ""},
		{"absolute symlink inside", []string{ws}, "abs-link", Read, nil, nil, "abs-link"},
		{"deny-listed name", []string{ws}, ".env", Read, nil, ErrDenied, ""},
		{"deny-listed deeper", []string{ws}, "config/.env.local", Show, nil, ErrDenied, ""},
		{"symlink to a deny-listed file", []string{ws}, "innocent", Read, nil, ErrDenied, ""},
		{"home as the workspace", []string{home}, ".bashrc", Write, nil, ErrHome, ""},
		{"home key", []string{home}, ".ssh/id_ecdsa", Read, nil, ErrHome, ""},
		{"root as the workspace", []string{"/"}, "etc/hostname", Read, nil, ErrHome, ""},
		{"home folder but a project folder holds it", []string{home, ws}, filepath.Join(ws, "a.txt"), Read, nil, nil, "proj/a.txt"},
		{"git dir write", []string{ws}, ".git/config", Write, nil, ErrGitDir, ""},
		{"git dir deeper write", []string{ws}, "sub/.git/hooks/pre-commit", Write, nil, ErrGitDir, ""},
		{"git dir read", []string{ws}, ".git/config", Read, nil, nil, ".git/config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := b.Resolve(tt.folders, tt.path, tt.access, tt.isOpen)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if p.Rel != tt.rel {
					t.Errorf("Rel %q, want %q", p.Rel, tt.rel)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v (%+v), want %v", err, p, tt.want)
			}
		})
	}
}

func TestHomeAllowedOnRequestKeepsTheDenyList(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, "notes.txt"), "n")
	write(t, filepath.Join(home, ".ssh", "id_ecdsa"), "KEY")
	write(t, filepath.Join(home, ".aws", "credentials"), "AWS")
	b := NewBoundary(Settings{Home: home, AllowHome: true, Deny: defaultDeny})
	if _, err := b.Resolve([]string{home}, "notes.txt", Read, nil); err != nil {
		t.Fatalf("allow_home: %v", err)
	}
	for _, p := range []string{".ssh/id_ecdsa", ".aws/credentials"} {
		if _, err := b.Resolve([]string{home}, p, Read, nil); !errors.Is(err, ErrDenied) {
			t.Errorf("%s with allow_home: %v, want denied", p, err)
		}
	}
}

// A hard link to a deny-listed file is that file under another name: it is
// denied by its identity, both when resolving and when reading.
func TestHardLinkToADenyListedFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("identity needs unix stat data")
	}
	ws := t.TempDir()
	write(t, filepath.Join(ws, ".env"), "SECRET=1")
	write(t, filepath.Join(ws, "plain.txt"), "plain")
	if err := os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	b := NewBoundary(Settings{Home: t.TempDir(), Deny: defaultDeny})
	if _, err := b.Resolve([]string{ws}, "notes.txt", Read, nil); !errors.Is(err, ErrDenied) {
		t.Fatalf("hard link: %v, want denied", err)
	}
	p, err := b.Resolve([]string{ws}, "plain.txt", Read, nil)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := b.ReadFile(p, 1<<20); err != nil || string(data) != "plain" {
		t.Fatalf("plain read: %q %v", data, err)
	}
	// Linked after the check: the read itself refuses.
	if err := os.Remove(filepath.Join(ws, "plain.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "plain.txt")); err != nil {
		t.Fatal(err)
	}
	if data, err := b.ReadFile(p, 1<<20); !errors.Is(err, ErrDenied) {
		t.Fatalf("read of a file linked after the check: %q %v, want denied", data, err)
	}
}

func TestWriteFile(t *testing.T) {
	ws := t.TempDir()
	b := NewBoundary(Settings{Home: t.TempDir()})
	write(t, filepath.Join(ws, "x.sh"), "old")
	if err := os.Chmod(filepath.Join(ws, "x.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, text string }{
		{"x.sh", "new"},
		{"deep/er/new.txt", "fresh"},
	} {
		p, err := b.Resolve([]string{ws}, tt.path, Write, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.WriteFile(p, []byte(tt.text)); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(ws, tt.path))
		if string(got) != tt.text {
			t.Errorf("%s: %q", tt.path, got)
		}
	}
	if fi, _ := os.Stat(filepath.Join(ws, "x.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755 kept", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(ws, "deep/er/new.txt")); fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", fi.Mode().Perm())
	}
	// A directory in the way: an error, the directory untouched, no temporary left.
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := b.Resolve([]string{ws}, "d", Write, nil)
	if err == nil {
		err = b.WriteFile(p, []byte("x"))
	}
	if err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	assertNoTemporaries(t, ws)
}

// Remove removes a regular file beneath its folder; a directory of the
// path swapped for a symlink leading out after Resolve cannot make it
// remove the file outside, nor can a symlink in the file's place.
func TestRemove(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	b := NewBoundary(Settings{Home: t.TempDir()})
	write(t, filepath.Join(ws, "d", "f.txt"), "x")
	write(t, filepath.Join(out, "f.txt"), "keep")
	p, err := b.Resolve([]string{ws}, "d/f.txt", Write, nil)
	if err != nil {
		t.Fatal(err)
	}
	// d is swapped for a symlink to out between the check and the remove.
	if err := os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "d.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(p); err == nil {
		t.Fatal("removed through a swapped directory")
	}
	if got, _ := os.ReadFile(filepath.Join(out, "f.txt")); string(got) != "keep" {
		t.Fatalf("the file outside: %q", got)
	}
	p, err = b.Resolve([]string{ws}, "d.old/f.txt", Write, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "d.old", "f.txt")); !os.IsNotExist(err) {
		t.Fatalf("f.txt after Remove: %v", err)
	}
}

func assertNoTemporaries(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".nvim-claude-") {
			t.Errorf("temporary left behind: %s", path)
		}
		return nil
	})
}

// TestSymlinkRaceStaysInside writes d/w-N.txt in a loop while another
// goroutine swaps the workspace directory d with a symlink to a directory
// outside: no write may land outside, and no temporary may be left.
func TestSymlinkRaceStaysInside(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	d := filepath.Join(ws, "d")
	real := filepath.Join(ws, "d.real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBoundary(Settings{Home: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() { // the attacker
		defer wg.Done()
		link := filepath.Join(ws, "d.link")
		for ctx.Err() == nil {
			_ = os.Remove(link)
			_ = os.Symlink(outside, link)
			_ = os.Rename(d, real+".tmp") // d moves away …
			_ = os.Rename(link, d)        // … and a symlink leading out takes its place
			_ = os.Remove(d)
			_ = os.Rename(real+".tmp", d)
			swaps.Add(1)
		}
	}()
	const n = 2000
	ok, refused := 0, 0
	for i := 0; i < n; i++ {
		p, err := b.Resolve([]string{ws}, fmt.Sprintf("d/w-%d.txt", i), Write, nil)
		if err == nil {
			err = b.WriteFile(p, []byte("x"))
		}
		if err == nil {
			ok++
		} else {
			refused++
		}
	}
	cancel()
	wg.Wait()
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		t.Errorf("written outside the workspace: %s", e.Name())
	}
	assertNoTemporaries(t, ws)
	t.Logf("%d writes: %d written inside, %d refused, %d swaps, %d files outside", n, ok, refused, swaps.Load(), len(entries))
	if swaps.Load() == 0 {
		t.Fatal("the attacker never swapped: the test proved nothing")
	}
}

// TestListFilesRunsNoRepositoryProgram: a repository whose .git/config
// names a core.fsmonitor command must not run it when its files are listed.
func TestListFilesRunsNoRepositoryProgram(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	marker := filepath.Join(t.TempDir(), "pwned")
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	write(t, filepath.Join(ws, "a.go"), "package a")
	write(t, filepath.Join(ws, "ignored.log"), "x")
	write(t, filepath.Join(ws, ".gitignore"), "*.log\n")
	run("add", "a.go") // a tracked file: ls-files reads the index, and runs the fsmonitor hook with it
	hook := filepath.Join(t.TempDir(), "fsmonitor.sh")
	write(t, hook, "#!/bin/sh\ntouch "+marker+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"core.fsmonitor", hook}, {"core.pager", hook}, {"core.hooksPath", filepath.Dir(hook)}} {
		run("config", kv[0], kv[1])
	}
	// git itself runs the hook (the attack is real) …
	check := exec.Command("git", "-C", ws, "status", "--short")
	check.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	_ = check.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Skipf("this git does not run core.fsmonitor (%v): nothing to prove", err)
	}
	_ = os.Remove(marker)
	// … and listing does not.
	files, _, err := ListFiles(context.Background(), ws, func(string) bool { return true }, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("listing the files ran the repository's core.fsmonitor command")
	}
	if got := strings.Join(files, ","); got != ".gitignore,a.go" {
		t.Errorf("files %q, want .gitignore and a.go (ignored.log left out)", got)
	}
}

func TestResolveIsCheapForOrdinaryFiles(t *testing.T) {
	// No timing: an ordinary file (one link) never builds the identity index.
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "a")
	b := NewBoundary(Settings{Home: t.TempDir(), Deny: defaultDeny})
	if _, err := b.Resolve([]string{ws}, "a.txt", Read, nil); err != nil {
		t.Fatal(err)
	}
	b.index.mu.Lock()
	built := !b.index.built.IsZero()
	b.index.mu.Unlock()
	if built {
		t.Error("resolving a file with one link built the identity index")
	}
}

func TestPathGlob(t *testing.T) {
	for _, tt := range []struct {
		glob, rel string
		want      bool
	}{
		{"", "any/thing.go", true},
		{"*.go", "a.go", true},
		{"*.go", "deep/er/a.go", true}, // no "/": the file name at any depth
		{"*.go", "a.go.txt", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false}, // "*" stays in its segment
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/x/y/a.go", true},
		{"**", "a/b/c", true},
		{"?.md", "a.md", true},
		{"?.md", "ab.md", false},
		{"*.{ts,tsx}", "x.tsx", true},
		{"[ab].txt", "b.txt", true},
		{"[!ab].txt", "b.txt", false},
	} {
		m, err := PathGlob(tt.glob)
		if err != nil {
			t.Fatalf("%q: %v", tt.glob, err)
		}
		if got := m(tt.rel); got != tt.want {
			t.Errorf("%q on %q: %v, want %v", tt.glob, tt.rel, got, tt.want)
		}
	}
	for _, bad := range []string{"[abc", "{a,b"} {
		if _, err := PathGlob(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}
