package workspace

import (
	"context"

	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// View is the workspace as a feature sees it: where the project is, its
// folders, and the file boundary's judge and confined reader and writer.
// None of its methods changes the folders, the cwd, the lock or the
// boundary's settings: those belong to the application's lifecycle, and the
// one feature that reports folders gets its own port for that.
type View interface {
	Cwd() string
	Root() string
	Folders() []string
	Reported() (folders []string, pushed bool, gen uint64)
	PushCount() uint64
	Check(ctx context.Context, p string, acc Access, isOpen func(ctx context.Context, abs string) bool) (Path, error)
	Abs(p string) (string, bool)
	Rel(abs string) string
	// Far and FarURI spell a local path as a Claude on an SSH host or in
	// a container sees it (unchanged when Claude runs here); a path
	// outside the mapping is refused and must not leave Neovim.
	Far(abs string) (string, error)
	FarURI(abs string) (string, error)
	// Map is the far↔local mapping in force (inactive when Claude runs
	// here): what a far CLI's hooks name is mapped back through it.
	Map() pathmap.Map
	// Denied and DeniedAll are the one deny-list judge for a path (or
	// paths) about to leave Neovim, within the workspace's folders.
	Denied(abs string) bool
	DeniedAll(paths []string) []bool
	// Files is the boundary without its settings' setter.
	Files() Files
}

// Files is what a feature may do with the file boundary: judge a path,
// and read or write through the confined reader and writer.
type Files interface {
	Denied(abs string) bool
	Resolve(folders []string, p string, a Access, isOpen func(abs string) bool) (Path, error)
	ReadFile(p Path, max int64) ([]byte, error)
	WriteFile(p Path, data []byte) error
	Remove(p Path) error
	CheckFolder(folder string) error
	Settings() Settings
}

// Files is the boundary as a feature may use it.
func (w *Workspace) Files() Files { return w.boundary }

var _ View = (*Workspace)(nil)
