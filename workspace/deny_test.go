package workspace

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The string comparisons that stand for simple globs decide exactly as
// the globs' regexps: for every glob of the default list and more, on
// names and paths with newlines, invalid UTF-8 and U+FFFD.
func TestLiteralGlobsMatchLikeTheirRegexps(t *testing.T) {
	home := "/home/u"
	globs := append([]string{"*", "*.env", "secrets/*", "/etc/*.conf", "a*b", "**.pem", "x\ny*", "*\uFFFD",
		"\uFFFD*", "tmp/", "/abs/exact", "{a,b}.txt", "[ab].key", "?.pem", `\*.txt`, "*.pem*"}, defaultDeny...)
	inputs := []string{"", ".env", ".env.local", "x.env", "a.pem", "a.pem\n", "a\n.pem", "\n.pem", "id_rsa", "id_rsa.pub",
		"id_rsa\nx", "x/id_rsa", "/home/u/.ssh/id_ed25519", "/home/u/.ssh/a\nb", "/home/u/.sshx/a", "/home/u/.ssh/",
		"/p/secrets/api.txt", "/p/secrets\n/api.txt", "/p/mysecrets/x", "/etc/a.conf", "/etc/sub/a.conf", "ab", "a/b",
		"x\nyz", "\xff", "a\xff", "\xffa", "\uFFFD", "a\uFFFD", "\uFFFDa", "/home/u/.kube/config", "/x/.kube/config",
		"/home/u/.netrc", ".netrc", "*.txt", "/abs/exact", "/abs/exact/", "tmp/", "/q/tmp/", ".ENV"}
	for _, p := range compileGlobs(globs, home) {
		for _, in := range inputs {
			for _, s := range []string{in, filepath.Base(in)} {
				if got, want := p.match(s), p.re.MatchString(s); got != want {
					t.Errorf("glob %s (form %d, %q) on %q: %v, the regexp says %v", p.re, p.form, p.lit, s, got, want)
				}
			}
		}
	}
}

// A path spelt unclean ("//", "/./") is judged by its clean spelling too.
func TestDeniedUncleanPath(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".ssh", "key"), "k")
	write(t, filepath.Join(home, "proj", "ok.txt"), "ok")
	b := NewBoundary(Settings{Home: home, Deny: defaultDeny})
	folders := []string{filepath.Join(home, "proj")}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{home + "/.ssh/key", true},
		{home + "//.ssh/key", true},
		{home + "/.ssh//key", true},
		{home + "/.ssh/./key", true},
		{home + "/proj/../.ssh/key", true},
		{home + "/proj/ok.txt", false},
		{home + "/proj//ok.txt", false},
	} {
		if got := b.DeniedAllIn(folders, []string{tt.path})[0]; got != tt.want {
			t.Errorf("DeniedAllIn(%s) = %v, want %v", tt.path, got, tt.want)
		}
		if got := b.DeniedIn(folders, tt.path); got != tt.want {
			t.Errorf("DeniedIn(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// The verdict on the open buffers is made afresh on every call: a file
// replaced by a symlink to a deny-listed one, or by another hard link to
// one, between two calls is refused by the second.
func TestDeniedAllSeesChangesBetweenCalls(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks and identities need unix")
	}
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	key := filepath.Join(home, ".ssh", "id_ed25519")
	write(t, key, "KEY")
	write(t, filepath.Join(proj, ".env"), "SECRET")
	a, b := filepath.Join(proj, "a.txt"), filepath.Join(proj, "b.txt")
	write(t, a, "a")
	write(t, b, "b")
	bd := NewBoundary(Settings{Home: home, Deny: defaultDeny})
	folders := []string{proj}
	paths := []string{a, b}
	if got := bd.DeniedAllIn(folders, paths); got[0] || got[1] {
		t.Fatalf("plain files denied: %v", got)
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(key, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(proj, ".env"), b); err != nil {
		t.Fatal(err)
	}
	if got := bd.DeniedAllIn(folders, paths); !got[0] || !got[1] {
		t.Fatalf("after a became a symlink to a key and b a hard link to .env: denied %v, want both", got)
	}
}
