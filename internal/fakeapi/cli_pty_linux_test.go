package fakeapi_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/internal/pty"
)

// terminal is the CLI running interactively in a pseudo-terminal.
type terminal struct {
	master *os.File

	mu      sync.Mutex
	out     []byte        // everything the CLI wrote
	changed chan struct{} // closed and replaced when out grows or ends
	done    bool          // the CLI closed the terminal
}

// startInteractive starts the CLI with args in a pseudo-terminal, as the
// leader of a new session. The session's process group is killed and the
// terminal closed when the test ends.
func (s *session) startInteractive(t *testing.T, args ...string) *terminal {
	t.Helper()
	master, slave, err := pty.Open(50, 200)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Dir = s.cwd
	cmd.Env = append(s.env.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		cancel()
		master.Close()
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	term := &terminal{master: master, changed: make(chan struct{})}
	readDone := make(chan struct{})
	go term.read(readDone)
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		cancel()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		master.Close()
		<-readDone
	})
	return term
}

// read copies the CLI's output into t.out until the terminal closes.
func (t *terminal) read(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 64<<10)
	for {
		n, err := t.master.Read(buf)
		t.mu.Lock()
		t.out = append(t.out, buf[:n]...)
		if err != nil {
			t.done = true
		}
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// ansi matches terminal control sequences: CSI, OSC, DCS and two-byte escapes.
func ansi() *regexp.Regexp {
	return regexp.MustCompile(`\x1b\[[0-9;?<>=!]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1bP[^\x1b]*\x1b\\|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMNOZc]`)
}

// screen returns what the CLI wrote, without control sequences.
func (t *terminal) screen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ansi().ReplaceAllString(string(t.out), "")
}

// squeeze drops spaces: the CLI often moves the cursor instead of writing
// a space, so only the other characters of a text arrive in order.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// waitFor blocks until the CLI has written one of texts (compared without
// control sequences and spaces) and returns it. It fails when the CLI
// closes the terminal or ctx ends first.
func (t *terminal) waitFor(ctx context.Context, texts ...string) (string, error) {
	for {
		screen := squeeze(t.screen())
		for _, text := range texts {
			if strings.Contains(screen, squeeze(text)) {
				return text, nil
			}
		}
		t.mu.Lock()
		changed, done := t.changed, t.done
		t.mu.Unlock()
		if done {
			return "", errors.New("the CLI closed its terminal")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// typeKeys writes keys to the terminal as if typed.
func (t *terminal) typeKeys(keys string) error {
	_, err := t.master.Write([]byte(keys))
	return err
}

// TestCLIInteractive checks that the seeded config takes the interactive
// CLI straight to its prompt (no onboarding, API-key or trust dialog) and
// that a typed prompt gets the scripted answer.
func TestCLIInteractive(t *testing.T) {
	s := newSession(t)
	const answer = "Hello from the fake API, interactively."
	s.api.Script(fakeapi.Reply(fakeapi.Text(answer)))
	term := s.startInteractive(t, "--permission-mode", "default")
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()

	// The footer under the prompt box says "? for shortcuts" once the UI
	// takes input. The other texts open the dialogs the seed must prevent.
	const ready = "? for shortcuts"
	got, err := term.waitFor(ctx, ready,
		"Welcome to Claude Code",         // onboarding
		"Detected a custom API key",      // key not approved
		"Is this a project you created",  // folder not trusted
		"Unable to connect to Anthropic") // onboarding preflight
	if err != nil || got != ready {
		t.Fatalf("waiting for the prompt: got %q, %v\nscreen:\n%s", got, err, term.screen())
	}
	// Keys typed before the prompt is ready are kept, but an early Enter
	// is dropped: type, wait for the echo, then submit.
	if err := term.typeKeys("say hi"); err != nil {
		t.Fatal(err)
	}
	if _, err := term.waitFor(ctx, "say hi"); err != nil {
		t.Fatalf("the prompt does not echo: %v\nscreen:\n%s", err, term.screen())
	}
	if err := term.typeKeys("\r"); err != nil {
		t.Fatal(err)
	}
	req, err := s.api.WaitFor(ctx, func(r fakeapi.Request) bool { return r.Main })
	if err != nil {
		t.Fatalf("no main request: %v\nscreen:\n%s", err, term.screen())
	}
	if !strings.Contains(req.Text(), "say hi") {
		t.Errorf("the main request does not carry the prompt:\n%.2000s", req.Text())
	}
	if _, err := term.waitFor(ctx, answer); err != nil {
		t.Fatalf("the answer is not shown: %v\nscreen:\n%s", err, term.screen())
	}
	checkOnlyMessages(t, s)
}
