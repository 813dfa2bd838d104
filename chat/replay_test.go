package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a fake CLI: with CHAT_REPLAY=<recording> in
// its environment it plays a recording made by the CLI tests
// (CHAT_RECORD=1): it writes the recorded stdout lines and, where the host
// wrote, reads the host's line and checks it is the same kind of message.
func TestMain(m *testing.M) {
	if f := os.Getenv("CHAT_FAKE"); f != "" {
		os.Exit(fakeCLI(f))
	}
	if f := os.Getenv("CHAT_REPLAY"); f != "" {
		os.Exit(replay(f, os.Getenv("CHAT_REPLAY_CWD")))
	}
	os.Exit(m.Run())
}

// replayEntry is one recorded line.
type replayEntry struct {
	Dir  string          `json:"dir"`
	Line json.RawMessage `json:"line"`
}

// kind names what a host line is: its type plus the detail that matters.
func kind(raw []byte) string {
	var l struct {
		Type     string                   `json:"type"`
		UUID     string                   `json:"uuid"`
		Request  struct{ Subtype string } `json:"request"`
		Response struct {
			Subtype  string `json:"subtype"`
			Response struct {
				Behavior string `json:"behavior"`
			} `json:"response"`
		} `json:"response"`
	}
	if json.Unmarshal(raw, &l) != nil {
		return "invalid"
	}
	switch l.Type {
	case "control_request":
		return l.Type + "/" + l.Request.Subtype
	case "control_response":
		return l.Type + "/" + l.Response.Subtype + "/" + l.Response.Response.Behavior
	}
	return l.Type
}

