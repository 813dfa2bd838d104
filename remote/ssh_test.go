package remote_test

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/remote"
	"github.com/nvim-claude/nvim-claude/remote/sshtest"
)

func sshTarget(t *testing.T) (remote.Target, *sshtest.Server, string) {
	t.Helper()
	root := t.TempDir()
	local := filepath.Join(root, "local", "app")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, local, filepath.Join(root, "far", "workspaces", "app"))
	cfg := filepath.Join(root, "farconfig")
	return remote.Target{Kind: remote.SSH, Dest: srv.Dest, Dir: srv.Far, ConfigDir: cfg, Options: srv.Options}, srv, cfg
}

// Through real OpenSSH: the lock arrives whole and private where the far
// CLI looks, over stdin; RemoveLock takes it away; the far side sees the
// workspace under its own path.
func TestSSHLockAndMount(t *testing.T) {
	tg, srv, cfg := sshTarget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lock := []byte(`{"pid":1,"workspaceFolders":["` + srv.Far + `"],"ideName":"Neovim","transport":"ws","authToken":"s3cret"}`)
	if err := tg.WriteLock(ctx, 4321, lock); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cfg, "ide", "4321.lock")
	got, err := os.ReadFile(p)
	if err != nil || string(got) != string(lock) {
		t.Fatalf("far lock = %q, %v", got, err)
	}
	for _, f := range []string{p, filepath.Dir(p)} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s not private: %v %v", f, fi.Mode(), err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Fatalf("left behind in the lock dir: %v", ents)
	}
	if err := tg.RemoveLock(ctx, 4321); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("far lock still there: %v", err)
	}
	// The far path shows the local workspace only inside the session.
	if err := os.WriteFile(filepath.Join(srv.Local, "x.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := tg.ReadFile(ctx, srv.Far+"/x.txt", 100)
	if err != nil || string(out) != "hello" {
		t.Fatalf("far read = %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(srv.Far, "x.txt")); err == nil {
		t.Fatal("the bind mount leaked out of the session's namespace")
	}
}

// A far command with the forward, through real OpenSSH: the remote forward
// carries a connection from the far loopback port to the local server,
// and the far command runs in the far directory with the port in its
// environment.
func TestSSHForward(t *testing.T) {
	tg, _, _ := sshTarget(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	tg.FarPort = sshtest.FreePort(t) // same machine: the far port must differ
	served := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		served <- line
		_, _ = c.Write([]byte("pong\n"))
	}()
	// A stand-in for claude: reports its cwd and port, then talks to the
	// forwarded port with bash's /dev/tcp.
	argv, err := tg.Exec([]string{"bash", "-c", `pwd; echo "port=$CLAUDE_CODE_SSE_PORT"; exec 3<>/dev/tcp/127.0.0.1/$CLAUDE_CODE_SSE_PORT; echo ping >&3; head -n1 <&3`},
		tg.Env(port), false, port)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.WaitDelay = 2 * time.Second
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%q: %v: %s", argv, err, out)
	}
	want := tg.Dir + "\nport=" + strconv.Itoa(tg.FarPort) + "\npong\n"
	if string(out) != want {
		t.Fatalf("far output %q, want %q", out, want)
	}
	if got := <-served; strings.TrimSpace(got) != "ping" {
		t.Fatalf("local server got %q", got)
	}
}
