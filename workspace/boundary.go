// Package workspace is the one boundary every file a client of the host
// names goes through: the workspace methods (readFile, writeFile,
// listFiles), the IDE server's tools and the editor tools alike.
//
// It knows the workspace folders it is given, the user's home directory,
// the deny-list globs (security.deny in Lua, the one source of the list) and
// the identity (device and inode) of the deny-listed files. It opens, reads,
// writes and lists files beneath a folder with os.Root, so that a check and
// the use that follows it are one operation: a directory swapped for a
// symlink between the two cannot lead outside.
//
// It must never know Neovim, MCP or JSON-RPC: callers map its errors (which
// wrap ErrInvalid, ErrOutside, ErrDenied, ErrHome or ErrGitDir) to their
// wire's codes.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Sentinel errors; every error Resolve returns wraps one, with a message a
// person can act on.
var (
	ErrInvalid = errors.New("invalid path")
	ErrOutside = errors.New("outside the workspace folders")
	ErrDenied  = errors.New("on the deny-list")
	ErrHome    = errors.New("the workspace is a home directory or /")
	ErrGitDir  = errors.New("inside .git")
)

// pathError is a refusal: its message alone, for a person, and its kind
// (one of the sentinels) for errors.Is.
type pathError struct {
	kind error
	msg  string
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.kind }

func refuse(kind error, format string, args ...any) error {
	return &pathError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Access is what a caller will do with a path.
type Access int

const (
	// Read returns the file's text to the client.
	Read Access = iota
	// Show shows the file to the user, or returns facts about it (symbols,
	// locations) to the client.
	Show
	// Write changes the file.
	Write
)

// Settings are the boundary's options, from Lua's setup() (security.*).
type Settings struct {
	// Home is the user's home directory ("" means os.UserHomeDir).
	Home string
	// AllowHome lets a workspace folder be the home directory, / or another
	// user's home (security.allow_home).
	AllowHome bool
	// Deny are globs of files whose contents never leave Neovim
	// (security.deny plus security.deny_extra).
	Deny []string
}

// Boundary decides which files a client may read, see or change. It is
// safe for concurrent use.
type Boundary struct {
	mu    sync.RWMutex
	set   Settings
	home  string
	pats  []pattern
	index identityIndex
	// folders are the workspace folders of the last Resolve: where the
	// identity index looks for deny-listed files.
	folders []string
}

// NewBoundary makes a boundary with s.
func NewBoundary(s Settings) *Boundary {
	b := &Boundary{}
	b.Update(s)
	return b
}

// Update replaces the settings (setup() ran again, a server started).
func (b *Boundary) Update(s Settings) {
	home := s.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" {
		home = filepath.Clean(home)
	}
	s.Deny = append([]string(nil), s.Deny...)
	pats := compileGlobs(s.Deny, home)
	b.mu.Lock()
	b.set, b.home, b.pats = s, home, pats
	b.mu.Unlock()
	b.index.invalidate()
}

// Settings returns the current settings.
func (b *Boundary) Settings() Settings {
	b.mu.RLock()
	defer b.mu.RUnlock()
	s := b.set
	s.Deny = append([]string(nil), s.Deny...)
	return s
}

// Path is a path that passed the boundary.
type Path struct {
	// Abs is the clean absolute path as asked (symlinks kept).
	Abs string
	// Real is Abs with symlinks resolved (it may not exist yet: a write).
	Real string
	// Rel names the file from the root (folders[0]) when inside it, else Abs.
	Rel string
	// Folder is the workspace folder (symlinks resolved) that holds Real;
	// "" when the path was allowed only as a buffer the user has open.
	Folder string
}

