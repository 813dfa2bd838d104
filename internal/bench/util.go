//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// project makes a fresh project directory holding files (relative path →
// contents).
func (r *runner) project(name string, files map[string]string) (string, error) {
	r.mu.Lock()
	r.seq++
	dir := filepath.Join(r.tmp, fmt.Sprintf("proj-%s-%d", name, r.seq))
	r.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	// Resolve symlinks (/tmp may be one): Neovim reports real paths.
	return filepath.EvalSymlinks(dir)
}

func pidSelf() int { return os.Getpid() }

// served is a fresh project (name, files) with a Neovim that has the plugin
// and runs its IDE server: the start of most scenarios. The caller closes
// the editor.
func (r *runner) served(ctx context.Context, name string, files map[string]string) (*editor, lockFile, error) {
	dir, err := r.project(name, files)
	if err != nil {
		return nil, lockFile{}, err
	}
	e, err := r.startEditor(ctx, editorOpts{plugin: true, dir: dir})
	if err != nil {
		return nil, lockFile{}, err
	}
	lock, err := e.serve(ctx)
	if err != nil {
		e.close()
		return nil, lockFile{}, err
	}
	return e, lock, nil
}
