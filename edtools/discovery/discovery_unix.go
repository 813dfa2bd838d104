//go:build unix

package discovery

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// PrivateDir is the directory of the editor-tools sockets:
// $XDG_RUNTIME_DIR/nvim-claude, else <tmp>/nvim-claude-<uid>. It is created
// 0700; an existing one must be a directory of ours (not a symlink) and is
// tightened to 0700.
func PrivateDir() (string, error) {
	var dir string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		if st, err := os.Stat(rt); err == nil && st.IsDir() {
			dir = filepath.Join(rt, "nvim-claude")
		}
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("nvim-claude-%d", os.Getuid()))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("editor tools: create %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("editor tools: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("editor tools: %s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return "", fmt.Errorf("editor tools: %s belongs to another user", dir)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("editor tools: %w", err)
		}
	}
	return dir, nil
}

// Listen listens on a fresh unix socket in the private directory
// (0600) and writes its discovery file (0600, atomically).
func Listen(pid int, d Discovery) (ln net.Listener, sock, disc string, err error) {
	dir, err := PrivateDir()
	if err != nil {
		return nil, "", "", err
	}
	sweepStale(dir)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return nil, "", "", fmt.Errorf("editor tools: %w", err)
	}
	base := filepath.Join(dir, fmt.Sprintf("%d-%s", pid, hex.EncodeToString(b)))
	sock, disc = base+".sock", base+".json"
	ln, err = net.Listen("unix", sock)
	if err != nil {
		return nil, "", "", fmt.Errorf("editor tools: listen: %w", err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		_ = ln.Close()
		return nil, "", "", fmt.Errorf("editor tools: %w", err)
	}
	d.Socket = sock
	if err := WritePrivateJSON(disc, d); err != nil {
		_ = ln.Close()
		return nil, "", "", err
	}
	return ln, sock, disc, nil
}

// sweepStale removes the sockets and discovery files of Neovims that are
// gone (a host killed outright cannot remove its own).
func sweepStale(dir string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var d Discovery
		if json.Unmarshal(b, &d) != nil || d.PID <= 0 || processAlive(d.PID) {
			continue
		}
		_ = os.Remove(strings.TrimSuffix(p, ".json") + ".sock")
		_ = os.Remove(p)
	}
}

// WritePrivateJSON writes v as JSON to path atomically, 0600 (a temporary
// file beside it, renamed).
func WritePrivateJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("editor tools: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".disc-*") // 0600
	if err != nil {
		return fmt.Errorf("editor tools: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("editor tools: %w", werr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("editor tools: %w", err)
	}
	return nil
}

// Find picks, for a relay started without the environment
// variables, the editor-tools socket of the Neovim whose workspace is cwd
// or its nearest ancestor (the newest among equals). Files of dead Neovims
// are skipped.
func Find(cwd string) (socket, token string, err error) {
	dir, err := PrivateDir()
	if err != nil {
		return "", "", err
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	type cand struct {
		d     Discovery
		depth int
		mod   int64
	}
	var cands []cand
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var d Discovery
		if json.Unmarshal(b, &d) != nil || d.Socket == "" || d.Token == "" || d.Workspace == "" || !processAlive(d.PID) {
			continue
		}
		if d.Workspace != cwd && !strings.HasPrefix(cwd, strings.TrimSuffix(d.Workspace, "/")+"/") {
			continue
		}
		var mod int64
		if st, err := os.Stat(p); err == nil {
			mod = st.ModTime().UnixNano()
		}
		cands = append(cands, cand{d, len(d.Workspace), mod})
	}
	if len(cands) == 0 {
		return "", "", fmt.Errorf("no Neovim serving nvim-claude's editor tools for %s (run :ClaudeStart or :ClaudeServe in a Neovim whose cwd holds it)", cwd)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].depth != cands[j].depth {
			return cands[i].depth > cands[j].depth
		}
		return cands[i].mod > cands[j].mod
	})
	return cands[0].d.Socket, cands[0].d.Token, nil
}

// Token reads the token of the editor-tools socket sock from
// the discovery file beside it (which only its owner can read).
func Token(sock string) (string, error) {
	b, err := os.ReadFile(strings.TrimSuffix(sock, ".sock") + ".json")
	if err != nil {
		return "", fmt.Errorf("no discovery file for %s (has that Neovim stopped?): %w", sock, err)
	}
	var d Discovery
	if err := json.Unmarshal(b, &d); err != nil || d.Token == "" || d.Socket != sock {
		return "", fmt.Errorf("the discovery file of %s is not valid", sock)
	}
	return d.Token, nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