// Resolve checks p — relative to folders[0], or absolute — for access a.
// folders are the workspace folders, the root first. isOpen (may be nil)
// tells whether the user has abs open in a buffer: for Read and Show, that
// lets a file outside the folders through (never a deny-listed one).
func (b *Boundary) Resolve(folders []string, p string, a Access, isOpen func(abs string) bool) (Path, error) {
	if p == "" {
		return Path{}, refuse(ErrInvalid, "the path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return Path{}, refuse(ErrInvalid, "the path contains a NUL byte")
	}
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return Path{}, refuse(ErrInvalid, "%q: paths with \"..\" are not allowed", p)
		}
	}
	if len(folders) == 0 {
		return Path{}, refuse(ErrOutside, "no workspace folder is known yet")
	}
	root := folders[0]
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	real, err := resolvePath(abs)
	if err != nil {
		return Path{}, refuse(ErrInvalid, "%q cannot be resolved: %v", p, err)
	}
	rel := abs
	if r, err := filepath.Rel(root, abs); err == nil && Inside(abs, root) {
		rel = r
	}
	out := Path{Abs: abs, Real: real, Rel: rel}

	b.mu.Lock()
	home, allowHome := b.home, b.set.AllowHome
	if !slices.Equal(b.folders, folders) {
		b.folders = append([]string(nil), folders...)
	}
	b.mu.Unlock()

	// The folders (symlinks resolved) that hold the resolved path.
	absIn := insideAny(abs, folders)
	var holders []string
	for _, f := range folders {
		rf := f
		if r, err := filepath.EvalSymlinks(f); err == nil {
			rf = r
		}
		if Inside(real, rf) {
			holders = append(holders, rf)
		}
	}
	switch {
	case absIn && len(holders) > 0:
		// The most specific folder that is not a home directory decides.
		for _, f := range holders {
			if !allowHome && homeLike(f, home) {
				continue
			}
			if out.Folder == "" || len(f) > len(out.Folder) {
				out.Folder = f
			}
		}
		if out.Folder == "" {
			return Path{}, refuse(ErrHome, "the workspace folder %s is a home directory or /, which holds your keys and "+
				"dotfiles; start Neovim in a project directory, or set security.allow_home = true to allow it", holders[0])
		}
	case absIn:
		return Path{}, refuse(ErrOutside, "%q resolves to %s, outside the workspace folders (a symlink leads out)", p, real)
	case a != Write && isOpen != nil && (isOpen(abs) || (real != abs && isOpen(real))):
		// A buffer the user opened: allowed to be seen, never written.
	default:
		return Path{}, refuse(ErrOutside, "%q is outside the workspace folders (%s)", p, strings.Join(folders, ", "))
	}
	if b.Denied(abs) || (real != abs && b.Denied(real)) {
		return Path{}, refuse(ErrDenied, "%s matches the deny-list (security.deny): its contents never leave Neovim", rel)
	}
	if a == Write && out.Folder != "" {
		if r, err := filepath.Rel(out.Folder, real); err == nil {
			for _, seg := range strings.Split(filepath.ToSlash(r), "/") {
				if seg == ".git" {
					return Path{}, refuse(ErrGitDir, "%s is inside a .git directory, which is not written through the workspace "+
						"methods (git runs what its configuration names)", rel)
				}
			}
		}
	}
	return out, nil
}

// DeniedIn is Denied for a file of the workspace folders folders: they are
// where the identity index looks for the deny-listed files another hard
// link could name. It is the question every path that leaves Neovim
// without a Resolve (a selection, a mention, an open editor's name) asks.
func (b *Boundary) DeniedIn(folders []string, abs string) bool {
	b.mu.Lock()
	if !slices.Equal(b.folders, folders) {
		b.folders = append([]string(nil), folders...)
	}
	b.mu.Unlock()
	return b.Denied(abs)
}

// Denied reports whether the file at abs is on the deny-list: by its name
// or path, by its symlink target's, or — for a file with other hard links —
// by its identity (the same device and inode as a deny-listed file).
func (b *Boundary) Denied(abs string) bool {
	return b.denied(abs, nil)
}

// DeniedAllIn is DeniedIn for many paths (the open buffers): the
// directories they share are resolved once.
func (b *Boundary) DeniedAllIn(folders []string, paths []string) []bool {
	b.mu.Lock()
	if !slices.Equal(b.folders, folders) {
		b.folders = append([]string(nil), folders...)
	}
	b.mu.Unlock()
	dirs := map[string]string{}
	out := make([]bool, len(paths))
	for i, p := range paths {
		out[i] = b.denied(p, dirs)
	}
	return out
}

