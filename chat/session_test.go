package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeCLI is the test binary as a misbehaving CLI (CHAT_FAKE=<mode>): it
// answers initialize, then
//   - "stuck": never reads its input again;
//   - "grandchild": starts a long sleep that holds stderr (not stdout)
//     open, and exits when its input ends.
func fakeCLI(mode string) int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 2
	}
	var req struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(line, &req)
	fmt.Printf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"models":[],"commands":[],"pid":%d}}}`+"\n",
		req.RequestID, os.Getpid())
	switch mode {
	case "dialog":
		return fakeDialogs(line, in)
	case "stuck":
		time.Sleep(time.Hour)
	case "grandchild":
		cmd := exec.Command("sleep", "3600")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return 2
		}
		fmt.Fprintf(os.Stderr, "grandchild %d\n", cmd.Process.Pid)
		for {
			if _, err := in.ReadBytes('\n'); err != nil {
				return 0
			}
		}
	}
	return 2
}

func startFake(t *testing.T, mode string, with ...func(*Options)) (*Session, *collector) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	o := Options{Bin: self, Cwd: t.TempDir(), Env: append(os.Environ(), "CHAT_FAKE="+mode), OnEvent: c.add}
	for _, f := range with {
		f(&o)
	}
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		<-s.Done()
	})
	return s, c
}

// A CLI that stops reading its input: Send gives up at its context's
// deadline instead of blocking the caller (Neovim) forever.
func TestSendToStuckCLI(t *testing.T) {
	s, _ := startFake(t, "stuck")
	big := strings.Repeat("x", 4<<20) // far more than a pipe holds
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Send(ctx, "u1", []ContentBlock{{Type: "text", Text: big}}) }()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Send to a CLI that does not read succeeded")
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send: %v", err)
		}
	case <-time.After(guard):
		t.Fatal("Send blocked on a CLI that does not read its input")
	}
	// The line was cut short: the stream is unusable, the process ends.
	select {
	case <-s.Done():
	case <-time.After(guard):
		t.Fatal("the process still runs after a cut-short line")
	}
}

// A grandchild holding stderr does not delay the exit report, and it is
// killed with the CLI's process group.
func TestExitWithGrandchildHoldingStderr(t *testing.T) {
	s, _ := startFake(t, "grandchild")
	var pid int
	for end := time.Now().Add(guard); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the fake CLI did not report its grandchild")
		}
		s.mu.Lock()
		_, _ = fmt.Sscanf(string(s.stderr), "grandchild %d", &pid)
		s.mu.Unlock()
	}
	_ = s.stdin.Close() // the fake exits 0 at the end of its input
	select {
	case <-s.Done():
	case <-time.After(guard):
		t.Fatal("the exit was not reported while a grandchild held stderr")
	}
	if ex := s.Exit(); ex.Code != 0 || !strings.Contains(ex.Stderr, "grandchild") {
		t.Errorf("exit = %+v", ex)
	}
	for end := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		proc, _ := os.FindProcess(pid)
		if proc.Signal(syscall.Signal(0)) != nil || err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the grandchild outlived the CLI")
		}
	}
}

// The CLI is told explicitly that we answer its permission prompts: with
// "--permission-prompts none" (or a default that became it) everything
// that would ask is denied without a word.
func TestArgsAskTheHost(t *testing.T) {
	args := strings.Join(Options{Mode: "default"}.Args(), " ")
	for _, want := range []string{"--permission-prompt-tool stdio", "--permission-prompts host", "--permission-mode manual"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
}
