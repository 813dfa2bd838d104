//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// recordedText is the answer the fake API streams while the real CLI is
// recorded. It is plain ASCII without quotes or backslashes, so that its
// JSON form is the same in the CLI's JSON.stringify and in Go, and the
// stand-in can find it in the recorded lines.
const recordedText = "Here is the plan.\n\n- read the file\n- change the greeting\n\nThe code:\n\n```lua\nlocal x = 1\n```\n\nDone."

// recordedPrompt is the prompt of the recorded turn.
const recordedPrompt = "say hi"

// TestRecord runs the real CLI (CLAUDE_BIN, the version clienv pins)
// against the fake Messages API with the command line chatpanel uses and
// writes what it said to testdata/stream.jsonl ({"dir","line"} per line
// written or read, as chat/testdata) and the session transcript it kept to
// testdata/session.jsonl, with the test's paths replaced by $CWD, $CONFIG
// and $HOME. It only runs with CHAT_BENCH_RECORD=1:
//
//	CHAT_BENCH_RECORD=1 CLAUDE_BIN=… go test ./internal/bench/standin -run TestRecord
func TestRecord(t *testing.T) {
	if os.Getenv("CHAT_BENCH_RECORD") != "1" {
		t.Skip("re-records testdata from the real CLI; set CHAT_BENCH_RECORD=1")
	}
	bin := clienv.Binary(t)
	api := fakeapi.New(t)
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := clienv.New(t, api.URL(), cwd)
	// Two turns: the transcript shows which entries each turn adds.
	api.Script(fakeapi.Reply(fakeapi.Text(recordedText)), fakeapi.Reply(fakeapi.Text(recordedText)))

	var mu sync.Mutex
	var lines []string
	results := make(chan chat.Event, 16)
	o := chat.Options{
		// What chatpanel passes for the default configuration (chat.mode
		// "default", no model, effort or tools): the same Args().
		Bin: bin, Cwd: cwd, Env: env.Environ(), Mode: "default",
		OnEvent: func(ev chat.Event) {
			switch ev.(type) {
			case chat.ResultEvent, chat.LifecycleEvent, chat.ExitEvent:
				results <- ev
			}
		},
		Trace: func(dir string, line []byte) {
			mu.Lock()
			defer mu.Unlock()
			// The line as the CLI wrote it (json.Marshal would
			// re-escape <, > and &).
			lines = append(lines, `{"dir":"`+dir+`","line":`+string(bytes.TrimSpace(line))+`}`)
		},
	}
	t.Logf("argv: %s %s", bin, strings.Join(o.Args(), " "))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := chat.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		<-s.Done()
	})
	for turn := 0; turn < 2; turn++ {
		id := uuid.NewString()
		if err := s.Send(ctx, id, []chat.ContentBlock{{Type: "text", Text: recordedPrompt}}); err != nil {
			t.Fatal(err)
		}
		// The turn ends with its result, then the lifecycle "completed".
		for done := false; !done; {
			select {
			case ev := <-results:
				if l, ok := ev.(chat.LifecycleEvent); ok && l.State == "completed" {
					done = true
				}
				if _, ok := ev.(chat.ExitEvent); ok {
					t.Fatal("the CLI exited during the turn")
				}
			case <-ctx.Done():
				t.Fatal("no end of turn")
			}
		}
	}
	sid := s.SessionID()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	mu.Lock()
	stream := strings.Join(lines, "\n") + "\n"
	mu.Unlock()
	transcript, err := os.ReadFile(chat.TranscriptPath(env.ConfigDir, cwd, sid))
	if err != nil {
		t.Fatal(err)
	}
	repl := strings.NewReplacer(env.ConfigDir, "$CONFIG", env.Home, "$HOME", cwd, "$CWD")
	for name, body := range map[string]string{"stream.jsonl": stream, "session.jsonl": string(transcript)} {
		if err := os.WriteFile(filepath.Join("testdata", name), []byte(repl.Replace(body)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
