package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// Workspace is the editor's workspace as the host knows it: the global cwd
// (the root), the folders Lua reports (the cwd and the roots of the running
// language servers), the Boundary, and the one writer of those folders into
// the lock file. Every feature resolves a path a client names with Check and
// shows one with Rel, so there is one rule for both.
type Workspace struct {
	boundary *Boundary

	lockMu sync.Mutex // one lock file write at a time

	mu      sync.Mutex
	cwd     string
	folders []string // as Lua last reported them (first: the cwd)
	gen     uint64   // bumped whenever folders change
	pushed  bool     // a push arrived since the lock writer was set
	pushes  uint64   // pushes received
	lock    func(folders []string) error
	onError func(error)
	farMap  pathmap.Map // far↔local paths of a Claude elsewhere (farmap.go)
}

// New makes a Workspace with an empty boundary (no deny-list) and no cwd.
func New() *Workspace {
	return &Workspace{boundary: NewBoundary(Settings{})}
}

// Boundary is the file boundary every path goes through.
func (w *Workspace) Boundary() *Boundary { return w.boundary }

// SetLockWriter sets (nil: clears) the function that writes folders into
// the lock file; the IDE server sets it when it starts and clears it when it
// stops. Clearing also forgets that folders were pushed: the next server's
// Lua attaches anew. onError hears a failed write.
func (w *Workspace) SetLockWriter(write func(folders []string) error, onError func(error)) {
	w.lockMu.Lock()
	defer w.lockMu.Unlock()
	w.mu.Lock()
	w.lock, w.onError = write, onError
	if write == nil {
		w.pushed = false
	}
	w.mu.Unlock()
}

// SetCwd records the editor's global working directory. When the server
// runs, the lock file then names the new cwd and the folders reported
// before until Lua pushes the new folder list (it pushes one after every
// cwd change).
func (w *Workspace) SetCwd(cwd string) {
	w.mu.Lock()
	w.cwd = cwd
	w.mu.Unlock()
	w.writeLock(w.Folders())
}

// Cwd is the cwd Lua last reported ("" before the first).
func (w *Workspace) Cwd() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cwd
}

// Root is the workspace root: the editor's global cwd, or the host's own
// working directory before Lua reported one, or / when even that fails.
// It is the one base for a relative path.
func (w *Workspace) Root() string {
	if d := w.Cwd(); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

// Reported is the folder list as Lua last reported it, whether it came as a
// push, and its generation (changes whenever the list does).
func (w *Workspace) Reported() (folders []string, pushed bool, gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.folders, w.pushed, w.gen
}

// PushCount is the number of folder pushes received so far.
func (w *Workspace) PushCount() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pushes
}

// SetFolders takes a folder list Lua pushed (relative and empty entries are
// dropped) and rewrites the lock file: always, since Lua pushes a list only
// when it changed or after the cwd changed, when the lock was just
// rewritten with the cwd alone. It reports false for a list with no
// absolute folder, which is ignored.
func (w *Workspace) SetFolders(folders []string) bool {
	folders = CleanFolders(folders)
	if len(folders) == 0 {
		return false
	}
	w.mu.Lock()
	if !slices.Equal(w.folders, folders) {
		w.folders = folders
		w.gen++
	}
	w.pushed = true
	w.pushes++
	w.mu.Unlock()
	w.rewriteLock()
	return true
}

// SetQueriedFolders is SetFolders for a list a feature asked Neovim for,
// unless a push arrived since the question (PushCount then): the push may
// be the newer, and Lua pushes after every change, so the last push stands.
func (w *Workspace) SetQueriedFolders(folders []string, pushes uint64) {
	w.mu.Lock()
	changed := w.pushes == pushes && !slices.Equal(w.folders, folders)
	if changed {
		w.folders = folders
		w.gen++
	}
	w.mu.Unlock()
	if changed {
		w.rewriteLock()
	}
}

// rewriteLock writes the current folders to the lock file.
func (w *Workspace) rewriteLock() {
	w.mu.Lock()
	folders := w.folders
	w.mu.Unlock()
	w.writeLock(folders)
}

