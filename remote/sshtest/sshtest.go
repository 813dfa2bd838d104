// Package sshtest starts a throwaway OpenSSH server for tests: Debian's
// sshd on a loopback port, a throwaway host key and client key, its own
// config file (the system's sshd config is never read or changed), and
// every session entering a mount namespace in which a far directory shows
// a local one (a bind mount), so the far side sees the workspace under
// another path as it does on a dev box or in a container.
//
// It needs root (sshd's privilege separation, unshare -m) and sshd; Start
// skips the test and says why when either is missing. StartRuntime is the
// same far side behind a stand-in for docker's and podman's exec.
package sshtest

import (
	"context"
	"fmt"
	"net"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// T is what Start needs of its caller: a test (testing.TB) or the
// benchmark runner, which has no testing.TB.
type T interface {
	Helper()
	Skip(args ...any)
	Skipf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
	Cleanup(func())
	Logf(format string, args ...any)
	Failed() bool
}

// Server is a running throwaway sshd.
type Server struct {
	Port    int
	Dest    string   // user@127.0.0.1
	Options []string // the ssh client options that reach it
	Far     string   // the far path of the workspace
	Local   string   // the local workspace it shows
}

// Start starts sshd for t, showing local at far inside every session;
// it stops when t ends. far must not exist yet (it is created as an empty
// mount point).
func Start(t T, local, far string) *Server {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshtest: needs root (sshd privilege separation, unshare -m)")
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, e := os.Stat("/usr/sbin/sshd"); e != nil {
			t.Skip("sshtest: no sshd (apt-get install openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}
	for _, p := range []string{"ssh", "ssh-keygen", "unshare", "nsenter", "ip", "bash"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("sshtest: no %s", p)
		}
	}
	// sshd refuses to start without its privilege-separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Skipf("sshtest: /run/sshd: %v", err)
	}
	dir := t.TempDir()
	keygen := func(name string) string {
		p := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		return p
	}
	hostKey, userKey := keygen("host"), keygen("user")
	auth := filepath.Join(dir, "authorized_keys")
	pub, err := os.ReadFile(userKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(auth, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(far, 0o755); err != nil {
		t.Fatal(err)
	}
	// The session enters its own mount namespace, binds the workspace at
	// the far path, and runs what the client asked for (or a login shell).
	enter := filepath.Join(dir, "enter")
	script := "#!/bin/sh\nexec unshare -m --propagation private sh -c 'mount --bind \"$1\" \"$2\" && cd / && if [ -n \"$SSH_ORIGINAL_COMMAND\" ]; then exec sh -c \"$SSH_ORIGINAL_COMMAND\"; else exec sh -l; fi' enter " +
		shq(local) + " " + shq(far) + "\n"
	if err := os.WriteFile(enter, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := filepath.Join(dir, "sshd_config")
	conf := strings.Join([]string{
		"Port " + strconv.Itoa(port),
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + auth,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"AllowTcpForwarding yes", // remote for the hold; local too for the benchmark's client
		"AllowStreamLocalForwarding remote",
		"StreamLocalBindUnlink yes",
		"GatewayPorts no",
		"X11Forwarding no",
		"PrintMotd no",
		"ForceCommand " + enter,
		"LogLevel ERROR",
	}, "\n") + "\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// sshd runs in its own network namespace (loopback up): the far
	// side's 127.0.0.1 is not ours, as on another machine, so a remote
	// forward may use the same port number as our server. The client
	// reaches it through a ProxyCommand that enters that namespace.
	cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c", `ip link set lo up && exec "$0" -D -e -f "$1"`, sshd, cfg)
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("sshd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("sshd log:\n%s", log.String())
		}
	})
	s := &Server{
		Port: port, Dest: "root@127.0.0.1", Far: far, Local: local,
		Options: []string{"-p", strconv.Itoa(port), "-i", userKey, "-F", "/dev/null",
			"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"},
	}
	proxy := "nsenter --net=/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/net bash -c 'exec 2>/dev/null 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && { cat <&3 & p=$!; cat >&3; kill $p; }'"
	s.Options = append(s.Options, "-o", "ProxyCommand="+proxy)
	// Wait until it answers (bounded, not a timing assertion).
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/net", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(port)).Run()
		if err == nil {
			break
		}
		select {
		case <-done:
			t.Fatalf("sshd exited: %s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen: %s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// FreePort is a loopback port nothing listens on right now.
func FreePort(t T) int { return freePort(t) }

func freePort(t T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// String names the server for logs.
func (s *Server) String() string {
	return fmt.Sprintf("sshd %s port %d (%s → %s)", s.Dest, s.Port, s.Far, s.Local)
}
