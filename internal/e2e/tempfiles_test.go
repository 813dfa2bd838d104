//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proposalDirs lists the proposal directories in tmp.
func proposalDirs(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, "nvim-claude-proposals-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A host killed outright leaves its proposal directory
// behind; the next host sweeps it at start. A host stopped normally leaves
// nothing.
func TestProposalDirsOfKilledHostsAreSwept(t *testing.T) {
	tmp := t.TempDir()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bndWrite(t, project, map[string]string{"a.txt": "one\n"})
	openDiff := func(e *editor) {
		t.Helper()
		e.Exec(t, `vim.cmd("ClaudeServe")`)
		st := e.status(t)
		c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
		c.handshake(t, os.Getpid())
		file := filepath.Join(project, "a.txt")
		c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"openDiff","arguments":{"old_file_path":%q,"new_file_path":%q,"new_file_contents":"two\n","tab_name":"t"}}}`, file, file))
		e.WaitFor(t, 30*time.Second, `#require("claude.diff").pending() == 1`, "", "the diff")
	}

	e1 := startEditor(t, editorOpts{dir: project, nvim: []string{"TMPDIR=" + tmp}})
	openDiff(e1)
	host := e1.hostPID(t)
	killOnCleanup(t, host)
	dirs := proposalDirs(t, tmp)
	if len(dirs) != 1 || !strings.Contains(filepath.Base(dirs[0]), fmt.Sprintf("-%d-", host)) {
		t.Fatalf("proposal directories %v, want one named with the host's pid %d", dirs, host)
	}
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, host, "the killed host")
	if len(proposalDirs(t, tmp)) != 1 {
		t.Fatal("the killed host's directory vanished by itself: the sweep is not what is tested")
	}

	e2 := startEditor(t, editorOpts{dir: project, nvim: []string{"TMPDIR=" + tmp}})
	openDiff(e2)
	host2 := e2.hostPID(t)
	killOnCleanup(t, host2)
	deadline := time.Now().Add(20 * time.Second)
	for {
		dirs := proposalDirs(t, tmp)
		if len(dirs) == 1 && strings.Contains(filepath.Base(dirs[0]), fmt.Sprintf("-%d-", host2)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the second start: %v (want only host %d's)", dirs, host2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e2.Exec(t, `vim.cmd("ClaudeStop")`)
	waitGone(t, host2, "the stopped host")
	if dirs := proposalDirs(t, tmp); len(dirs) != 0 {
		t.Fatalf("a normal stop left %v", dirs)
	}
}
