package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// waitingCall is a waiting PermissionRequest hook's call in flight.
type waitingCall struct {
	cancel context.CancelFunc
	done   chan struct{}
	reply  string // the host's reply, once done ("error: …" for an error)
}

// callWaiting makes the hook call c as `nvim-claude hook … wait` does and
// returns once its prompt is in the table (the call goes on waiting).
func callWaiting(t *testing.T, s *Sessions, c HookCall) *waitingCall {
	t.Helper()
	c.Wait = "1"
	raw, _ := json.Marshal(c)
	ctx, cancel := context.WithCancel(context.Background())
	w := &waitingCall{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	before := len(s.answers)
	s.mu.Unlock()
	go func() {
		defer close(w.done)
		res, err := s.Methods()[HookMethod](ctx, &mcp.MethodRequest{Params: raw})
		if err != nil {
			w.reply = "error: " + err.Error()
			return
		}
		b, _ := json.Marshal(res)
		w.reply = string(b)
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := len(s.answers)
		s.mu.Unlock()
		if n > before {
			return w
		}
		select {
		case <-w.done:
			t.Fatalf("the hook's call did not wait: %s", w.reply)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the prompt never reached the table")
		}
	}
}

func (w *waitingCall) result(t *testing.T) string {
	t.Helper()
	select {
	case <-w.done:
		return w.reply
	case <-time.After(30 * time.Second):
		t.Fatal("the hook's call is still waiting")
		return ""
	}
}

func answerWith(s *Sessions, id string, fields map[string]any) error {
	fields["request_id"] = id
	raw, _ := json.Marshal(fields)
	_, err := s.Hooks().LuaRequests["sessions.answer"](context.Background(), raw)
	return err
}

// TestPendingAnswers: a terminal's prompt whose hook waits leaves the table
// of pending answers exactly once — answered in Neovim (the hook gets the
// decision), or dropped (the hook gets none) when the terminal answered
// (the call ran, another began, the turn ended or a new one began), when
// the hook went away, when the session exited or the host closes — and
// each way is told to Lua once, with the session's state after it.
func TestPendingAnswers(t *testing.T) {
	bash := HookCall{Event: "PermissionRequest", Tool: "Bash", Input: "make test", InputKey: "k1"}
	plan := HookCall{Event: "PermissionRequest", Tool: PlanTool, Input: "plan: # Plan", InputKey: "k2", Plan: "# Plan\n1. do it"}
	hook := func(ev, tool, key string) func(*Sessions, string, *waitingCall) error {
		return func(s *Sessions, sid string, _ *waitingCall) error {
			return s.Hook(HookCall{Session: sid, Event: ev, Tool: tool, InputKey: key})
		}
	}
	answer := func(f map[string]any) func(*Sessions, string, *waitingCall) error {
		return func(s *Sessions, _ string, _ *waitingCall) error { return answerWith(s, "t1/1", f) }
	}
	for _, tt := range []struct {
		name    string
		call    HookCall
		act     func(s *Sessions, sid string, w *waitingCall) error
		err     string // the act's error; then the prompt stays, and Stop ends it
		reply   string
		by      string
		state   string
		request bool // the session still shows a request
	}{
		{"allowed in Neovim", bash, answer(map[string]any{"behavior": "allow"}),
			"", `{"decision":{"behavior":"allow"}}`, ByNeovim, Working, false},
		{"allowed for the session", bash, answer(map[string]any{"behavior": "allow", "scope": "session"}),
			"", `{"decision":{"behavior":"allow","scope":"session"}}`, ByNeovim, Working, false},
		{"denied: the model is told", bash, answer(map[string]any{"behavior": "deny"}),
			"", `{"decision":{"behavior":"deny","message":"The user denied this Bash call."}}`, ByNeovim, Working, false},
		{"a plan sent back with a comment", plan, answer(map[string]any{"behavior": "deny", "message": "add tests"}),
			"", `{"decision":{"behavior":"deny","message":"The user wants changes to the plan before approving it:\nadd tests"}}`, ByNeovim, Working, false},
		{"a plan approved: manual mode by default", plan, answer(map[string]any{"behavior": "allow"}),
			"", `{"decision":{"behavior":"allow","mode":"default"}}`, ByNeovim, Working, false},
		{"a plan approved into acceptEdits", plan, answer(map[string]any{"behavior": "allow", "mode": "acceptEdits"}),
			"", `{"decision":{"behavior":"allow","mode":"acceptEdits"}}`, ByNeovim, Working, false},
		{"a plan approved into plan mode is refused", plan, answer(map[string]any{"behavior": "allow", "mode": "plan"}),
			"mode must be one of", "{}", ByTerminal, Done, false},
		{"a cut plan cannot be approved", HookCall{Event: "PermissionRequest", Tool: PlanTool, Plan: "# Pl", PlanCut: "1"}, answer(map[string]any{"behavior": "allow"}),
			"too long to show", "{}", ByTerminal, Done, false},
		{"an unknown behavior is refused", bash, answer(map[string]any{"behavior": "maybe"}),
			"behavior must be allow or deny", "{}", ByTerminal, Done, false},
		{"an unknown scope is refused", bash, answer(map[string]any{"behavior": "allow", "scope": "forever"}),
			"scope must be once or session", "{}", ByTerminal, Done, false},
		{"an unknown prompt", bash, func(s *Sessions, _ string, _ *waitingCall) error {
			return answerWith(s, "t1/9", map[string]any{"behavior": "allow"})
		},
			"no longer open", "{}", ByTerminal, Done, false},
		{"allowed in the terminal: the call ran", bash, hook("PostToolUse", "Bash", "k1"), "", "{}", ByTerminal, Working, false},
		{"another call of the tool ran, its prompt stays", bash, func(s *Sessions, sid string, w *waitingCall) error {
			callWaiting(t, s, HookCall{Session: sid, Event: "PermissionRequest", Tool: "Bash", Input: "ls", InputKey: "k9"})
			if err := s.Hook(HookCall{Session: sid, Event: "PostToolUse", Tool: "Bash", InputKey: "k9"}); err != nil {
				return err
			}
			if x := s.List()[0]; x.State != NeedsInput || x.Request == nil || x.Request.RequestID != "t1/1" {
				t.Fatalf("the first prompt is not shown again: %+v", x)
			}
			return s.Hook(HookCall{Session: sid, Event: "Stop"})
		}, "", "{}", ByTerminal, Done, false},
		{"the terminal moved on: the next call", bash, hook("PreToolUse", "Read", ""), "", "{}", ByTerminal, Working, false},
		{"the turn ended", bash, hook("Stop", "", ""), "", "{}", ByTerminal, Done, false},
		{"the turn failed", bash, hook("StopFailure", "", ""), "", "{}", ByTerminal, Done, false},
		{"a new prompt", bash, hook("UserPromptSubmit", "", ""), "", "{}", ByTerminal, Working, false},
		{"the hook went away (the prompt dismissed)", bash, func(_ *Sessions, _ string, w *waitingCall) error { w.cancel(); <-w.done; return nil },
			"", "error: the hook's call ended: context canceled", ByGone, Working, false},
		{"the session exited", bash, func(s *Sessions, sid string, _ *waitingCall) error {
			raw, _ := json.Marshal(map[string]any{"id": sid, "event": "exited"})
			_, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), raw)
			return err
		}, "", "{}", ByGone, Exited, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHost{}
			s := New(h)
			sid := newTerminal(t, s)
			if err := s.Hook(HookCall{Session: sid, Event: "PreToolUse", Tool: tt.call.Tool}); err != nil {
				t.Fatal(err)
			}
			c := tt.call
			c.Session = sid
			w := callWaiting(t, s, c)
			x := s.List()[0]
			if x.State != NeedsInput || x.Request == nil || x.Request.RequestID != "t1/1" || (c.Tool == PlanTool) != (x.Request.Kind == "plan") {
				t.Fatalf("the waiting prompt is not shown: %+v %+v", x, x.Request)
			}
			err := tt.act(s, sid, w)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if x := s.List()[0]; x.State != NeedsInput {
					t.Fatalf("a refused answer moved the session to %s", x.State)
				}
				if err := s.Hook(HookCall{Session: sid, Event: "Stop"}); err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := w.result(t); got != tt.reply {
				t.Fatalf("the hook got %s, want %s", got, tt.reply)
			}
			h.mu.Lock()
			told := strings.Join(h.answered, ", ")
			h.mu.Unlock()
			if !strings.Contains(told, "t1/1 by "+tt.by) || strings.Count(told, "t1/1 ") != 1 {
				t.Fatalf("Lua was told %q, want t1/1 by %s once", told, tt.by)
			}
			if x := s.List()[0]; x.State != tt.state || (x.Request != nil) != tt.request {
				t.Fatalf("after: %s %+v, want %s", x.State, x.Request, tt.state)
			}
			if err := answerWith(s, "t1/1", map[string]any{"behavior": "allow"}); !errors.Is(err, ErrNotPending) {
				t.Fatalf("a second answer: %v", err)
			}
		})
	}
}

