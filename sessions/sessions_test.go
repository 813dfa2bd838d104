package sessions

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/display"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// fakeHost records the events the feature emits.
type fakeHost struct {
	mu       sync.Mutex
	events   []map[string]any
	answered []string // sessions.answered: "<request id> by <how>"
}

func (h *fakeHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h *fakeHost) Emit(event string, data any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if event == "sessions.answered" {
		d := data.(map[string]any)
		h.answered = append(h.answered, d["request_id"].(string)+" by "+d["by"].(string))
	}
	if event == "sessions.state" {
		d := data.(map[string]any)
		if x := d["session"].(Session); x.ID != d["id"] || x.State != d["state"] {
			panic("the event's session is not the one that changed")
		}
		h.events = append(h.events, d)
	}
}
func (h *fakeHost) Broadcast(string, any) int        { return 0 }
func (h *fakeHost) Notify(string, string, any) error { return nil }
func (h *fakeHost) Clients() []mcp.ClientInfo        { return nil }
func (h *fakeHost) Running() bool                    { return true }
func (h *fakeHost) EditorPID() int                   { return 1 }
func (h *fakeHost) Workspace() workspace.View        { return workspace.New() }
func (h *fakeHost) transitions() (out []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		out = append(out, e["id"].(string)+":"+e["previous"].(string)+">"+e["state"].(string))
	}
	return out
}

