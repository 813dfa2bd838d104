package fakeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// logTB records what the server logs.
type logTB struct {
	testing.TB
	mu   sync.Mutex
	logs []string
}

func (l *logTB) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs = append(l.logs, fmt.Sprintf(format, args...))
}

func (l *logTB) lines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.logs, "\n")
}

// msgBody builds a request body. tools are tool names; messages are
// role/content pairs, content being a string or a JSON array.
func msgBody(stream bool, tools []string, messages ...any) []byte {
	var ts []map[string]any
	for _, n := range tools {
		ts = append(ts, map[string]any{"name": n, "input_schema": map[string]any{"type": "object"}})
	}
	var ms []map[string]any
	for i := 0; i+1 < len(messages); i += 2 {
		ms = append(ms, map[string]any{"role": messages[i], "content": messages[i+1]})
	}
	return mustJSON(map[string]any{"model": "claude-test", "stream": stream, "max_tokens": 100, "tools": ts, "messages": ms})
}

// post sends body to path with the default key and returns status and body.
func post(t *testing.T, s *Server, path, key string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// streamText sends a streaming request and returns the answer's text.
func streamText(t *testing.T, s *Server, body []byte) string {
	t.Helper()
	status, out := post(t, s, "/v1/messages?beta=true", APIKey, body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, out)
	}
	var text []string
	for _, b := range assemble(t, parseSSE(t, out)).blocks {
		if b.Type == "text" {
			text = append(text, b.Text)
		} else {
			text = append(text, "<"+b.Name+">")
		}
	}
	return strings.Join(text, "")
}

// editTools is a main request's tool set, cut down.
func editTools() []string {
	return []string{"Bash", "Edit", "Read", "Write"}
}

func TestScriptQueue(t *testing.T) {
	s := New(t)
	s.Script(Reply(Text("one")), Reply(Text("two"), ToolUse("Write", map[string]string{"file_path": "/f"})))
	s.Script(Reply(Text("three")))
	steps := []struct {
		name     string
		body     []byte
		want     string
		wantMain bool
		wantTurn int
	}{
		{"main takes turn 0", msgBody(true, editTools(), "user", "hi"), "one", true, 0},
		{"title request has no tools", msgBody(true, nil, "user", "name this"), SideText, false, -1},
		{"read-only subagent", msgBody(true, []string{"Read", "Bash"}, "user", "look"), SideText, false, -1},
		{"main takes turn 1", msgBody(true, []string{"Write"}, "user", "go"), "two<Write>", true, 1},
		{"compaction fork", msgBody(true, editTools(), "user", "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n… <summary> …"),
			"<analysis>\nOK\n</analysis>\n\n<summary>\nOK\n</summary>", false, -1},
		{"main takes turn 2", msgBody(true, []string{"Edit"}, "user", "again"), "three", true, 2},
		{"script empty", msgBody(true, editTools(), "user", "more"), NoTurnText, true, -1},
	}
	for i, st := range steps {
		if got := streamText(t, s, st.body); got != st.want {
			t.Errorf("%s: answer %q, want %q", st.name, got, st.want)
		}
		reqs := s.Requests()
		if len(reqs) != i+1 {
			t.Fatalf("%s: %d requests recorded, want %d", st.name, len(reqs), i+1)
		}
		r := reqs[i]
		if r.Main != st.wantMain || r.Turn != st.wantTurn {
			t.Errorf("%s: Main=%v Turn=%d, want %v %d", st.name, r.Main, r.Turn, st.wantMain, st.wantTurn)
		}
		if r.Path != "/v1/messages" || r.Query != "beta=true" || r.Method != http.MethodPost {
			t.Errorf("%s: recorded %s %s ? %s", st.name, r.Method, r.Path, r.Query)
		}
	}
	if n := s.Pending(); n != 0 {
		t.Errorf("Pending() = %d, want 0", n)
	}
	if n := len(s.MainRequests()); n != 4 {
		t.Errorf("%d main requests, want 4", n)
	}
}