func replay(file, cwd string) int {
	raw, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	text := strings.NewReplacer("$CWD", cwd, "$CONFIG", cwd+"/.cfg", "$HOME", cwd+"/.home").Replace(string(raw))
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 64<<20)
	uuids := map[string]string{} // recorded host uuid -> this run's
	for _, ln := range strings.Split(strings.TrimSpace(text), "\n") {
		var e replayEntry
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			fmt.Fprintln(os.Stderr, "bad recording line:", err)
			return 2
		}
		if e.Dir == "in" {
			if !in.Scan() {
				fmt.Fprintln(os.Stderr, "replay: stdin closed early, expected", kind(e.Line))
				return 3
			}
			got := in.Bytes()
			if kind(got) != kind(e.Line) {
				fmt.Fprintf(os.Stderr, "replay: host wrote %s, recording has %s\n", kind(got), kind(e.Line))
				return 3
			}
			var g, w struct {
				UUID string `json:"uuid"`
			}
			if json.Unmarshal(got, &g) == nil && json.Unmarshal(e.Line, &w) == nil && w.UUID != "" {
				uuids[w.UUID] = g.UUID
			}
			continue
		}
		out := string(e.Line)
		for rec, now := range uuids {
			out = strings.ReplaceAll(out, rec, now)
		}
		fmt.Println(out)
	}
	// Like the CLI: stay until stdin closes or end_session.
	for in.Scan() {
		var l struct {
			Type      string                   `json:"type"`
			RequestID string                   `json:"request_id"`
			Request   struct{ Subtype string } `json:"request"`
		}
		if json.Unmarshal(in.Bytes(), &l) != nil {
			fmt.Fprintln(os.Stderr, "Error parsing streaming input line")
			return 1
		}
		if l.Type == "control_request" {
			fmt.Printf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{}}}`+"\n", l.RequestID)
			if l.Request.Subtype == "end_session" {
				return 0
			}
		}
	}
	return 0
}

// startReplay starts a session whose process plays testdata/<name>.jsonl.
func startReplay(t *testing.T, name, cwd string) (*Session, *collector) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := filepath.Abs(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	s, err := Start(ctx, Options{
		Bin: exe, Cwd: cwd, OnEvent: c.add,
		Env: append(os.Environ(), "CHAT_REPLAY="+rec, "CHAT_REPLAY_CWD="+cwd),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		<-s.Done()
	})
	return s, c
}

// closeClean closes the session and checks the fake CLI had no complaint.
func closeClean(t *testing.T, s *Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ex := s.Exit(); ex == nil || ex.Code != 0 {
		t.Errorf("the replay ended with %+v", ex)
	}
}

// Transcript tests: the codec and the control flow against recorded CLI
// output.
func TestReplay(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, cwd string)
		drive func(t *testing.T, s *Session, c *collector, cwd string)
	}{
		{"streamed", nil, func(t *testing.T, s *Session, c *collector, cwd string) {
			if len(s.Init().Models) == 0 || s.Init().Models[0].Value == "" || len(s.Init().Commands) == 0 {
				t.Errorf("init = %+v", s.Init())
			}
			id := sendText(t, s, "say hi")
			res := c.waitResult(t, 1)
			if res.IsError || res.Result != "Hello from the fake API, streamed in pieces." || res.CostUSD <= 0 || res.ContextWindow <= 0 {
				t.Errorf("result = %+v", res)
			}
			var kinds []string
			for _, ev := range c.events() {
				switch e := ev.(type) {
				case InitEvent:
					kinds = append(kinds, "init:"+e.PermissionMode)
				case DeltaEvent:
					kinds = append(kinds, "delta:"+e.Kind+":"+e.Text)
					if !strings.HasPrefix(e.MessageID, "msg_") {
						t.Errorf("delta without message id: %+v", e)
					}
				case AssistantEvent:
					kinds = append(kinds, "assistant:"+e.Blocks[0].Text)
				case LifecycleEvent:
					if e.UUID != id {
						t.Errorf("lifecycle for %s, sent %s", e.UUID, id)
					}
					kinds = append(kinds, "lifecycle:"+e.State)
				case ResultEvent:
					kinds = append(kinds, "result")
				}
			}
			want := "lifecycle:queued lifecycle:started init:default delta:text:Hello from the  delta:text:fake API, strea " +
				"delta:text:med in pieces. assistant:Hello from the fake API, streamed in pieces. result"
			if got := strings.Join(kinds, " "); !strings.HasPrefix(got, want) {
				t.Errorf("events:\n%s\nwant prefix:\n%s", got, want)
			}
			if s.SessionID() == "" {
				t.Errorf("no session id")
			}
		}},
		{"edit_allow_edited", func(t *testing.T, cwd string) {
			if err := os.WriteFile(filepath.Join(cwd, "hello.txt"), []byte("hello world\nsecond line\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Session, c *collector, cwd string) {
			sendText(t, s, "change the greeting")
			req := c.waitPerm(t, 1)
			p := filepath.Join(cwd, "hello.txt")
			if req.ToolName != "Edit" || EditPath(req.ToolName, req.Input) != p || req.Description == "" {
				t.Fatalf("request = %+v", req)
			}
			in, err := EditedInput(req.ToolName, req.Input, readFile(t, p), "hi there (tweaked by the user)\nsecond line\n")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Allow(req.RequestID, in, nil); err != nil {
				t.Fatal(err)
			}
			if res := c.waitResult(t, 1); res.IsError || res.Result != "Done." {
				t.Errorf("result = %+v", res)
			}
			tr := c.waitN(t, 1, "Edit result", func(ev Event) bool {
				r, ok := ev.(ToolResultEvent)
				return ok && r.FilePath != ""
			}).(ToolResultEvent)
			if tr.FilePath != p || tr.ToolUseID != req.ToolUseID || tr.IsError {
				t.Errorf("tool result = %+v", tr)
			}
		}},
		{"edit_deny", nil, func(t *testing.T, s *Session, c *collector, cwd string) {
			sendText(t, s, "edit it")
			req := c.waitPerm(t, 1)
			if err := s.Allow(req.RequestID, json.RawMessage(`[]`), nil); err == nil {
				t.Errorf("allow with a non-object input was accepted")
			}
			if err := s.Deny(req.RequestID, "No: keep the greeting, the tests depend on it."); err != nil {
				t.Fatal(err)
			}
			c.waitResult(t, 1)
			tr := c.waitN(t, 1, "denied result", func(ev Event) bool { _, ok := ev.(ToolResultEvent); return ok && true }).(ToolResultEvent)
			n := 0
			for _, ev := range c.events() {
				if r, ok := ev.(ToolResultEvent); ok && r.ToolUseID == req.ToolUseID {
					tr, n = r, n+1
				}
			}
			if n != 1 || !tr.IsError || !strings.Contains(tr.Text, "keep the greeting") {
				t.Errorf("tool result = %+v", tr)
			}
		}},
		{"clear", nil, func(t *testing.T, s *Session, c *collector, cwd string) {
			sendText(t, s, "hello")
			c.waitResult(t, 1)
			before := s.SessionID()
			sendText(t, s, "/clear")
			reset := c.waitN(t, 1, "reset", func(ev Event) bool { _, ok := ev.(ConversationResetEvent); return ok }).(ConversationResetEvent)
			c.waitResult(t, 2)
			if reset.NewConversationID == "" || s.SessionID() == before || s.SessionID() == "" {
				t.Errorf("reset %+v: session %s → %s", reset, before, s.SessionID())
			}
		}},
		{"interrupt", nil, func(t *testing.T, s *Session, c *collector, cwd string) {
			sendText(t, s, "talk slowly")
			c.waitN(t, 1, "first delta", func(ev Event) bool { _, ok := ev.(DeltaEvent); return ok })
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			if err := s.Interrupt(ctx); err != nil {
				t.Fatal(err)
			}
			res := c.waitResult(t, 1)
			if !res.IsError || res.Subtype != "error_during_execution" || res.TerminalReason != "aborted_streaming" {
				t.Errorf("interrupted result = %+v", res)
			}
			aborted := c.count(func(ev Event) bool { a, ok := ev.(AssistantEvent); return ok && a.Aborted })
			if aborted != 1 {
				t.Errorf("%d aborted assistant events, want 1", aborted)
			}
			sendText(t, s, "again")
			if res := c.waitResult(t, 2); res.IsError || res.Result != "Second answer." {
				t.Errorf("second result = %+v", res)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, cwd)
			}
			s, c := startReplay(t, tt.name, cwd)
			tt.drive(t, s, c, cwd)
			closeClean(t, s)
		})
	}
}

// A host line the recording does not expect kills the fake CLI, which the
// session reports with its exit code and stderr.
func TestReplayMismatchIsReported(t *testing.T) {
	s, c := startReplay(t, "streamed", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if _, err := s.Request(ctx, "get_plan", nil); err == nil {
		t.Errorf("a request to a dying process succeeded")
	}
	ex := c.waitN(t, 1, "exit", func(ev Event) bool { _, ok := ev.(ExitEvent); return ok }).(ExitEvent)
	if ex.Code != 3 || !strings.Contains(ex.Stderr, "control_request/get_plan") {
		t.Errorf("exit = %+v", ex)
	}
	select {
	case <-s.Done():
	case <-time.After(guard):
		t.Fatal("Done not closed")
	}
}