func newTerminal(t *testing.T, s *Sessions) string {
	t.Helper()
	res, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), json.RawMessage(`{"dir":"/proj/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	info := res.(TerminalInfo)
	if !strings.Contains(info.Settings, `hook Stop `+info.ID) || !strings.Contains(info.Settings, `hook StopFailure `+info.ID) {
		t.Fatalf("settings without the Stop hook: %s", info.Settings)
	}
	return info.ID
}

// TestTerminalStates: the hooks and the diffs move a terminal session
// through its states; every change is emitted once, with the previous one.
func TestTerminalStates(t *testing.T) {
	steps := []struct {
		hook, update string // one of the two
		tool, typ    string
		want         string
		waiting      string // when set, what it waits for
	}{
		{hook: "UserPromptSubmit", want: Working},
		{hook: "PreToolUse", tool: "Bash", want: Working},
		{hook: "PermissionRequest", tool: "Bash", want: NeedsInput},
		{hook: "Notification", typ: "permission_prompt", want: NeedsInput},
		{hook: "PostToolUse", tool: "Bash", want: Working},
		// news that wait for no one
		{hook: "Notification", typ: "auth_success", want: Working},
		{hook: "Notification", typ: "agent_completed", want: Working},
		{update: "diff_opened", want: NeedsInput, waiting: "diff: "},
		{hook: "PermissionRequest", tool: "Edit", want: NeedsInput, waiting: "diff: "}, // the diff says it better
		{hook: "PreToolUse", tool: "Read", want: NeedsInput, waiting: "diff: "},        // the diff still waits
		{update: "diff_closed", want: Working},
		{hook: "Stop", want: Done},
		{hook: "Notification", typ: "idle_prompt", want: Done},
		{update: "seen", want: Idle},
		// a turn that an API error ends fires StopFailure, not Stop
		{hook: "UserPromptSubmit", want: Working},
		{hook: "StopFailure", want: Done},
		{update: "seen", want: Idle},
		{update: "exited", want: Exited},
		{hook: "UserPromptSubmit", want: Exited}, // a late hook changes nothing
	}
	h := &fakeHost{}
	s := New(h)
	id := newTerminal(t, s)
	for i, st := range steps {
		if st.hook != "" {
			if err := s.Hook(HookCall{Session: id, Event: st.hook, Tool: st.tool, NotificationType: st.typ}); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		} else {
			raw, _ := json.Marshal(map[string]any{"id": id, "event": st.update})
			if _, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), raw); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if got := s.List()[0]; got.State != st.want || (st.waiting != "" && got.Waiting != st.waiting) {
			t.Fatalf("step %d (%s%s): state %q waiting %q, want %q %q", i, st.hook, st.update, got.State, got.Waiting, st.want, st.waiting)
		}
	}
	want := "t1:idle>working t1:working>needs input t1:needs input>working t1:working>needs input t1:needs input>working t1:working>done t1:done>idle t1:idle>working t1:working>done t1:done>idle t1:idle>exited"
	if got := strings.Join(h.transitions(), " "); got != want {
		t.Fatalf("emitted\n %s\nwant\n %s", got, want)
	}
}

// TestChatStates: a chat's stream drives its session.
func TestChatStates(t *testing.T) {
	h := &fakeHost{}
	s := New(h)
	for _, ev := range []struct {
		name string
		data map[string]any
	}{
		{"status", map[string]any{"state": "starting"}},
		{"status", map[string]any{"state": "idle", "session_id": "abc"}},
		{"status", map[string]any{"state": "running"}},
		{"permission", map[string]any{"tool": "Bash", "summary": "make"}},
		{"status", map[string]any{"state": "running"}}, // still waiting
		{"permission_done", map[string]any{}},
		{"status", map[string]any{"state": "idle", "cost_usd": 0.25}},
		{"text", map[string]any{}}, // not a state event
		{"status", map[string]any{"state": "exited"}},
	} {
		s.ChatEvent("3", "/proj/b", ev.name, ev.data)
	}
	got := s.List()
	if len(got) != 1 || got[0].ID != "c3" || got[0].Mode != ModeChat || got[0].CostUSD != 0.25 || got[0].ClaudeSession != "abc" || got[0].Dir != "/proj/b" {
		t.Fatalf("sessions: %+v", got)
	}
	want := "c3:idle>working c3:working>needs input c3:needs input>working c3:working>done c3:done>exited"
	if tr := strings.Join(h.transitions(), " "); tr != want {
		t.Fatalf("emitted\n %s\nwant\n %s", tr, want)
	}
}

// TestUpdateErrors: bad requests from Lua get errors a person can act on.
func TestUpdateErrors(t *testing.T) {
	s := New(&fakeHost{})
	id := newTerminal(t, s)
	for _, tt := range []struct{ params, want string }{
		{`{"id":"t9","event":"seen"}`, `no session "t9"`},
		{`{"id":"` + id + `","event":"fly"}`, `unknown event "fly"`},
		{`{"id":"` + id + `","event":"rename","name":"  "}`, "cannot be empty"},
	} {
		_, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), json.RawMessage(tt.params))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.params, err, tt.want)
		}
	}
	if _, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), json.RawMessage(`{"dir":"rel"}`)); err == nil {
		t.Error("a relative dir was taken")
	}
}

// TestHookSocket: the hook method on a token-checked stream server (as
// edtools serves it). Hostile callers — no token, a wrong one, oversized
// parameters, an unknown session — change nothing.
func TestHookSocket(t *testing.T) {
	h := &fakeHost{}
	s := New(h)
	id := newTerminal(t, s)
	srv := mcp.NewStreamServer(mcp.StreamConfig{Token: "s3cret"})
	for name, m := range s.Methods() {
		srv.HandleMethod(name, m)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	call := func(hello, params string) string {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write([]byte(hello + "\n" + `{"jsonrpc":"2.0","id":1,"method":"` + HookMethod + `","params":` + params + "}\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	good := `{"session":"` + id + `","event":"PermissionRequest","tool":"Bash"}`
	big := `{"session":"` + id + `","event":"PermissionRequest","message":"` + strings.Repeat("x", MaxHookParams) + `"}`
	for _, tt := range []struct{ name, hello, params, want string }{
		{"no token", `{}`, good, ""},
		{"wrong token", `{"token":"guess"}`, good, ""},
		{"not JSON", `{"token":"s3cret"}`, `[1`, ""},
		{"oversized", `{"token":"s3cret"}`, big, "too large"},
		{"unknown session", `{"token":"s3cret"}`, `{"session":"t99","event":"Stop"}`, "no terminal session"},
		{"unknown event", `{"token":"s3cret"}`, `{"session":"` + id + `","event":"Boom"}`, "unknown hook event"},
	} {
		if got := call(tt.hello, tt.params); !strings.Contains(got, tt.want) || (tt.want != "" && !strings.Contains(got, `"error"`)) {
			t.Errorf("%s: answer %q, want an error with %q", tt.name, got, tt.want)
		}
		if st := s.List()[0].State; st != Idle {
			t.Fatalf("%s: the state moved to %q", tt.name, st)
		}
	}
	if got := call(`{"token":"s3cret"}`, good); !strings.Contains(got, `"result"`) {
		t.Fatalf("good call: %q", got)
	}
	if x := s.List()[0]; x.State != NeedsInput || x.Waiting != "Bash" {
		t.Fatalf("after the good call: %+v", x)
	}
}

// TestDiffOwner: with two terminals a diff belongs to the one whose CLI
// started an edit last; without hooks to tell, to none of them.
func TestDiffOwner(t *testing.T) {
	s := New(&fakeHost{})
	t1, t2 := newTerminal(t, s), newTerminal(t, s)
	upd := func(ev, tab string) {
		raw, _ := json.Marshal(map[string]any{"id": "", "event": ev, "tab": tab})
		if _, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	states := func() string {
		var out []string
		for _, x := range s.List() {
			out = append(out, x.ID+":"+x.State)
		}
		return strings.Join(out, " ")
	}
	upd("diff_opened", "A")
	if got := states(); got != "t1:idle t2:idle" {
		t.Fatalf("a diff nobody claims: %s", got)
	}
	for _, c := range []HookCall{
		{Session: t2, Event: "PreToolUse", Tool: "Edit"},
		{Session: t1, Event: "PreToolUse", Tool: "Write"},
		{Session: t2, Event: "PreToolUse", Tool: "Bash"},
	} {
		if err := s.Hook(c); err != nil {
			t.Fatal(err)
		}
	}
	upd("diff_opened", "B")
	if got := states(); got != "t1:needs input t2:working" {
		t.Fatalf("after t1's Write opened a diff: %s", got)
	}
	upd("diff_closed", "B")
	if got := states(); got != "t1:working t2:working" {
		t.Fatalf("after the diff closed: %s", got)
	}
}

// The CLI keeps only the last --settings: the layer we add over a user's
// own --settings holds it, our hooks after the user's; a --settings we
// cannot read leaves the CLI with the user's alone (and says why).
func TestLayerSettings(t *testing.T) {
	dir := t.TempDir()
	user := `{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"mine"}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, err string
		file            bool // the layer is a private file, not on the command line
	}{
		{"inline JSON", user, "", false},
		{"relative file", "s.json", "", true},
		{"absolute file", filepath.Join(dir, "s.json"), "", true},
		{"missing file", "nope.json", "cannot read your --settings", false},
		{"not JSON", `{oops`, "not a JSON object", false},
		{"bad hooks", `{"hooks":[1]}`, "not an object", false},
		{"bad event", `{"hooks":{"Stop":{}}}`, "not a list", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(&fakeHost{})
			s.bin = func() string { return "/bin/nc" }
			res, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(),
				json.RawMessage(`{"dir":`+jsonString(dir)+`,"user_settings":`+jsonString(tc.user)+`}`))
			if err != nil {
				t.Fatal(err)
			}
			info := res.(TerminalInfo)
			if tc.err != "" {
				if info.Settings != "" || !strings.Contains(info.Warning, tc.err) {
					t.Fatalf("got %+v, want no settings and a warning with %q", info, tc.err)
				}
				return
			}
			layer := info.Settings
			if tc.file {
				st, err := os.Stat(info.Settings)
				if err != nil || st.Mode().Perm() != 0o600 {
					t.Fatalf("settings %q: %v %v", info.Settings, st, err)
				}
				if d, err := os.Stat(filepath.Dir(info.Settings)); err != nil || d.Mode().Perm() != 0o700 {
					t.Fatalf("its directory: %v %v", d, err)
				}
				b, _ := os.ReadFile(info.Settings)
				layer = string(b)
				defer func() {
					// gone when the session exits, and the directory with Close
					raw, _ := json.Marshal(map[string]any{"id": info.ID, "event": "exited"})
					if _, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), raw); err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat(info.Settings); !os.IsNotExist(err) {
						t.Fatalf("the settings file outlived its session: %v", err)
					}
					if _, err := os.Stat(filepath.Dir(info.Settings)); !os.IsNotExist(err) {
						t.Fatalf("the settings directory outlived its last file: %v", err)
					}
				}()
			} else if strings.HasPrefix(info.Settings, "/") {
				t.Fatalf("inline settings went to a file: %s", info.Settings)
			}
			var got struct {
				Model string                                                  `json:"model"`
				Hooks map[string][]struct{ Hooks []struct{ Command string } } `json:"hooks"`
			}
			if err := json.Unmarshal([]byte(layer), &got); err != nil || info.Warning != "" {
				t.Fatalf("settings %s: %v %s", layer, err, info.Warning)
			}
			stop := got.Hooks["Stop"]
			if got.Model != "opus" || len(stop) != 2 || stop[0].Hooks[0].Command != "mine" ||
				stop[1].Hooks[0].Command != "/bin/nc hook Stop "+info.ID || len(got.Hooks) != len(HookEvents) {
				t.Fatalf("layered settings: %s", layer)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A host killed outright cannot remove its settings directory: the next
// host that writes one sweeps it, and leaves a live host's alone; a host
// that closes removes its own.
func TestSettingsDirsOfGoneHostsAreSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	dead := filepath.Join(tmp, fmt.Sprintf("%s%d-x", settingsDirPrefix, gone.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("%s%d-y", settingsDirPrefix, os.Getppid()))
	for _, d := range []string{dead, live} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := New(&fakeHost{})
	// the sweep runs as the host starts (its first options), whether or
	// not this host ever writes a layer
	s.Hooks().Options(host.Options{})
	path, err := s.privateFile("t1", "{}")
	if err != nil {
		t.Fatal(err)
	}
	// the host's Close removes its own
	s.Close()
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", filepath.Dir(path), err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the gone host's directory is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live host's directory was swept: %v", err)
	}
}

