package pathmap

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name, remote, local, home string
		wantR, wantL              string
		err                       error
	}{
		{"plain", "/workspaces/app", "/src/app", "", "/workspaces/app", "/src/app", nil},
		{"trailing slashes", "/workspaces/app/", "/src/app//", "", "/workspaces/app", "/src/app", nil},
		{"tilde", "/w", "~/src/app", "/home/u", "/w", "/home/u/src/app", nil},
		{"tilde without home", "/w", "~/src", "", "", "", ErrInvalid},
		{"relative remote", "w/app", "/src", "", "", "", ErrInvalid},
		{"windows remote", `C:\app`, "/src", "", "", "", ErrInvalid},
		{"windows remote slashes", "c:/app", "/src", "", "", "", ErrInvalid},
		{"unc remote", `\\srv\share`, "/src", "", "", "", ErrInvalid},
		{"relative local", "/w", "src", "", "", "", ErrInvalid},
		{"empty remote", "", "/src", "", "", "", ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.remote, tc.local, tc.home)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Remote() != tc.wantR || m.Local() != tc.wantL {
				t.Fatalf("got %q %q", m.Remote(), m.Local())
			}
		})
	}
}

func TestBothWays(t *testing.T) {
	m, err := New("/workspaces/app", "/src/app", "")
	if err != nil {
		t.Fatal(err)
	}
	root, err := New("/", "/srv/root", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		m      Map
		far    string
		local  string
		err    error
		oneWay bool // far → local only (the far spelling is not the clean one)
	}{
		{"the directory", m, "/workspaces/app", "/src/app", nil, false},
		{"nested", m, "/workspaces/app/a/b/c.go", "/src/app/a/b/c.go", nil, false},
		{"trailing slash", m, "/workspaces/app/a/", "/src/app/a", nil, true},
		{"dot dot inside", m, "/workspaces/app/a/../b.go", "/src/app/b.go", nil, true},
		{"dot dot escapes", m, "/workspaces/app/../etc/passwd", "", ErrOutside, false},
		{"sibling prefix", m, "/workspaces/application/x", "", ErrOutside, false},
		{"outside", m, "/etc/passwd", "", ErrOutside, false},
		{"relative", m, "a/b.go", "", ErrInvalid, false},
		{"windows drive", m, `C:\workspaces\app\x`, "", ErrInvalid, false},
		{"windows forward", m, "C:/workspaces/app/x", "", ErrInvalid, false},
		{"backslash", m, `/workspaces/app\x`, "", ErrInvalid, false},
		{"unc", m, `\\host\share\x`, "", ErrInvalid, false},
		{"far root", root, "/a/b", "/srv/root/a/b", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.m.ToLocal(tc.far)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("ToLocal(%q) err = %v, want %v", tc.far, err, tc.err)
				}
				if !contains(err.Error(), strconv.Quote(tc.far)) {
					t.Fatalf("the refusal %q does not name the path %q", err, tc.far)
				}
				return
			}
			if err != nil || got != tc.local {
				t.Fatalf("ToLocal(%q) = %q, %v; want %q", tc.far, got, err, tc.local)
			}
			if tc.oneWay {
				return
			}
			back, err := tc.m.ToRemote(got)
			if err != nil || back != tc.far {
				t.Fatalf("ToRemote(%q) = %q, %v; want %q", got, back, err, tc.far)
			}
		})
	}
	for _, p := range []string{"/src/apple/x", "/src", "/etc/passwd", "/src/app/../other"} {
		if _, err := m.ToRemote(p); !errors.Is(err, ErrOutside) || !contains(err.Error(), strconv.Quote(p)) {
			t.Errorf("ToRemote(%q) err = %v, want an ErrOutside naming it", p, err)
		}
	}
	if _, err := m.ToRemote("rel/x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ToRemote(relative) err = %v", err)
	}
}

func TestSymlinkedLocal(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	m, err := New("/w", link, "")
	if err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	for _, p := range []string{filepath.Join(link, "a.go"), filepath.Join(realDir, "a.go")} {
		if got, err := m.ToRemote(p); err != nil || got != "/w/a.go" {
			t.Errorf("ToRemote(%q) = %q, %v", p, got, err)
		}
	}
	if got, _ := m.ToLocal("/w/a.go"); got != filepath.Join(link, "a.go") {
		t.Errorf("ToLocal keeps the declared spelling: got %q", got)
	}
}

func TestURIs(t *testing.T) {
	m, _ := New("/workspaces/app", "/src/app", "")
	for _, tc := range []struct {
		in, want string
		local    bool
		err      error
	}{
		{"file:///workspaces/app/x.go", "file:///src/app/x.go", true, nil},
		{"file://localhost/workspaces/app/x.go", "file:///src/app/x.go", true, nil},
		{"/workspaces/app/x.go", "/src/app/x.go", true, nil},
		{"untitled:Untitled-1", "untitled:Untitled-1", true, nil},
		{"file:///etc/passwd", "", true, ErrOutside},
		{"file://C:/x", "", true, ErrInvalid},
		{"file:///src/app/x.go", "file:///workspaces/app/x.go", false, nil},
		{"file:///home/x", "", false, ErrOutside},
	} {
		var got string
		var err error
		if tc.local {
			got, err = m.ToLocalURI(tc.in)
		} else {
			got, err = m.ToRemoteURI(tc.in)
		}
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%q: err = %v, want %v", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestInactive(t *testing.T) {
	var m Map
	if m.Active() {
		t.Fatal("zero Map is active")
	}
	for _, p := range []string{"/x", "rel", `C:\x`} {
		if got, err := m.ToLocal(p); err != nil || got != p {
			t.Errorf("ToLocal(%q) = %q, %v", p, got, err)
		}
		if got, err := m.ToRemote(p); err != nil || got != p {
			t.Errorf("ToRemote(%q) = %q, %v", p, got, err)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