// cached marks a content block with cache_control.
func cached(text string) []map[string]any {
	return []map[string]any{{"type": "text", "text": text, "cache_control": map[string]string{"type": "ephemeral"}}}
}

func plain(text string) []map[string]any {
	return []map[string]any{{"type": "text", "text": text}}
}

func TestClassification(t *testing.T) {
	toolResult := []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok",
		"cache_control": map[string]string{"type": "ephemeral"}}}
	tests := []struct {
		name string
		body []byte
		want bool
	}{
		{"no tools", msgBody(true, nil, "user", "hi"), false},
		{"tools without Edit and Write", msgBody(true, []string{"Bash", "Read", "Skill", "ToolSearch"}, "user", "hi"), false},
		{"Edit only", msgBody(true, []string{"Edit"}, "user", "hi"), true},
		{"Write only", msgBody(true, []string{"Write"}, "user", "hi"), true},
		{"deferred tools loaded", msgBody(true, []string{"Agent", "Edit", "NotebookEdit", "WebFetch", "Write"}, "user", "hi"), true},
		{"no messages", msgBody(true, editTools()), true},
		{"marker on last message", msgBody(true, editTools(), "user", cached("a"), "assistant", plain("b"), "user", toolResult), true},
		{"no markers at all", msgBody(true, editTools(), "user", plain("a"), "assistant", plain("b"), "user", plain("c")), true},
		{"marker only on the prefix", msgBody(true, editTools(), "user", cached("a"), "assistant", plain("b"), "user", plain("summarize")), false},
		{"compaction", msgBody(true, editTools(), "user", "x\nCRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n"), false},
		{"prompt suggestion", msgBody(true, editTools(), "user", cached("[SUGGESTION MODE: Suggest what the user might naturally type next]")), false},
		{"side question", msgBody(true, editTools(), "user", "This is a side question from the user. You must answer"), false},
		{"marker phrase earlier in the chat", msgBody(true, editTools(), "user", "[SUGGESTION MODE: x]", "assistant", "ok", "user", cached("go")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b body
			if err := json.Unmarshal(tt.body, &b); err != nil {
				t.Fatal(err)
			}
			if got := isMain(b); got != tt.want {
				t.Errorf("isMain = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSideAnswer(t *testing.T) {
	schema := func(s string) []byte {
		return []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"output_config":{"format":{"type":"json_schema","schema":` + s + `}}}`)
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"plain", msgBody(true, nil, "user", "hi"), SideText},
		{"session title", schema(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`), `{"title":"OK"}`},
		{"all property kinds", schema(`{"type":"object","properties":{"a":{"type":"array"},"b":{"type":"boolean"},"n":{"type":"integer"},"e":{"enum":["x","y"]},"o":{"type":"object","properties":{"s":{"type":"string"}}}}}`),
			`{"a":[],"b":false,"e":"x","n":0,"o":{"s":"OK"}}`},
		{"old output_format field", []byte(`{"output_format":{"type":"json_schema","schema":{"type":"string"}}}`), `"OK"`},
		{"summary", msgBody(true, nil, "user", "wrap it in <summary></summary> tags"), "<analysis>\nOK\n</analysis>\n\n<summary>\nOK\n</summary>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b body
			if err := json.Unmarshal(tt.body, &b); err != nil {
				t.Fatal(err)
			}
			if got := sideAnswer(b); got != tt.want {
				t.Errorf("sideAnswer = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	s := New(t)
	s.Script(Reply(Text("plain answer"), ToolUse("Read", map[string]string{"file_path": "/r"})))
	status, out := post(t, s, "/v1/messages", APIKey, msgBody(false, editTools(), "user", "hi"))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, out)
	}
	var m struct {
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-test" || m.StopReason != "tool_use" ||
		len(m.Content) != 2 || m.Content[0].Text != "plain answer" || m.Content[1].Name != "Read" ||
		string(m.Content[1].Input) != `{"file_path":"/r"}` || m.Usage.InputTokens <= 0 {
		t.Errorf("unexpected message %s", out)
	}
}

func TestOtherEndpoints(t *testing.T) {
	tb := &logTB{TB: t}
	s := New(tb)
	tests := []struct {
		name       string
		method     string
		path       string
		key        string
		wantStatus int
		wantInBody string
		wantLog    string
	}{
		{"count tokens", http.MethodPost, "/v1/messages/count_tokens", APIKey, http.StatusOK, `"input_tokens":`, ""},
		{"wrong key", http.MethodPost, "/v1/messages", "sk-wrong", http.StatusUnauthorized, `"authentication_error"`, "wrong x-api-key"},
		{"no key", http.MethodPost, "/v1/messages", "", http.StatusUnauthorized, `"authentication_error"`, "wrong x-api-key"},
		{"unknown path", http.MethodGet, "/v1/models", APIKey, http.StatusNotFound, `"not_found_error"`, "unknown request GET /v1/models"},
		{"reachability probe", http.MethodHead, "/api/hello", "", http.StatusNotFound, "", "unknown request HEAD /api/hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.URL()+tt.path, bytes.NewReader(msgBody(true, editTools(), "user", "hi")))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("x-api-key", tt.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || !strings.Contains(string(out), tt.wantInBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, out, tt.wantStatus, tt.wantInBody)
			}
			if tt.wantLog != "" && !strings.Contains(tb.lines(), tt.wantLog) {
				t.Errorf("log %q lacks %q", tb.lines(), tt.wantLog)
			}
		})
	}
	reqs := s.Requests()
	if len(reqs) != len(tests) {
		t.Fatalf("%d requests recorded, want %d", len(reqs), len(tests))
	}
	for _, r := range reqs {
		if r.Main || r.Turn != -1 {
			t.Errorf("%s %s recorded as Main=%v Turn=%d", r.Method, r.Path, r.Main, r.Turn)
		}
	}
}

func TestSetAPIKey(t *testing.T) {
	s := New(t)
	s.SetAPIKey("sk-other")
	if status, _ := post(t, s, "/v1/messages", APIKey, msgBody(false, nil, "user", "x")); status != http.StatusUnauthorized {
		t.Errorf("old key: status %d, want 401", status)
	}
	if status, _ := post(t, s, "/v1/messages", "sk-other", msgBody(false, nil, "user", "x")); status != http.StatusOK {
		t.Errorf("new key: status %d, want 200", status)
	}
}

func TestWaitFor(t *testing.T) {
	s := New(t)
	hasText := func(want string) func(Request) bool {
		return func(r Request) bool { return strings.Contains(r.Text(), want) }
	}
	streamText(t, s, msgBody(true, editTools(), "user", "early bird"))

	t.Run("already recorded", func(t *testing.T) {
		r, err := s.WaitFor(context.Background(), hasText("early bird"))
		if err != nil || !r.Main {
			t.Fatalf("WaitFor = %+v, %v", r, err)
		}
	})

	t.Run("recorded later", func(t *testing.T) {
		type result struct {
			r   Request
			err error
		}
		done := make(chan result, 1)
		started := make(chan struct{})
		go func() {
			r, err := s.WaitFor(context.Background(), func(r Request) bool {
				select {
				case <-started:
				default:
					close(started) // the first call means WaitFor is running
				}
				return hasText("late bird")(r)
			})
			done <- result{r, err}
		}()
		<-started
		streamText(t, s, msgBody(true, nil, "user", "late bird"))
		res := <-done
		if res.err != nil || res.r.Main || !strings.Contains(res.r.Text(), "late bird") {
			t.Fatalf("WaitFor = %+v, %v", res.r, res.err)
		}
	})

	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.WaitFor(ctx, hasText("never"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})

	t.Run("main requests", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan []Request, 1)
		go func() {
			reqs, err := s.WaitMainRequests(ctx, 3)
			if err != nil {
				t.Errorf("WaitMainRequests: %v", err)
			}
			done <- reqs
		}()
		streamText(t, s, msgBody(true, editTools(), "user", "second"))
		streamText(t, s, msgBody(true, nil, "user", "side"))
		streamText(t, s, msgBody(true, editTools(), "user", "third"))
		reqs := <-done
		if len(reqs) != 3 || !strings.Contains(reqs[2].Text(), "third") {
			t.Fatalf("got %d main requests: %+v", len(reqs), reqs)
		}
		cancel()
		reqs, err := s.WaitMainRequests(ctx, 4)
		if !errors.Is(err, context.Canceled) || len(reqs) != 3 {
			t.Fatalf("WaitMainRequests(4) = %d requests, %v", len(reqs), err)
		}
	})
}