// writeLock writes folders with the lock writer, if a server runs. Writes
// are one at a time and the folders of each are those of its moment: the
// last write has the last list.
func (w *Workspace) writeLock(folders []string) {
	w.lockMu.Lock()
	defer w.lockMu.Unlock()
	w.mu.Lock()
	write, onError := w.lock, w.onError
	w.mu.Unlock()
	if write == nil || len(folders) == 0 {
		return
	}
	if err := write(w.farFolders(folders)); err != nil && onError != nil {
		onError(err)
	}
}

// Folders is the root followed by the other folders Lua reported (language
// servers' roots), without duplicates: the folders a path must be inside.
func (w *Workspace) Folders() []string {
	root := w.Root()
	w.mu.Lock()
	reported := w.folders
	w.mu.Unlock()
	out := []string{root}
	for _, f := range reported {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// Denied is the deny-list's verdict on the absolute path abs, with the
// workspace folders as the places the deny-listed files that another hard
// link could name are looked for. Every path that would leave Neovim other
// than through Check (a shared selection, a mention, an open editor's
// name) asks it.
func (w *Workspace) Denied(abs string) bool {
	return w.boundary.DeniedIn(w.Folders(), abs)
}

// DeniedAll is Denied for many paths at once (the open buffers).
func (w *Workspace) DeniedAll(paths []string) []bool {
	return w.boundary.DeniedAllIn(w.Folders(), paths)
}

// Check is the one rule for a path a client names, in every tool and
// method: a file:// URI becomes its path, a relative path is taken from
// the root, and the result goes through the boundary for access acc.
// isOpen (may be nil) reports whether the editor has a buffer for an
// absolute path; it is asked only for a path outside the folders.
func (w *Workspace) Check(ctx context.Context, p string, acc Access, isOpen func(ctx context.Context, abs string) bool) (Path, error) {
	p, err := w.local(p)
	if err != nil {
		return Path{}, err
	}
	root := w.Root()
	if strings.HasPrefix(p, "file://") {
		if path, ok := URIPath(p, root); ok {
			p = path
		}
	}
	var open func(string) bool
	if isOpen != nil {
		open = func(abs string) bool { return isOpen(ctx, abs) }
	}
	return w.boundary.Resolve(w.Folders(), p, acc, open)
}

// Abs makes a path a client names absolute by the one rule (a file:// URI
// becomes its path, a relative path is taken from the root) without the
// boundary's checks; ok is false for a URI of another scheme or host.
func (w *Workspace) Abs(p string) (string, bool) {
	p, err := w.local(p)
	if err != nil {
		return "", false
	}
	return URIPath(p, w.Root())
}

// Rel is how answers name a file: from the root when inside it.
func (w *Workspace) Rel(abs string) string {
	root := w.Root()
	if Inside(abs, root) {
		if r, err := filepath.Rel(root, abs); err == nil {
			return r
		}
	}
	return abs
}

// CleanFolders keeps the absolute folders of a list, cleaned, once each.
func CleanFolders(in []string) []string {
	var out []string
	for _, f := range in {
		if f == "" || !filepath.IsAbs(f) {
			continue
		}
		f = filepath.Clean(f)
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// FileURI is the file:// URI of an absolute path, as the Claude Code CLI
// builds and compares them: the path is not percent-encoded (the CLI strips
// "file://" and compares the rest with its own path, PROTOCOL.md §4).
func FileURI(path string) string { return "file://" + path }

// URIPath turns a file URI (or a plain path) into a clean absolute path;
// relative paths are taken from base. Other schemes give ok=false.
func URIPath(uri, base string) (path string, ok bool) {
	p := uri
	if len(p) >= 7 && strings.EqualFold(p[:7], "file://") {
		p = p[7:]
		if strings.HasPrefix(strings.ToLower(p), "localhost/") {
			p = p[len("localhost"):]
		}
		if !strings.HasPrefix(p, "/") {
			return "", false // file://host/path: not this machine
		}
	} else if i := strings.Index(p, ":"); i > 1 && !strings.ContainsAny(p[:i], "/\\") {
		return "", false // another scheme (untitled:, _claude_fs_right: …)
	}
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), true
}

// Refused reports whether err is the boundary's refusal of a path.
func Refused(err error) bool {
	for _, e := range []error{ErrInvalid, ErrOutside, ErrDenied, ErrHome, ErrGitDir} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
