package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/remote/sshtest"
)

// waitGone waits (bounded) for path to disappear.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The hold through real OpenSSH: the lock is in place with a live far pid
// while the channel lives, the forward reaches the local server, and the
// lock is gone after Close — and after the ssh client is killed.
func TestSSHHold(t *testing.T) {
	tg, _, cfg := sshTarget(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the local server\n"))
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	tg.FarPort = sshtest.FreePort(t)
	lockPath := filepath.Join(cfg, "ide", strconv.Itoa(tg.FarPort)+".lock")
	lock := `{"pid":0,"workspaceFolders":["/w"],"ideName":"Neovim","transport":"ws","authToken":"s3cret"}`
	for _, end := range []string{"close", "kill"} {
		t.Run(end, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			h, err := tg.Start(ctx, port, []byte(lock))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			var got struct {
				PID       int    `json:"pid"`
				AuthToken string `json:"authToken"`
			}
			b, err := os.ReadFile(lockPath)
			if err != nil || json.Unmarshal(b, &got) != nil || got.AuthToken != "s3cret" || got.PID <= 0 {
				t.Fatalf("far lock %q, %v", b, err)
			}
			if err := syscall.Kill(got.PID, 0); err != nil {
				t.Fatalf("the lock's pid %d is not alive: %v", got.PID, err)
			}
			if strings.Contains(strings.Join(h.Argv(), " "), "s3cret") {
				t.Fatal("token on the command line")
			}
			// A far client reaches the local server through the forward.
			argv, err := tg.Exec([]string{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(tg.FarPort) + "; head -n1 <&3"}, nil, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			c := exec.CommandContext(ctx, argv[0], argv[1:]...)
			c.WaitDelay = 2 * time.Second
			out, err := c.CombinedOutput()
			if err != nil || string(out) != "hello from the local server\n" {
				t.Fatalf("through the forward: %q, %v", out, err)
			}
			if end == "close" {
				h.Close()
			} else {
				_ = h.Kill()
				<-h.Done()
			}
			waitGone(t, lockPath)
			if h.Err() == nil {
				t.Fatal("Err is nil after the end")
			}
		})
	}
}
