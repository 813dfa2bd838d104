// Package pathmap maps paths between the machine Neovim runs on and the
// machine (an SSH host, a container) the Claude Code CLI runs on, when the
// two see the same files under different directories. One declared pair —
// a far directory and a local one — is applied both ways; a path outside
// the pair is refused with an error naming it, never passed through as a
// local path that happens to exist. The far side is always POSIX: a
// Windows-style path (a drive letter, a backslash, a UNC name) is refused.
//
// It is a leaf: workspace applies it at its one path rule, so a mapped
// path then meets the same boundary and deny-list judge as any other.
package pathmap

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrOutside is wrapped by the refusal of a path outside the mapping.
var ErrOutside = errors.New("path outside the mapping")

// ErrInvalid is wrapped by the refusal of a path that is not an absolute
// POSIX path (relative, Windows-style, a NUL byte).
var ErrInvalid = errors.New("invalid path")

// Map is one declared pair. The zero Map maps nothing (Active is false)
// and every method returns its input unchanged.
type Map struct {
	remote string // clean absolute POSIX path on the far side
	local  string // clean absolute local path, as declared (~ expanded)
	real   string // local with its symlinks resolved ("" when equal or unresolvable)
}

// New checks and cleans a declared pair. local may start with ~/ (home is
// the local home directory). A local directory that is a symlink (or lies
// under one) maps under both its spellings.
func New(remote, local, home string) (Map, error) {
	if err := checkRemote(remote); err != nil {
		return Map{}, fmt.Errorf("pathmap remote: %w", err)
	}
	if local == "~" || strings.HasPrefix(local, "~/") {
		if home == "" {
			return Map{}, fmt.Errorf("pathmap local %q: %w: no home directory for ~", local, ErrInvalid)
		}
		local = filepath.Join(home, local[1:])
	}
	if local == "" || !filepath.IsAbs(local) || strings.ContainsRune(local, 0) {
		return Map{}, fmt.Errorf("pathmap local %q: %w: not an absolute path", local, ErrInvalid)
	}
	m := Map{remote: path.Clean(remote), local: filepath.Clean(local)}
	if r, err := filepath.EvalSymlinks(m.local); err == nil && r != m.local {
		m.real = r
	}
	return m, nil
}

// Active reports whether the Map maps anything.
func (m Map) Active() bool { return m.remote != "" }

// Remote is the far directory ("" when inactive).
func (m Map) Remote() string { return m.remote }

// Local is the local directory ("" when inactive).
func (m Map) Local() string { return m.local }

// checkRemote refuses what cannot be a far POSIX absolute path.
func checkRemote(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalid)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: %q holds a NUL byte", ErrInvalid, p)
	case strings.ContainsRune(p, '\\'),
		len(p) >= 2 && p[1] == ':' && isLetter(p[0]):
		return fmt.Errorf("%w: %q is a Windows-style path (the far side must be POSIX)", ErrInvalid, p)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: %q is not absolute", ErrInvalid, p)
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// under reports the rest of p below dir ("" for dir itself), for a clean
// p and dir with the given separator.
func under(p, dir string, sep byte) (rest string, ok bool) {
	if p == dir {
		return "", true
	}
	if dir == string(sep) {
		return p[1:], strings.HasPrefix(p, dir)
	}
	if strings.HasPrefix(p, dir) && p[len(dir)] == sep {
		return p[len(dir)+1:], true
	}
	return "", false
}

// ToLocal maps a far path to the local one. A path outside the far
// directory, relative or Windows-style is refused with an error naming it.
func (m Map) ToLocal(p string) (string, error) {
	if !m.Active() {
		return p, nil
	}
	if err := checkRemote(p); err != nil {
		return "", err
	}
	c := path.Clean(p)
	rest, ok := under(c, m.remote, '/')
	if !ok {
		return "", fmt.Errorf("%w: %q is not under the far directory %q", ErrOutside, p, m.remote)
	}
	if rest == "" {
		return m.local, nil
	}
	return filepath.Join(m.local, filepath.FromSlash(rest)), nil
}

// ToRemote maps a local path to the far one. A local path under the
// declared directory's resolved form (its symlinks followed) maps too.
func (m Map) ToRemote(p string) (string, error) {
	if !m.Active() {
		return p, nil
	}
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrInvalid, p)
	}
	c := filepath.Clean(p)
	rest, ok := under(c, m.local, os.PathSeparator)
	if !ok && m.real != "" {
		rest, ok = under(c, m.real, os.PathSeparator)
	}
	if !ok {
		return "", fmt.Errorf("%w: %q is not under the local directory %q", ErrOutside, p, m.local)
	}
	if rest == "" {
		return m.remote, nil
	}
	return path.Join(m.remote, filepath.ToSlash(rest)), nil
}

// ToLocalURI maps a far file:// URI (or plain path) to a local file:// URI
// (or plain path, as given). Other schemes pass unchanged: they name no
// file on either side.
func (m Map) ToLocalURI(u string) (string, error) {
	return m.mapURI(u, m.ToLocal)
}

// ToRemoteURI maps a local file:// URI (or plain path) to the far one.
func (m Map) ToRemoteURI(u string) (string, error) {
	return m.mapURI(u, m.ToRemote)
}

func (m Map) mapURI(u string, f func(string) (string, error)) (string, error) {
	if !m.Active() {
		return u, nil
	}
	if len(u) >= 7 && strings.EqualFold(u[:7], "file://") {
		p := u[7:]
		if strings.HasPrefix(strings.ToLower(p), "localhost/") {
			p = p[len("localhost"):]
		}
		out, err := f(p)
		if err != nil {
			return "", err
		}
		return "file://" + out, nil
	}
	if i := strings.Index(u, ":"); i > 1 && !strings.ContainsAny(u[:i], "/\\") {
		return u, nil // another scheme: names no file
	}
	return f(u)
}
