package sessions

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// The HTTP hooks: the settings point every event at the IDE server's port
// with the token from the environment (never the token itself); a request
// without the token, or for no such hook, is refused; a hook's JSON moves
// the session as the command hook's does; a waiting PermissionRequest is
// answered from Neovim with the CLI's decision as the body, and dropped
// when the CLI lets the request go (answered in its terminal).
func TestHTTPHooks(t *testing.T) {
	s := New(&fakeHost{})
	sid := newTerminal(t, s)
	srv := httptest.NewServer(s.Hooks().HTTPHooks)
	defer srv.Close()
	post := func(ctx context.Context, path, token, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+mcp.HTTPPrefix+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	settings := HTTPHookSettings(4242, sid, true, "tok")
	if !strings.Contains(settings, `"Bearer tok"`) ||
		!strings.Contains(settings, `"http://127.0.0.1:4242/hook/PermissionRequest/`+sid+`/wait"`) ||
		!strings.Contains(settings, `"http://127.0.0.1:4242/hook/Stop/`+sid+`"`) {
		t.Fatalf("the HTTP hook settings: %s", settings)
	}
	res, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), json.RawMessage(`{"dir":"/proj/b","port":4242,"answer":true}`))
	if err != nil {
		t.Fatal(err)
	}
	info := res.(TerminalInfo)
	layer, err := os.ReadFile(info.Settings) // a file: the token is not on the command line
	fi, _ := os.Stat(info.Settings)
	if err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(string(layer), `"type":"http"`) ||
		strings.Contains(string(layer), "nvim-claude hook") || !strings.Contains(string(layer), "Bearer "+s.hookTokenOf(info.ID)) {
		t.Fatalf("a terminal with the port: %+v (%v): %s", info, err, layer)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	for _, tc := range []struct {
		name, path, token string
		status            int
	}{
		{"no token", "Stop/" + sid, "", http.StatusUnauthorized},
		{"another token", "Stop/" + sid, "guess", http.StatusUnauthorized},
		{"no such event", "Nope/" + sid, s.hookTokenOf(sid), http.StatusNotFound},
		{"wait on another event", "Stop/" + sid + "/wait", s.hookTokenOf(sid), http.StatusNotFound},
		{"a session we do not have: answered, changes nothing", "Stop/t99", s.hookTokenOf("t99"), http.StatusOK},
	} {
		if st, body := post(ctx, tc.path, tc.token, "{}"); st != tc.status {
			t.Fatalf("%s: %d %s, want %d", tc.name, st, body, tc.status)
		}
	}
	state := func() string {
		for _, x := range s.List() {
			if x.ID == sid {
				return x.State
			}
		}
		return "?"
	}
	if st, body := post(ctx, "UserPromptSubmit/"+sid, s.hookTokenOf(sid), `{"session_id":"5b1f3e52-7d1c-4a53-9d55-1f0a2b3c4d5e","cwd":"/p"}`); st != 200 || body != "{}" || state() != Working {
		t.Fatalf("UserPromptSubmit: %d %s, state %s", st, body, state())
	}

	bash := `{"tool_name":"Bash","tool_input":{"command":"make test"}}`
	waiting := func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.answers) }
	until := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); waiting() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d prompts waiting, want %d", waiting(), n)
			}
		}
	}
	// answered in Neovim: the body is the CLI's decision
	got := make(chan string, 1)
	go func() { _, b := post(ctx, "PermissionRequest/"+sid+"/wait", s.hookTokenOf(sid), bash); got <- b }()
	until(1)
	if err := answerWith(s, sid+"/1", map[string]any{"behavior": "allow"}); err != nil {
		t.Fatal(err)
	}
	var out struct {
		H struct {
			Event    string `json:"hookEventName"`
			Decision struct {
				Behavior string `json:"behavior"`
			} `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if b := <-got; json.Unmarshal([]byte(b), &out) != nil || out.H.Event != "PermissionRequest" || out.H.Decision.Behavior != "allow" {
		t.Fatalf("the answered hook's body: %s", b)
	}
	// answered in the terminal: the CLI lets the request go, the prompt drops
	rctx, cancel := context.WithCancel(ctx)
	go func() { _, b := post(rctx, "PermissionRequest/"+sid+"/wait", s.hookTokenOf(sid), bash); got <- b }()
	until(1)
	cancel()
	<-got
	until(0)
}

// A PermissionRequest whose input could not be read (over MaxHookInput,
// or not JSON) shows nothing of what it would allow: it does not wait for
// Neovim's answer (an allow would be given blind, and the CLI's giving up
// on an oversized request's unread body goes unseen), though the session
// still needs input. Both kinds of hook go through Digest and hook.
func TestUnreadPermissionRequestDoesNotWait(t *testing.T) {
	for _, body := range [][]byte{
		[]byte("not json"),
		[]byte(`{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", MaxHookInput) + `"}}`),
	} {
		s := New(&fakeHost{})
		sid := newTerminal(t, s)
		c, _ := Digest("PermissionRequest", sid, body)
		c.Wait = "1"
		p, err := s.hook(c)
		if err != nil || p != nil {
			t.Fatalf("%.20q: waits for an answer (%v)", body, err)
		}
		s.mu.Lock()
		n, st := len(s.answers), s.byID[sid].State
		s.mu.Unlock()
		if n != 0 || st != NeedsInput {
			t.Fatalf("%.20q: %d prompts waiting, state %s", body, n, st)
		}
		s.Close()
	}
}

// Each terminal's hooks carry a token of their own: the token in one
// CLI's settings file (which that CLI, and every command its model runs,
// can read) cannot post another session's hooks — neither move it nor
// answer or drop its waiting prompt.
func TestHTTPHookTokenPerSession(t *testing.T) {
	s := New(&fakeHost{})
	t.Cleanup(s.Close)
	token := func() func(string) string {
		tok := map[string]string{}
		for range 2 {
			res, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), json.RawMessage(`{"dir":"/proj/a","port":4242}`))
			if err != nil {
				t.Fatal(err)
			}
			info := res.(TerminalInfo)
			layer, err := os.ReadFile(info.Settings)
			_, rest, ok := strings.Cut(string(layer), `"Authorization":"Bearer `)
			if err != nil || !ok {
				t.Fatalf("no token in %s (%v)", layer, err)
			}
			tok[info.ID], _, _ = strings.Cut(rest, `"`)
		}
		return func(id string) string { return tok[id] }
	}()
	srv := httptest.NewServer(s.Hooks().HTTPHooks)
	defer srv.Close()
	for _, tc := range []struct {
		path, token string
		status      int
	}{
		{"Stop/t1", token("t1"), http.StatusOK},
		{"Stop/t2", token("t2"), http.StatusOK},
		{"Stop/t2", token("t1"), http.StatusUnauthorized},
		{"PermissionRequest/t1/wait", token("t2"), http.StatusUnauthorized},
		{"Stop/t3", token("t1"), http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("POST", srv.URL+mcp.HTTPPrefix+tc.path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s with a token: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
	}
}