// TestPendingAnswersRace: many prompts answered from Neovim while the
// terminal's hooks settle them and the host closes: each hook gets one
// reply, and nothing deadlocks (run with -race).
func TestPendingAnswersRace(t *testing.T) {
	s := New(&fakeHost{})
	sid := newTerminal(t, s)
	var calls []*waitingCall
	for i := 0; i < 20; i++ {
		calls = append(calls, callWaiting(t, s, HookCall{Session: sid, Event: "PermissionRequest", Tool: "Bash", Input: "x"}))
	}
	var wg sync.WaitGroup
	for i := 1; i <= 20; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			_ = answerWith(s, "t1/"+itoa(i), map[string]any{"behavior": "allow"})
		}(i)
		go func(i int) {
			defer wg.Done()
			if i%5 == 0 {
				_ = s.Hook(HookCall{Session: sid, Event: "PreToolUse", Tool: "Read"})
			}
			if i == 17 {
				s.Close()
			}
		}(i)
	}
	wg.Wait()
	s.Close()
	for _, w := range calls {
		if r := w.result(t); r != "{}" && r != `{"decision":{"behavior":"allow"}}` {
			t.Fatalf("reply %s", r)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) != 0 {
		t.Fatalf("%d prompts left in the table", len(s.answers))
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestHookOutput: the decision the waiting hook prints, in the CLI's
// words (hookSpecificOutput of PermissionRequest).
func TestHookOutput(t *testing.T) {
	in := json.RawMessage(`{"command":"make test"}`)
	sugg := json.RawMessage(`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make:*"}],"behavior":"allow","destination":"localSettings"}]`)
	for _, tt := range []struct {
		name, reply, tool string
		input, sugg       json.RawMessage
		want, err         string
	}{
		{"no decision", `{}`, "Bash", in, nil, "", ""},
		{"allow", `{"decision":{"behavior":"allow"}}`, "Bash", in, nil,
			`{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`, ""},
		{"allow for the session: the CLI's own rule", `{"decision":{"behavior":"allow","scope":"session"}}`, "Bash", in, sugg,
			`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make:*"}],"behavior":"allow","destination":"session"}]},"hookEventName":"PermissionRequest"}}`, ""},
		{"allow for the session without a command", `{"decision":{"behavior":"allow","scope":"session"}}`, "Bash", json.RawMessage(`{}`), nil, "", "no command"},
		{"deny", `{"decision":{"behavior":"deny","message":"no"}}`, "Bash", in, nil,
			`{"hookSpecificOutput":{"decision":{"behavior":"deny","interrupt":false,"message":"no"},"hookEventName":"PermissionRequest"}}`, ""},
		{"a plan approved", `{"decision":{"behavior":"allow","mode":"default"}}`, PlanTool, json.RawMessage(`{"plan":"p"}`), nil,
			`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{"plan":"p"},"updatedPermissions":[{"type":"setMode","mode":"default","destination":"session"}]},"hookEventName":"PermissionRequest"}}`, ""},
		{"a plan approved without its input", `{"decision":{"behavior":"allow"}}`, PlanTool, nil, nil, "", "needs the plan"},
		{"unknown behavior", `{"decision":{"behavior":"ask"}}`, "Bash", in, nil, "", "unknown behavior"},
		{"not JSON", `{`, "Bash", in, nil, "", "the host's answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HookOutput([]byte(tt.reply), tt.tool, tt.input, tt.sugg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || got != nil {
					t.Fatalf("got %s %v, want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s %v\nwant %s", got, err, tt.want)
			}
		})
	}
}

