package workspace

import (
	"errors"

	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// A Claude on an SSH host or in a container sees the workspace under
// another directory. The mapping is applied here, at the one path rule:
// a far path a client names becomes the local one before the boundary
// judges it (so the deny-list and the folders apply to it as to any
// other), and every path that leaves Neovim is spelled the far way. A
// path outside the mapping is refused, never taken as a local path that
// happens to exist.

// SetMap sets the far↔local mapping (the zero Map: none) and rewrites the
// lock's folders in the far spelling.
func (w *Workspace) SetMap(m pathmap.Map) {
	w.mu.Lock()
	w.farMap = m
	w.mu.Unlock()
	w.rewriteLock()
}

// Map is the far↔local mapping (inactive when Claude runs here).
func (w *Workspace) Map() pathmap.Map {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.farMap
}

// Far is how the far CLI names the local absolute path abs; a path
// outside the mapping is refused (the caller leaves it out).
func (w *Workspace) Far(abs string) (string, error) {
	p, err := w.Map().ToRemote(abs)
	if err != nil {
		return "", farRefusal(err)
	}
	return p, nil
}

// FarURI is Far as a file:// URI.
func (w *Workspace) FarURI(abs string) (string, error) {
	p, err := w.Far(abs)
	if err != nil {
		return "", err
	}
	return FileURI(p), nil
}

// local maps a path or file:// URI a client named to the local spelling;
// other schemes and relative paths pass as they are (a relative path is
// taken from the root, which the mapping covers).
func (w *Workspace) local(p string) (string, error) {
	m := w.Map()
	if !m.Active() {
		return p, nil
	}
	if !isURIOrAbs(p) {
		return p, nil
	}
	out, err := m.ToLocalURI(p)
	if err != nil {
		return "", farRefusal(err)
	}
	return out, nil
}

func isURIOrAbs(p string) bool {
	if len(p) >= 7 && (p[:7] == "file://" || p[:7] == "FILE://" || p[:7] == "File://") {
		return true
	}
	return len(p) > 0 && (p[0] == '/' || p[0] == '\\' || len(p) >= 2 && p[1] == ':' && len(p) > 2 && (p[2] == '\\' || p[2] == '/'))
}

// farRefusal makes a mapping's refusal one of the boundary's, so callers
// answer it as they answer any refused path.
func farRefusal(err error) error {
	kind := ErrOutside
	if errors.Is(err, pathmap.ErrInvalid) {
		kind = ErrInvalid
	}
	return refuse(kind, "%s", err.Error())
}

// farFolders is the lock's folder list in the far spelling: folders
// outside the mapping are left out, and the far directory stands in when
// none is left.
func (w *Workspace) farFolders(folders []string) []string {
	m := w.Map()
	if !m.Active() {
		return folders
	}
	var out []string
	for _, f := range folders {
		if p, err := m.ToRemote(f); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{m.Remote()}
	}
	return out
}
