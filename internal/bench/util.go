//go:build linux

package main

import (
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
