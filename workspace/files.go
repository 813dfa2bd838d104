package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// open opens p for reading beneath its folder: the resolved path, relative
// to the resolved folder, through os.Root, so no symlink swapped in since
// Resolve can lead outside. A path allowed as an open buffer (no folder)
// is opened as it resolves.
func (p Path) open() (*os.File, error) {
	if p.Folder == "" {
		return os.Open(p.Real)
	}
	rel, err := filepath.Rel(p.Folder, p.Real)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(p.Folder)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(rel)
}

// ReadFile reads the file at p, at most max bytes (a larger file is an
// error). The opened file is checked again: a regular file, not another
// name of a deny-listed one.
func (b *Boundary) ReadFile(p Path, max int64) ([]byte, error) {
	f, err := p.open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such file")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, errors.New("is a directory")
	case !fi.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	case b.deniedIdentity(fi):
		return nil, refuse(ErrDenied, "%s is another name (a hard link) of a deny-listed file", p.Rel)
	case fi.Size() > max:
		return nil, fmt.Errorf("too large to read (%d bytes; the limit is %d)", fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("too large to read (the limit is %d bytes)", max)
	}
	return data, nil
}

// ReadIn reads the file named name directly inside dir, its first max
// bytes at most (whole says whether that was all of it), for a file the
// plugin shows that is not the project's: the CLI's own files, such as the
// plan it wrote into its plans directory. The name is one path element,
// looked up without following a symlink and opened through os.Root on dir,
// so nothing put in its place leads elsewhere; it must be a regular file.
func ReadIn(dir, name string, max int64) (data []byte, whole bool, err error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, false, fmt.Errorf("%q is not a file name", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", name)
	}
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return data[:max], false, nil
	}
	return data, true, nil
}

// WriteFile replaces the file at p with data, beneath its folder: through a
// temporary file in the same directory (created there, never followed
// through a symlink) and a rename, so a reader never sees half a file and a
// failure leaves the old file and no temporary behind. An existing file
// keeps its mode, a new one gets 0644; missing directories are made.
func (b *Boundary) WriteFile(p Path, data []byte) (err error) {
	if p.Folder == "" {
		return refuse(ErrOutside, "%s is not in a workspace folder", p.Rel)
	}
	rel, err := filepath.Rel(p.Folder, p.Real)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(p.Folder)
	if err != nil {
		return err
	}
	defer root.Close()
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Every step below is relative to the one directory opened here
	// (beneath the folder): if that directory is moved or swapped for a
	// symlink meanwhile, the temporary, the rename and the clean-up still
	// meet in it.
	d, err := root.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	mode := fs.FileMode(0o644)
	fi, err := d.Lstat(base)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p.Rel)
	case err == nil:
		mode = fi.Mode().Perm()
		if b.deniedIdentity(fi) {
			return refuse(ErrDenied, "%s is another name (a hard link) of a deny-listed file", p.Rel)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + base + ".nvim-claude-" + hex.EncodeToString(rnd[:])
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = d.Remove(tmp)
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
	if err = d.Rename(tmp, base); err != nil {
		return err
	}
	if df, derr := d.Open("."); derr == nil {
		_ = df.Sync() // the rename itself survives a crash
		_ = df.Close()
	}
	return nil
}

// Remove removes the regular file at p beneath its folder, through
// os.Root like WriteFile: a directory swapped for a symlink since Resolve
// cannot lead outside, and a symlink in the file's place is refused, never
// followed. Another name (hard link) of a deny-listed file is refused.
func (b *Boundary) Remove(p Path) error {
	if p.Folder == "" {
		return refuse(ErrOutside, "%s is not in a workspace folder", p.Rel)
	}
	rel, err := filepath.Rel(p.Folder, p.Real)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(p.Folder)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p.Rel)
	case b.deniedIdentity(fi):
		return refuse(ErrDenied, "%s is another name (a hard link) of a deny-listed file", p.Rel)
	}
	return root.Remove(rel)
}

// Limits of ListFiles.
const (
	listTimeout = 10 * time.Second
)

// ListFiles lists the files of dir (paths relative to it, sorted): what git
// tracks or would track (so .gitignore applies) in a work tree, else a walk
// beneath dir that skips VCS directories and node_modules and follows no
// symlinked directory.
func ListFiles(ctx context.Context, dir string, match func(rel string) bool, limit int) (files []string, truncated bool, err error) {
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
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == "." {
				return err
			}
			return nil // unreadable entry: skip it
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if path != "." && skippedDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !match(path) {
			return nil
		}
		if len(files) == limit {
			truncated = true
			return fs.SkipAll
		}
		files = append(files, path)
		return nil
	})
	sort.Strings(files)
	return files, truncated, err
}

// gitSafeArgs make git ignore whatever in the repository's configuration
// (or the user's, or the system's) runs a program: a hostile repository's
// .git/config cannot make listing its files execute anything.
var gitSafeArgs = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "core.sshCommand=false",
	"-c", "core.askPass=false",
	"-c", "core.untrackedCache=false",
	"-c", "diff.external=",
	"-c", "protocol.allow=never",
	"-c", "credential.helper=",
	"--no-pager",
	"--no-optional-locks",
}

// gitEnv is the environment git runs in: no system or global
// configuration, no prompts, no pager, and none of the GIT_* variables that
// would point it elsewhere.
func gitEnv() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "PAGER=") {
			continue
		}
		env = append(env, kv)
	}
	return env
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
	args := append(append([]string{}, gitSafeArgs...), "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = gitEnv()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	seen := map[string]bool{}
	var files []string
	for _, name := range strings.Split(stdout.String(), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		// tracked but deleted files, and submodules, are not files here
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() {
			continue
		}
		seen[name] = true
		files = append(files, name)
	}
	sort.Strings(files)
	return files, true
}
