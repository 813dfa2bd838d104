package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func checkPerm(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	if runtime.GOOS == "windows" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestWriteLockFile(t *testing.T) {
	configDir := filepath.Join(t.TempDir(), "cfg")
	path := LockFilePath(configDir, 45678)
	if want := filepath.Join(configDir, "ide", "45678.lock"); path != want {
		t.Fatalf("LockFilePath = %s, want %s", path, want)
	}
	lock := LockFile{PID: 123, WorkspaceFolders: []string{"/a & b", "/c"}, IDEName: "Neovim (a)", Transport: "ws", AuthToken: "tok"}
	if err := WriteLockFile(path, lock); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"pid":123,"workspaceFolders":["/a & b","/c"],"ideName":"Neovim (a)","transport":"ws","runningInWindows":false,"authToken":"tok"}`
	if string(data) != want {
		t.Error(diff(want, string(data)))
	}
	checkPerm(t, LockDir(configDir), 0o700)
	checkPerm(t, path, 0o600)

	// A rewrite replaces the content and leaves no temporary file behind;
	// nil folders are written as [].
	lock.WorkspaceFolders = nil
	if err := WriteLockFile(path, lock); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.WorkspaceFolders == nil || len(got.WorkspaceFolders) != 0 || got.PID != 123 {
		t.Errorf("reread: %+v", got)
	}
	if names := dirNames(t, LockDir(configDir)); len(names) != 1 || names[0] != "45678.lock" {
		t.Errorf("lock dir holds %v", names)
	}
}

func TestWriteLockFileTightensDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	configDir := t.TempDir()
	dir := LockDir(configDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := WriteLockFile(LockFilePath(configDir, 1), LockFile{PID: 1}); err != nil {
		t.Fatal(err)
	}
	checkPerm(t, dir, 0o700)
}

func TestWriteLockFileIsAtomic(t *testing.T) {
	path := LockFilePath(t.TempDir(), 2)
	contents := []LockFile{
		{PID: 1, WorkspaceFolders: []string{"/" + strings.Repeat("a", 5000)}, Transport: "ws"},
		{PID: 2, WorkspaceFolders: []string{"/b"}, Transport: "ws"},
	}
	if err := WriteLockFile(path, contents[0]); err != nil {
		t.Fatal(err)
	}
	const rounds = 200
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // before the temporary dir goes, even on failure
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			if err := WriteLockFile(path, contents[i%2]); err != nil {
				errs <- err
				return
			}
		}
	}()
	for i := 0; i < rounds; i++ {
		lock, err := ReadLockFile(path) // never partial: every read decodes
		if err != nil {
			t.Fatal(err)
		}
		if lock.PID != 1 && lock.PID != 2 {
			t.Fatalf("read %+v", lock)
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func TestSweepLockFiles(t *testing.T) {
	configDir := t.TempDir()
	dir := LockDir(configDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	dead := deadPID(t)
	files := map[string]string{
		"1001.lock":        fmt.Sprintf(`{"pid":%d,"transport":"ws"}`, dead),
		"1002.lock":        fmt.Sprintf(`{"pid":%d,"transport":"ws"}`, os.Getpid()),
		"1003.lock":        `not json`,
		"1004.lock":        `{"pid":0}`,
		"1005.lock":        `{"transport":"ws"}`,
		"notes.txt":        fmt.Sprintf(`{"pid":%d}`, dead),
		".1006.lock.1.tmp": fmt.Sprintf(`{"pid":%d}`, dead),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "1007.lock"), 0o700); err != nil {
		t.Fatal(err)
	}
	removed, err := SweepLockFiles(configDir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "1001.lock"); len(removed) != 1 || removed[0] != want {
		t.Errorf("removed %v, want [%s]", removed, want)
	}
	want := []string{".1006.lock.1.tmp", "1002.lock", "1003.lock", "1004.lock", "1005.lock", "1007.lock", "notes.txt"}
	if got := dirNames(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("left %v, want %v", got, want)
	}

	if removed, err := SweepLockFiles(t.TempDir()); err != nil || removed != nil {
		t.Errorf("sweep of a missing dir: %v, %v", removed, err)
	}
}

func TestProcessAlive(t *testing.T) {
	tests := []struct {
		pid  int
		want bool
	}{
		{os.Getpid(), true},
		{deadPID(t), false},
		{0, false},
		{-1, false},
	}
	for _, tt := range tests {
		if got := ProcessAlive(tt.pid); got != tt.want {
			t.Errorf("ProcessAlive(%d) = %v, want %v", tt.pid, got, tt.want)
		}
	}
}

func TestRemoveLockFile(t *testing.T) {
	path := LockFilePath(t.TempDir(), 3)
	if err := WriteLockFile(path, LockFile{PID: 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // a missing file is no error
		if err := RemoveLockFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveLockFile: %v", err)
	}
}

func TestServerLockFile(t *testing.T) {
	cfg := testConfig(t)
	stale := LockFilePath(cfg.ConfigDir, 1)
	if err := WriteLockFile(stale, LockFile{PID: deadPID(t)}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, cfg, nil)

	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale lock of a dead pid not swept: %v", err)
	}
	path := s.LockPath()
	if want := LockFilePath(cfg.ConfigDir, s.Port()); path != want {
		t.Fatalf("LockPath = %s, want %s", path, want)
	}
	checkPerm(t, path, 0o600)
	checkPerm(t, filepath.Dir(path), 0o700)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := json.Marshal(s.Token())
	want := fmt.Sprintf(`{"pid":%d,"workspaceFolders":["/home/user/project"],"ideName":"Neovim (test)","transport":"ws","runningInWindows":false,"authToken":%s}`, os.Getpid(), tok)
	if string(data) != want {
		t.Error(diff(want, string(data)))
	}

	if err := s.SetWorkspaceFolders([]string{"relative"}); err == nil {
		t.Error("relative folder accepted")
	}
	if err := s.SetWorkspaceFolders([]string{"/x", "/y"}); err != nil {
		t.Fatal(err)
	}
	lock, err := ReadLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lock.WorkspaceFolders, " ") != "/x /y" || lock.AuthToken != s.Token() {
		t.Errorf("after SetWorkspaceFolders: %+v", lock)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock after Close: %v", err)
	}
}