func TestConcurrentRequests(t *testing.T) {
	s := New(t)
	const n = 20
	for i := range n {
		s.Script(Reply(Text(fmt.Sprintf("turn %d", i))))
	}
	var wg sync.WaitGroup
	bodies := make(chan []byte, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", bytes.NewReader(msgBody(true, editTools(), "user", "go")))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("x-api-key", APIKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Error(err)
			}
			bodies <- out
		}()
	}
	wg.Wait()
	close(bodies)
	if t.Failed() {
		return
	}
	seen := map[string]bool{}
	for out := range bodies {
		for _, b := range assemble(t, parseSSE(t, out)).blocks {
			seen[b.Text] = true
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct answers, want %d: %v", len(seen), n, seen)
	}
	for i, r := range s.MainRequests() {
		if r.Turn != i {
			t.Errorf("request %d answered turn %d: turns must follow the order of recording", i, r.Turn)
		}
	}
}

func TestRequestHelpers(t *testing.T) {
	raw := []byte(`{
	  "model": "claude-opus",
	  "system": [{"type":"text","text":"You are Claude Code."}],
	  "tools": [{"name":"Read"},{"name":"Write"}],
	  "messages": [
	    {"role":"user","content":"plain string prompt"},
	    {"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_A","name":"Write","input":{"file_path":"/f"}}]},
	    {"role":"user","content":[
	      {"type":"tool_result","tool_use_id":"toolu_A","content":[{"type":"text","text":"File created"},{"type":"text","text":"second part"}]},
	      {"type":"tool_result","tool_use_id":"toolu_B","content":"denied","is_error":true},
	      {"type":"text","text":"<new-diagnostics>none</new-diagnostics>"}
	    ]}
	  ]}`)
	r := Request{Body: raw}
	if got := r.Model(); got != "claude-opus" {
		t.Errorf("Model = %q", got)
	}
	if got := strings.Join(r.Tools(), ","); got != "Read,Write" {
		t.Errorf("Tools = %q", got)
	}
	ms := r.Messages()
	if len(ms) != 3 || ms[0].Role != "user" || len(ms[0].Content) != 1 || ms[0].Content[0].Text != "plain string prompt" {
		t.Fatalf("Messages = %+v", ms)
	}
	if c := ms[1].Content[1]; c.Type != "tool_use" || c.ID != "toolu_A" || c.Name != "Write" || string(c.Input) != `{"file_path":"/f"}` {
		t.Errorf("tool_use block = %+v", c)
	}
	tests := []struct {
		id      string
		found   bool
		text    string
		isError bool
	}{
		{"toolu_A", true, "File created\nsecond part", false},
		{"toolu_B", true, "denied", true},
		{"toolu_C", false, "", false},
	}
	for _, tt := range tests {
		c, ok := r.ToolResult(tt.id)
		if ok != tt.found || c.ResultText() != tt.text || c.IsError != tt.isError {
			t.Errorf("ToolResult(%s) = %+v %v (text %q)", tt.id, c, ok, c.ResultText())
		}
	}
	text := r.Text()
	for _, want := range []string{"You are Claude Code.", "plain string prompt", "calling", "File created", "second part", "denied", "<new-diagnostics>"} {
		if !strings.Contains(text, want) {
			t.Errorf("Text() lacks %q:\n%s", want, text)
		}
	}
	if bad := (Request{Body: []byte("not json")}); bad.Messages() != nil || bad.Text() != "" || bad.Tools() != nil {
		t.Errorf("a body that is not JSON should have no messages, text or tools")
	}
}
