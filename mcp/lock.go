package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the content of a lock file, through which the Claude Code CLI
// discovers a running IDE server.
type LockFile struct {
	PID              int      `json:"pid"`
	WorkspaceFolders []string `json:"workspaceFolders"`
	IDEName          string   `json:"ideName"`
	Transport        string   `json:"transport"`
	RunningInWindows bool     `json:"runningInWindows"`
	AuthToken        string   `json:"authToken"`
}

// LockDir returns the directory holding the lock files of configDir.
func LockDir(configDir string) string {
	return filepath.Join(configDir, "ide")
}

// LockFilePath returns the path of the lock file for port: the file name is
// the port.
func LockFilePath(configDir string, port int) string {
	return filepath.Join(LockDir(configDir), strconv.Itoa(port)+".lock")
}

// WriteLockFile writes lock to path atomically: an exclusive temporary file
// (mode 0600) in the same directory is written, synced and renamed over path.
// The directory is created with mode 0700, and tightened to 0700 if it
// exists, belongs to the current user and is looser.
func WriteLockFile(path string, lock LockFile) error {
	if lock.WorkspaceFolders == nil {
		lock.WorkspaceFolders = []string{}
	}
	data, err := marshalJSON(lock)
	if err != nil {
		return fmt.Errorf("mcp: encode lock file: %w", err)
	}
	dir := filepath.Dir(path)
	if err := ensurePrivateDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("mcp: write lock file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mcp: write lock file: %w", err)
	}
	return nil
}

func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mcp: create lock directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("mcp: lock directory: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 && ownedByCurrentUser(fi) {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("mcp: tighten lock directory: %w", err)
		}
	}
	return nil
}

// ReadLockFile reads and decodes the lock file at path.
func ReadLockFile(path string) (LockFile, error) {
	var lock LockFile
	data, err := os.ReadFile(path)
	if err != nil {
		return lock, fmt.Errorf("mcp: read lock file: %w", err)
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return lock, fmt.Errorf("mcp: decode lock file %s: %w", path, err)
	}
	return lock, nil
}

// RemoveLockFile removes the lock file at path; a missing file is not an
// error.
func RemoveLockFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mcp: remove lock file: %w", err)
	}
	return nil
}

// SweepLockFiles removes the *.lock files of configDir whose pid is not a
// live process, as the CLI itself does, and returns their paths. Files that
// cannot be read or decoded, or that hold no positive pid, are left alone.
func SweepLockFiles(configDir string) ([]string, error) {
	dir := LockDir(configDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: sweep lock files: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		lock, err := ReadLockFile(path)
		if err != nil || lock.PID <= 0 || ProcessAlive(lock.PID) {
			continue
		}
		if err := RemoveLockFile(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}
