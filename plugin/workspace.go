package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// Workspace paths: the workspace methods (readFile, writeFile …) take paths
// from a client and must not reach outside the workspace folders. A path is
// refused (-32602) when it has a ".." segment, when it is absolute and
// outside every folder, or when it resolves — through symlinks — to a place
// outside them.

// wsPath is a path checked against the workspace folders.
type wsPath struct {
	abs  string // clean absolute path as asked (symlinks kept)
	real string // abs with symlinks resolved
	rel  string // abs relative to the root when inside it, else abs
}

// resolveWorkspacePath checks p (relative to root, or absolute) against the
// folders (root first).
func resolveWorkspacePath(folders []string, p string) (wsPath, error) {
	if p == "" {
		return wsPath{}, mcp.InvalidParams("Invalid params: path is required")
	}
	if strings.ContainsRune(p, 0) {
		return wsPath{}, mcp.InvalidParams("Invalid params: path contains a NUL byte")
	}
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return wsPath{}, mcp.InvalidParams("Invalid params: %q: paths with \"..\" are not allowed", p)
		}
	}
	root := folders[0]
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	if !insideAny(abs, folders) {
		return wsPath{}, mcp.InvalidParams("Invalid params: %q is outside the workspace folders (%s)", p, strings.Join(folders, ", "))
	}
	real, err := resolvePath(abs)
	if err != nil {
		return wsPath{}, mcp.InvalidParams("Invalid params: %q cannot be resolved: %v", p, err)
	}
	realFolders := make([]string, len(folders))
	for i, f := range folders {
		realFolders[i] = f
		if r, err := filepath.EvalSymlinks(f); err == nil {
			realFolders[i] = r
		}
	}
	if !insideAny(real, realFolders) && !insideAny(real, folders) {
		return wsPath{}, mcp.InvalidParams("Invalid params: %q resolves to %s, outside the workspace folders (a symlink leads out)", p, real)
	}
	rel := abs
	if r, err := filepath.Rel(root, abs); err == nil && inside(abs, root) {
		rel = r
	}
	return wsPath{abs: abs, real: real, rel: rel}, nil
}

// inside reports whether path is dir or below it.
func inside(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

func insideAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if inside(path, d) {
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

// writeFileAtomic replaces path's content through a temporary file in the
// same directory and a rename, so a reader never sees half a file; an
// existing file keeps its mode, a new one gets 0644. Missing parent
// directories are created.
func writeFileAtomic(path string, data []byte) (err error) {
	mode := fs.FileMode(0o644)
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".nvim-claude-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // the rename itself survives a crash
		_ = d.Close()
	}
	return nil
}

// Limits of listFiles.
const (
	maxListedFiles = 20000
	listTimeout    = 10 * time.Second
)

// skippedDir tells the directories not walked when a folder is not a git
// work tree.
func skippedDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", "node_modules":
		return true
	}
	return false
}

// listWorkspaceFiles lists the files of dir (paths relative to it, sorted):
// what git tracks or would track (so .gitignore applies) in a work tree,
// else a walk that skips VCS directories and node_modules. Symlinked
// directories are not followed.
func listWorkspaceFiles(ctx context.Context, dir string, match func(rel string) bool, limit int) (files []string, truncated bool, err error) {
	if files, ok := gitFiles(ctx, dir); ok {
		out := files[:0]
		for _, f := range files {
			if match(f) {
				if len(out) == limit {
					return out, true, nil
				}
				out = append(out, f)
			}
		}
		return out, false, nil
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // unreadable entry: skip it
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if path != dir && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if !match(rel) {
			return nil
		}
		if len(files) == limit {
			truncated = true
			return filepath.SkipAll
		}
		files = append(files, rel)
		return nil
	})
	sort.Strings(files)
	return files, truncated, err
}

// gitFiles lists dir's files with git, when dir is in a work tree and git is
// installed.
func gitFiles(ctx context.Context, dir string) ([]string, bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	// Run in dir, ls-files names paths relative to it.
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	seen := map[string]bool{}
	var files []string
	for _, name := range strings.Split(stdout.String(), "\x00") {
		if name == "" {
			continue
		}
		rel := name
		if seen[rel] {
			continue
		}
		// tracked but deleted files, and submodules, are not files here
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil || fi.IsDir() {
			continue
		}
		seen[rel] = true
		files = append(files, rel)
	}
	sort.Strings(files)
	return files, true
}

// globMatcher compiles a glob: "*" and "?" stay within a path segment, "**"
// spans segments, "[…]" and "{a,b}" work as in shells. A glob without "/"
// matches the file name at any depth ("*.go"); with one, the whole path
// from the folder ("src/**/*.go").
func globMatcher(glob string) (func(rel string) bool, error) {
	if glob == "" {
		return func(string) bool { return true }, nil
	}
	re, err := globRegexp(glob)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(glob, "/") {
		return func(rel string) bool { return re.MatchString(filepath.Base(rel)) }, nil
	}
	return re.MatchString, nil
}

func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(glob[i+1:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", glob)
			}
			class := glob[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		case c == '{':
			b.WriteString("(?:")
			depth++
		case c == '}' && depth > 0:
			b.WriteString(")")
			depth--
		case c == ',' && depth > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed { in %q", glob)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