// denied is Denied; dirs (may be nil) caches resolved directories.
func (b *Boundary) denied(abs string, dirs map[string]string) bool {
	b.mu.RLock()
	pats := b.pats
	b.mu.RUnlock()
	if len(pats) == 0 {
		return false
	}
	if matchAny(pats, abs) {
		return true
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return false
	}
	var real string
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(abs); err != nil {
			return false
		}
		if real, err = filepath.EvalSymlinks(abs); err != nil {
			real = ""
		}
	} else {
		// Not a symlink itself: its real path is its directory's plus its name.
		dir := filepath.Dir(abs)
		rd, ok := dirs[dir]
		if !ok {
			if rd, err = filepath.EvalSymlinks(dir); err != nil {
				rd = dir
			}
			if dirs != nil {
				dirs[dir] = rd
			}
		}
		base := filepath.Base(abs)
		if rd == dir && base != "." && base != ".." && len(abs) == len(dir)+1+len(base) &&
			strings.HasPrefix(abs, dir) && abs[len(dir)] == filepath.Separator {
			real = abs // the common case, a clean path without a symlink on the way: Join's result
		} else {
			real = filepath.Join(rd, base)
		}
	}
	if real != "" && real != abs && matchAny(pats, real) {
		return true
	}
	return b.deniedIdentity(fi)
}

// deniedIdentity: a regular file with more than one link is compared with
// the deny-listed files' identities. One link cannot be another name of a
// deny-listed file, so the common case costs nothing.
func (b *Boundary) deniedIdentity(fi fs.FileInfo) bool {
	if !fi.Mode().IsRegular() || links(fi) < 2 {
		return false
	}
	b.mu.RLock()
	pats, folders := b.pats, b.folders
	b.mu.RUnlock()
	return b.index.has(fi, pats, folders)
}

// homeLike reports whether dir is "/", home, or another user's home
// directory: a folder no project lives in directly.
func homeLike(dir, home string) bool {
	dir = filepath.Clean(dir)
	if dir == "/" || (home != "" && sameDir(dir, home)) {
		return true
	}
	if parent := filepath.Dir(dir); parent == "/home" || parent == "/Users" {
		return true
	}
	return dir == "/root"
}

func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// Inside reports whether path is dir or below it (lexically).
func Inside(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

func insideAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if Inside(path, d) {
			return true
		}
	}
	return false
}

// resolvePath resolves the symlinks of an absolute path whose last parts
// may not exist yet (a file about to be written), following dangling links
// by hand.
func resolvePath(p string) (string, error) {
	for hops := 0; hops < 40; hops++ {
		existing, rest := p, ""
		for {
			_, err := os.Lstat(existing)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				return "", err
			}
			parent := filepath.Dir(existing)
			if parent == existing {
				break
			}
			rest = filepath.Join(filepath.Base(existing), rest)
			existing = parent
		}
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// existing is a symlink to something missing: follow it.
		target, lerr := os.Readlink(existing)
		if lerr != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			dir, derr := filepath.EvalSymlinks(filepath.Dir(existing))
			if derr != nil {
				return "", derr
			}
			target = filepath.Join(dir, target)
		}
		p = filepath.Join(target, rest)
	}
	return "", errors.New("too many levels of symbolic links")
}

// CheckFolder refuses a workspace folder that is a home directory or /
// (unless security.allow_home): listing it would walk the user's keys and
// dotfiles.
func (b *Boundary) CheckFolder(folder string) error {
	b.mu.RLock()
	home, allowHome := b.home, b.set.AllowHome
	b.mu.RUnlock()
	if !allowHome && homeLike(folder, home) {
		return refuse(ErrHome, "the workspace folder %s is a home directory or /, which holds your keys and "+
			"dotfiles; start Neovim in a project directory, or set security.allow_home = true to allow it", folder)
	}
	return nil
}
