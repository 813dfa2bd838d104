//go:build unix

package fakeapi_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// cliTimeout bounds one run of the CLI, so that a hung CLI fails the test
// instead of the whole package run.
const cliTimeout = 2 * time.Minute

// session is a fake API and an isolated CLI environment in a temp cwd.
type session struct {
	bin string
	api *fakeapi.Server
	env *clienv.Env
	cwd string
}

func newSession(t *testing.T) *session {
	t.Helper()
	bin := clienv.Binary(t)
	api := fakeapi.New(t)
	cwd := t.TempDir()
	return &session{bin: bin, api: api, env: clienv.New(t, api.URL(), cwd), cwd: cwd}
}

// runPrint runs the CLI with args in its own process group and returns its
// stdout and stderr. The group (the CLI and anything it started) is killed
// at the deadline and when the test ends.
func (s *session) runPrint(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Dir = s.cwd
	cmd.Env = s.env.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		cancel()
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // children may outlive the CLI
	})
	err = cmd.Wait()
	return out.String(), errOut.String(), err
}

// checkOnlyMessages fails the test if the CLI asked for anything but
// POST /v1/messages?beta=true with the environment's key.
func checkOnlyMessages(t *testing.T, s *session) {
	t.Helper()
	for i, r := range s.api.Requests() {
		if r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" {
			t.Errorf("request %d: %s %s?%s, want only POST /v1/messages?beta=true", i, r.Method, r.Path, r.Query)
		}
		if got := r.Header.Get("x-api-key"); got != s.env.APIKey {
			t.Errorf("request %d: x-api-key %q, want %q", i, got, s.env.APIKey)
		}
	}
}

func TestCLIPrintMode(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *session)
	}{
		{"scripted text is printed", func(t *testing.T, s *session) {
			const answer = "Hello from the fake API, turn 4711."
			s.api.Script(fakeapi.Reply(fakeapi.Text(answer)))
			stdout, stderr, err := s.runPrint(t, "-p", "say hi", "--output-format", "text")
			if err != nil {
				t.Fatalf("claude -p: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			if strings.TrimSpace(stdout) != answer {
				t.Errorf("stdout = %q, want %q", stdout, answer)
			}
			mains := s.api.MainRequests()
			if len(mains) != 1 {
				t.Fatalf("%d main requests, want 1", len(mains))
			}
			if !strings.Contains(mains[0].Text(), "say hi") {
				t.Errorf("the main request does not carry the prompt:\n%.2000s", mains[0].Text())
			}
			if s.api.Pending() != 0 {
				t.Errorf("%d scripted turns left", s.api.Pending())
			}
			checkOnlyMessages(t, s)
		}},
		{"Write of a new file in acceptEdits", func(t *testing.T, s *session) {
			path := filepath.Join(s.cwd, "hello.txt")
			const content = "hello from the fake API\n"
			write := fakeapi.ToolUse("Write", map[string]string{"file_path": path, "content": content})
			s.api.Script(
				fakeapi.Reply(fakeapi.Text("I will create hello.txt."), write),
				fakeapi.Reply(fakeapi.Text("Created hello.txt.")),
			)
			stdout, stderr, err := s.runPrint(t, "-p", "create hello.txt", "--output-format", "text",
				"--permission-mode", "acceptEdits")
			if err != nil {
				t.Fatalf("claude -p: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != content {
				t.Errorf("%s = %q, %v; want %q", path, got, err, content)
			}
			if !strings.Contains(stdout, "Created hello.txt.") {
				t.Errorf("stdout = %q, want the last scripted text", stdout)
			}
			mains := s.api.MainRequests()
			if len(mains) != 2 {
				t.Fatalf("%d main requests, want 2", len(mains))
			}
			if _, ok := mains[0].ToolResult(write.ID); ok {
				t.Errorf("the first request already has the tool_result")
			}
			res, ok := mains[1].ToolResult(write.ID)
			if !ok {
				t.Fatalf("the second main request has no tool_result for %s:\n%s", write.ID, mains[1].Body)
			}
			if res.IsError || !strings.Contains(res.ResultText(), path) {
				t.Errorf("tool_result = %q (is_error %v), want success for %s", res.ResultText(), res.IsError, path)
			}
			checkOnlyMessages(t, s)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, newSession(t))
		})
	}
}