// In plan mode the model writes its plan to the CLI's plan file and its
// ExitPlanMode carries none: the prompt presents the plan last written
// (the PostToolUse of that Write), for its buffer and its request.
func TestPlanFromPlanFile(t *testing.T) {
	s := New(&fakeHost{})
	sid := newTerminal(t, s)
	if err := s.Hook(HookCall{Session: sid, Event: "PostToolUse", Tool: "Write", Plan: "# Old"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Hook(HookCall{Session: sid, Event: "PostToolUse", Tool: "Edit", Plan: "# Plan\n1. do it\n"}); err != nil {
		t.Fatal(err)
	}
	callWaiting(t, s, HookCall{Session: sid, Event: "PermissionRequest", Tool: PlanTool})
	res, err := s.Hooks().LuaRequests["sessions.plan"](context.Background(), json.RawMessage(`{"request_id":"t1/1"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if string(b) != `{"cut":false,"lines":["# Plan","1. do it"],"session":"t1"}` {
		t.Fatalf("sessions.plan: %s", b)
	}
	r := s.List()[0].Request
	if r == nil || r.Kind != "plan" || strings.Join(r.Lines, "|") != "# Plan|1. do it" || r.LineCount != 2 {
		t.Fatalf("the request: %+v", r)
	}
	if _, err := s.Hooks().LuaRequests["sessions.plan"](context.Background(), json.RawMessage(`{"request_id":"t1/7"}`)); !errors.Is(err, ErrNotPending) {
		t.Fatalf("the plan of no prompt: %v", err)
	}
}

// Decide is the wait without a transport: the decision, or none when the
// prompt was answered in the terminal, or an error when ctx ends first.
func TestDecide(t *testing.T) {
	for _, tt := range []struct {
		name string
		act  func(s *Sessions, sid string, cancel context.CancelFunc)
		want string
	}{
		{"answered in Neovim", func(s *Sessions, _ string, _ context.CancelFunc) {
			_ = answerWith(s, "t1/1", map[string]any{"behavior": "deny", "message": "no"})
		}, `&{deny  no }`},
		{"answered in the terminal", func(s *Sessions, sid string, _ context.CancelFunc) {
			_ = s.Hook(HookCall{Session: sid, Event: "Stop"})
		}, `<nil>`},
		{"the hook went away", func(_ *Sessions, _ string, cancel context.CancelFunc) { cancel() }, `error: the hook's call ended: context canceled`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(&fakeHost{})
			sid := newTerminal(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan string, 1)
			go func() {
				d, err := s.Decide(ctx, HookCall{Session: sid, Event: "PermissionRequest", Tool: "Bash", Input: "ls"})
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				got <- fmt.Sprint(d)
			}()
			for {
				s.mu.Lock()
				n := len(s.answers)
				s.mu.Unlock()
				if n == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			tt.act(s, sid, cancel)
			if g := <-got; g != tt.want {
				t.Fatalf("got %s, want %s", g, tt.want)
			}
		})
	}
}

// With answering on, only the PermissionRequest hook waits, with the long
// timeout; off, every hook is quick.
func TestHookSettingsAnswer(t *testing.T) {
	for _, answer := range []bool{false, true} {
		var got struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string `json:"command"`
					Timeout int    `json:"timeout"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal([]byte(HookSettings("/bin/nc", "t3", answer)), &got); err != nil {
			t.Fatal(err)
		}
		for _, ev := range HookEvents {
			h := got.Hooks[ev][0].Hooks[0]
			cmd, timeout := "/bin/nc hook "+ev+" t3", 5
			if answer && ev == "PermissionRequest" {
				cmd, timeout = cmd+" wait", AnswerTimeout
			}
			if h.Command != cmd || h.Timeout != timeout {
				t.Fatalf("answer %v, %s: %q %d, want %q %d", answer, ev, h.Command, h.Timeout, cmd, timeout)
			}
		}
	}
}