// TestOutsideTextIsDisplayable: whatever a directory name, the CLI's hook
// input, a chat's stream or a rename hold, what a session shows (name,
// waiting) has no control character; a CLI session id that is not one
// (it becomes --resume's argument) is not kept.
func TestOutsideTextIsDisplayable(t *testing.T) {
	const hostile = "x\n\x1b]0;owned\a\x1b[2J\u202e\u009b"
	const shown = "x⏎^[]0;owned^G^[[2J<U+202E><U+9B>"
	s := New(&fakeHost{})
	raw, _ := json.Marshal(map[string]string{"dir": "/proj/" + hostile})
	res, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	id := res.(TerminalInfo).ID
	s.ChatEvent("1", "/proj/"+hostile, "status", map[string]any{"state": "running", "session_id": "--dangerously-skip-permissions"})
	s.ChatEvent("1", "/proj/"+hostile, "permission", map[string]any{"tool": "Bash" + hostile, "summary": hostile})
	for _, tt := range []struct {
		name string
		call HookCall
		want string // the waiting text
	}{
		{"a notification", HookCall{Event: "Notification", NotificationType: "permission_prompt", Message: hostile}, shown},
		{"a long notification is capped", HookCall{Event: "Notification", Message: strings.Repeat("é", 500)}, strings.Repeat("é", maxWaiting-1) + "…"},
		{"a tool name", HookCall{Event: "PermissionRequest", Tool: "Bash" + hostile}, "Bash" + shown},
		{"a command", HookCall{Event: "PermissionRequest", Tool: "Bash", Input: "ls " + hostile}, "Bash: ls x … (2 lines; the last: ^[]0;owned^G^[[2J<U+202E><U+9B>)"},
		{"a session id that is an option", HookCall{Event: "UserPromptSubmit", ClaudeSession: "--dangerously-skip-permissions"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.Session = id
			if err := s.Hook(tt.call); err != nil {
				t.Fatal(err)
			}
			x := s.List()[0]
			if x.Waiting != tt.want || x.Name != shown || x.ClaudeSession != "" {
				t.Fatalf("name %q waiting %q session %q, want %q %q", x.Name, x.Waiting, x.ClaudeSession, shown, tt.want)
			}
		})
	}
	chat := s.List()[1]
	if chat.Name != "chat 1 · "+shown || chat.Waiting != "Bash"+shown+": x … (2 lines; the last: ^[]0;owned^G^[[2J<U+202E><U+9B>)" || chat.ClaudeSession != "" {
		t.Fatalf("the chat: %+v", chat)
	}
	raw, _ = json.Marshal(map[string]string{"id": id, "event": "rename", "name": hostile})
	if _, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if x := s.List()[0]; x.Name != shown {
		t.Fatalf("renamed to %q", x.Name)
	}
}

// TestSweepSettingsDirs: a later host removes the settings layers of hosts
// that are gone, and nothing else: not a live host's, not its own, not a
// directory someone else owns (or whose owner cannot be told), not a link
// or a file that merely has the name.
func TestSweepSettingsDirs(t *testing.T) {
	tmp := t.TempDir()
	const self, live, dead, foreign = 100, 200, 300, 400
	mk := func(name string) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "t1.json"), []byte(`{"env":{"KEY":"secret"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone := mk(fmt.Sprintf("%s%d-abc", settingsDirPrefix, dead))
	kept := []string{
		mk(fmt.Sprintf("%s%d-abc", settingsDirPrefix, self)),
		mk(fmt.Sprintf("%s%d-abc", settingsDirPrefix, live)),
		mk(fmt.Sprintf("%s%d-abc", settingsDirPrefix, foreign)),
		mk(settingsDirPrefix + "x-abc"),
	}
	elsewhere := mk("elsewhere")
	link := filepath.Join(tmp, fmt.Sprintf("%s%d-link", settingsDirPrefix, dead))
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, fmt.Sprintf("%s%d-file", settingsDirPrefix, dead))
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, link, file, elsewhere)
	foreignDir := kept[2]
	removed := sweepSettingsDirs(tmp, self, func(pid int) bool { return pid == live },
		func(fi fs.FileInfo) bool { return fi.Name() != filepath.Base(foreignDir) })
	if len(removed) != 1 || removed[0] != gone {
		t.Fatalf("removed %v, want only %s", removed, gone)
	}
	if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a dead host's layer is still there: %v", err)
	}
	for _, k := range kept {
		if _, err := os.Lstat(k); err != nil {
			t.Errorf("%s was removed: %v", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "t1.json")); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
	// An owner check that fails (here: every Stat_t refused) removes nothing.
	mk(fmt.Sprintf("%s%d-def", settingsDirPrefix, dead))
	if r := sweepSettingsDirs(tmp, self, func(int) bool { return false }, func(fs.FileInfo) bool { return false }); len(r) != 0 {
		t.Fatalf("removed %v without knowing the owner", r)
	}
}

// TestChatNextRequestIsEmitted: when a chat's first request is answered
// and another waits, the state stays "needs input" but what it asks
// changed: Lua must hear it, or the panel, the statusline and the notices
// keep showing the answered request while another is the one pending.
func TestChatNextRequestIsEmitted(t *testing.T) {
	h := &fakeHost{}
	s := New(h)
	s.ChatEvent("4", "/proj/b", "status", map[string]any{"state": "running"})
	s.ChatEvent("4", "/proj/b", "permission", map[string]any{"tool": "Bash", "request_id": "r1", "input": map[string]any{"command": "ls"}})
	s.ChatEvent("4", "/proj/b", "permission", map[string]any{"tool": "Bash", "request_id": "r2", "input": map[string]any{"command": "rm -rf ~/x"}})
	s.ChatEvent("4", "/proj/b", "permission_done", map[string]any{"request_id": "r1"})
	h.mu.Lock()
	last := h.events[len(h.events)-1]["session"].(Session)
	h.mu.Unlock()
	if last.Request == nil || last.Request.RequestID != "r2" || !strings.Contains(last.Waiting, "rm -rf") {
		t.Fatalf("the last session Lua heard waits for %q (request %+v), want the second request", last.Waiting, last.Request)
	}
}

// TestTerminalNamesApartWhenLong: two terminals in a directory whose name
// is at the cap are still named apart within the cap (Lua cuts a longer
// name, which would cut the " #2" off and name them alike again).
func TestTerminalNamesApartWhenLong(t *testing.T) {
	s := New(&fakeHost{})
	dir := "/proj/" + strings.Repeat("d", 70)
	raw, _ := json.Marshal(map[string]string{"dir": dir})
	for i := 0; i < 2; i++ {
		if _, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	l := s.List()
	if len(l) != 2 || l[0].Name == l[1].Name || display.Line(l[0].Name, maxName) == display.Line(l[1].Name, maxName) {
		t.Fatalf("names %q and %q are alike within %d characters", l[0].Name, l[1].Name, maxName)
	}
}
