//go:build unix

package chat

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// cliEnv is a fake API and an isolated CLI environment in a temp cwd.
type cliEnv struct {
	bin string
	api *fakeapi.Server
	env *clienv.Env
	cwd string
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	bin := clienv.Binary(t)
	api := fakeapi.New(t)
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &cliEnv{bin: bin, api: api, env: clienv.New(t, api.URL(), cwd), cwd: cwd}
}

// recorder writes a session's lines to chat/testdata/<name>.jsonl when
// CHAT_RECORD=1, with the cwd and config dir replaced by placeholders.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) trace(dir string, line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(map[string]json.RawMessage{"dir": json.RawMessage(`"` + dir + `"`), "line": line})
	r.lines = append(r.lines, string(b))
}

func (r *recorder) save(t *testing.T, e *cliEnv, name string) {
	t.Helper()
	if os.Getenv("CHAT_RECORD") != "1" {
		return
	}
	r.mu.Lock()
	out := strings.Join(r.lines, "\n") + "\n"
	r.mu.Unlock()
	out = strings.ReplaceAll(out, e.env.ConfigDir, "$CONFIG")
	out = strings.ReplaceAll(out, e.env.Home, "$HOME")
	out = strings.ReplaceAll(out, e.cwd, "$CWD")
	if err := os.WriteFile(filepath.Join("testdata", name+".jsonl"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// start starts a session in e with o (Bin, Cwd, Env and OnEvent filled in).
func (e *cliEnv) start(t *testing.T, o Options) (*Session, *collector, *recorder) {
	t.Helper()
	c := newCollector()
	rec := &recorder{}
	o.Bin, o.Env, o.OnEvent, o.Trace = e.bin, e.env.Environ(), c.add, rec.trace
	if o.Cwd == "" {
		o.Cwd = e.cwd
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		<-s.Done()
	})
	return s, c, rec
}

func TestCLIStreamedAnswer(t *testing.T) {
	e := newCLIEnv(t)
	const answer = "Hello from the fake API, streamed in pieces."
	e.api.Script(fakeapi.Reply(fakeapi.Text(answer)))
	s, c, rec := e.start(t, Options{})
	if len(s.Init().Models) == 0 || len(s.Init().Commands) == 0 {
		t.Errorf("initialize: %d models, %d commands", len(s.Init().Models), len(s.Init().Commands))
	}
	id := sendText(t, s, "say hi")
	res := c.waitResult(t, 1)
	if res.IsError || res.Result != answer {
		t.Errorf("result = %+v, want %q", res, answer)
	}
	var streamed string
	var deltas int
	for _, ev := range c.events() {
		if d, ok := ev.(DeltaEvent); ok && d.Kind == "text" {
			streamed += d.Text
			deltas++
		}
	}
	if streamed != answer || deltas < 2 {
		t.Errorf("streamed %q in %d deltas, want %q in several", streamed, deltas, answer)
	}
	c.waitN(t, 1, "lifecycle completed", func(ev Event) bool {
		l, ok := ev.(LifecycleEvent)
		return ok && l.UUID == id && l.State == "completed"
	})
	if s.SessionID() == "" {
		t.Errorf("no session id after a turn")
	}
	rec.save(t, e, "streamed")
	if os.Getenv("CHAT_DUMP") == "1" {
		_ = filepath.Walk(e.env.ConfigDir, func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".jsonl") {
				b, _ := os.ReadFile(p)
				t.Logf("%s:\n%s", p, b)
			}
			return nil
		})
	}
}

// writeFile writes a file in the cwd and returns its path.
func (e *cliEnv) writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(e.cwd, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func isPerm(ev Event) bool { _, ok := ev.(PermissionRequestEvent); return ok }

func TestCLIEditAllowEdited(t *testing.T) {
	e := newCLIEnv(t)
	p := e.writeFile(t, "hello.txt", "hello world\nsecond line\n")
	edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": p, "old_string": "hello world", "new_string": "hi there"})
	e.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": p})),
		fakeapi.Reply(fakeapi.Text("Editing."), edit),
		fakeapi.Reply(fakeapi.Text("Done.")),
	)
	s, c, rec := e.start(t, Options{})
	sendText(t, s, "change the greeting")
	req := c.waitPerm(t, 1)
	if req.ToolName != "Edit" || req.ToolUseID != edit.ID {
		t.Fatalf("permission request = %+v", req)
	}
	current := readFile(t, p)
	proposed, err := ProposedText(req.ToolName, req.Input, current)
	if err != nil || proposed != "hi there\nsecond line\n" {
		t.Fatalf("ProposedText = %q, %v", proposed, err)
	}
	accepted := "hi there (tweaked by the user)\nsecond line\n"
	in, err := EditedInput(req.ToolName, req.Input, current, accepted)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Allow(req.RequestID, in, nil); err != nil {
		t.Fatal(err)
	}
	res := c.waitResult(t, 1)
	if res.IsError {
		t.Errorf("result: %+v", res)
	}
	if got := readFile(t, p); got != accepted {
		t.Errorf("file = %q, want the user's version %q", got, accepted)
	}
	tr := c.waitN(t, 1, "Edit's tool result", func(ev Event) bool {
		r, ok := ev.(ToolResultEvent)
		return ok && r.ToolUseID == edit.ID
	}).(ToolResultEvent)
	if tr.IsError || tr.FilePath != p {
		t.Errorf("tool result = %+v", tr)
	}
	if err := s.Allow(req.RequestID, in, nil); err == nil {
		t.Errorf("a second answer to the same request was accepted")
	}
	rec.save(t, e, "edit_allow_edited")
}

func TestCLIEditDeny(t *testing.T) {
	e := newCLIEnv(t)
	p := e.writeFile(t, "hello.txt", "hello world\n")
	edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": p, "old_string": "hello", "new_string": "bye"})
	e.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": p})),
		fakeapi.Reply(edit),
		fakeapi.Reply(fakeapi.Text("Understood.")),
	)
	s, c, rec := e.start(t, Options{})
	sendText(t, s, "edit it")
	req := c.waitPerm(t, 1)
	const reason = "No: keep the greeting, the tests depend on it."
	if err := s.Deny(req.RequestID, reason); err != nil {
		t.Fatal(err)
	}
	c.waitResult(t, 1)
	if got := readFile(t, p); got != "hello world\n" {
		t.Errorf("file changed after a deny: %q", got)
	}
	mains := e.api.MainRequests()
	if len(mains) != 3 {
		t.Fatalf("%d main requests, want 3", len(mains))
	}
	tr, ok := mains[2].ToolResult(edit.ID)
	if !ok || !tr.IsError || !strings.Contains(tr.ResultText(), reason) {
		t.Errorf("the model got %+v (%q), want an error result with the reason", tr, tr.ResultText())
	}
	rec.save(t, e, "edit_deny")
}

func TestCLIAllowAlwaysSession(t *testing.T) {
	e := newCLIEnv(t)
	p := e.writeFile(t, "a.txt", "one\ntwo\n")
	e.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": p})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": p, "old_string": "one", "new_string": "ONE"})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": p, "old_string": "two", "new_string": "TWO"})),
		fakeapi.Reply(fakeapi.Text("Both done.")),
	)
	s, c, _ := e.start(t, Options{})
	sendText(t, s, "capitalise")
	req := c.waitPerm(t, 1)
	perms, err := AlwaysAllow(req.ToolName, req.Input, req.Suggestions, "session")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Allow(req.RequestID, req.Input, perms); err != nil {
		t.Fatal(err)
	}
	c.waitResult(t, 1)
	if got := readFile(t, p); got != "ONE\nTWO\n" {
		t.Errorf("file = %q", got)
	}
	if n := c.count(isPerm); n != 1 {
		t.Errorf("%d permission requests, want 1 (the second Edit is allowed for the session)", n)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, ".claude", "settings.local.json")); err == nil {
		t.Errorf("a session rule was written to the project's settings")
	}
}

func TestCLISetModeAcceptEdits(t *testing.T) {
	e := newCLIEnv(t)
	p := e.writeFile(t, "a.txt", "one\n")
	e.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": p})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": p, "old_string": "one", "new_string": "ONE"})),
		fakeapi.Reply(fakeapi.Text("Done.")),
	)
	s, c, _ := e.start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := s.SetMode(ctx, "acceptEdits"); err != nil {
		t.Fatal(err)
	}
	c.waitN(t, 1, "status acceptEdits", func(ev Event) bool {
		st, ok := ev.(StatusEvent)
		return ok && st.PermissionMode == "acceptEdits"
	})
	if err := s.SetMode(ctx, "bogus"); err == nil {
		t.Errorf("an invalid mode was accepted")
	}
	sendText(t, s, "capitalise")
	c.waitResult(t, 1)
	if got := readFile(t, p); got != "ONE\n" {
		t.Errorf("file = %q", got)
	}
	if n := c.count(isPerm); n != 0 {
		t.Errorf("%d permission requests in acceptEdits", n)
	}
}

func TestCLIInterrupt(t *testing.T) {
	e := newCLIEnv(t)
	e.api.Script(
		fakeapi.Reply(fakeapi.Text("This answer streams very slowly and will be interrupted.")).Slow(400*time.Millisecond),
		fakeapi.Reply(fakeapi.Text("Second answer.")),
	)
	s, c, rec := e.start(t, Options{})
	sendText(t, s, "talk slowly")
	c.waitN(t, 1, "first delta", func(ev Event) bool { d, ok := ev.(DeltaEvent); return ok && d.Kind == "text" })
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	res := c.waitResult(t, 1)
	if !res.IsError || res.TerminalReason != "aborted_streaming" {
		t.Errorf("interrupted result = %+v", res)
	}
	sendText(t, s, "again")
	res = c.waitResult(t, 2)
	if res.IsError || res.Result != "Second answer." {
		t.Errorf("result after the interrupt = %+v", res)
	}
	rec.save(t, e, "interrupt")
}

func TestCLIImage(t *testing.T) {
	e := newCLIEnv(t)
	e.api.Script(fakeapi.Reply(fakeapi.Text("A pixel.")))
	s, c, _ := e.start(t, Options{})
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	if err := s.Send(context.Background(), uuid.NewString(), []ContentBlock{
		{Type: "image", Source: &ImageSource{Type: "base64", MediaType: "image/png", Data: png}},
		{Type: "text", Text: "what is this?"},
	}); err != nil {
		t.Fatal(err)
	}
	c.waitResult(t, 1)
	mains := e.api.MainRequests()
	found := false
	for _, m := range mains[0].Messages() {
		for _, b := range m.Content {
			if b.Type == "image" {
				var src ImageSource
				if err := json.Unmarshal(b.Source, &src); err == nil && src.Data == png && src.MediaType == "image/png" {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("the image did not reach the API byte-identical")
	}
}

func TestCLIResumeAndFork(t *testing.T) {
	e := newCLIEnv(t)
	e.api.Script(fakeapi.Reply(fakeapi.Text("First answer.")))
	s, c, _ := e.start(t, Options{})
	first := sendText(t, s, "remember the word pineapple")
	c.waitResult(t, 1)
	sid := s.SessionID()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ex := s.Exit(); ex == nil || ex.Code != 0 {
		t.Errorf("exit after Close = %+v", ex)
	}

	hist, err := ReadHistory(e.env.ConfigDir, e.cwd, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Role != "user" || hist[0].Text != "remember the word pineapple" || hist[0].UUID != first ||
		hist[1].Role != "assistant" || hist[1].Text != "First answer." {
		t.Errorf("history = %+v", hist)
	}
	list, err := ListSessions(e.env.ConfigDir, e.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].SessionID != sid || list[0].FirstPrompt != "remember the word pineapple" || list[0].Messages != 2 {
		t.Errorf("sessions = %+v", list)
	}

	// Resume: same session id, the history goes to the model.
	e.api.Script(fakeapi.Reply(fakeapi.Text("Resumed answer.")))
	r, rc, _ := e.start(t, Options{Resume: sid})
	sendText(t, r, "what was the word?")
	rc.waitResult(t, 1)
	if r.SessionID() != sid {
		t.Errorf("resumed session id %q, want %q", r.SessionID(), sid)
	}
	mains := e.api.MainRequests()
	if txt := mains[len(mains)-1].Text(); !strings.Contains(txt, "pineapple") || !strings.Contains(txt, "First answer.") {
		t.Errorf("the resumed request lacks the history")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Fork: a new session id, the history kept.
	e.api.Script(fakeapi.Reply(fakeapi.Text("Forked answer.")))
	f, fc, _ := e.start(t, Options{Resume: sid, Fork: true})
	sendText(t, f, "and in the fork?")
	fc.waitResult(t, 1)
	if f.SessionID() == "" || f.SessionID() == sid {
		t.Errorf("forked session id %q (original %q)", f.SessionID(), sid)
	}
	mains = e.api.MainRequests()
	if txt := mains[len(mains)-1].Text(); !strings.Contains(txt, "pineapple") {
		t.Errorf("the forked request lacks the history")
	}
	fh, err := ReadHistory(e.env.ConfigDir, e.cwd, f.SessionID())
	if err != nil || len(fh) < 4 {
		t.Errorf("fork history = %+v, %v", fh, err)
	}
}

func TestCLIResumeUnknown(t *testing.T) {
	e := newCLIEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	s, err := Start(ctx, Options{Bin: e.bin, Env: e.env.Environ(), Cwd: e.cwd, Resume: uuid.NewString()})
	if err == nil {
		s.Kill()
		<-s.Done()
		t.Fatal("Start with an unknown session id succeeded")
	}
	if !strings.Contains(err.Error(), "No conversation found") || !strings.Contains(err.Error(), "code 1") {
		t.Errorf("error = %v, want the exit code and the CLI's stderr", err)
	}
}

func TestStartMissingBinary(t *testing.T) {
	_, err := Start(context.Background(), Options{Bin: filepath.Join(t.TempDir(), "no-claude")})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("error = %v", err)
	}
}

func TestCLITwoSessions(t *testing.T) {
	a, b := newCLIEnv(t), newCLIEnv(t)
	a.api.Script(fakeapi.Reply(fakeapi.Text("Answer for A.")).Slow(50 * time.Millisecond))
	b.api.Script(fakeapi.Reply(fakeapi.Text("Answer for B.")).Slow(50 * time.Millisecond))
	sa, ca, _ := a.start(t, Options{})
	sb, cb, _ := b.start(t, Options{})
	sendText(t, sa, "prompt A")
	sendText(t, sb, "prompt B")
	ra, rb := ca.waitResult(t, 1), cb.waitResult(t, 1)
	if ra.Result != "Answer for A." || rb.Result != "Answer for B." {
		t.Errorf("results crossed: A %q, B %q", ra.Result, rb.Result)
	}
	if sa.SessionID() == sb.SessionID() {
		t.Errorf("both sessions have id %s", sa.SessionID())
	}
	for name, c := range map[string]*collector{"A": ca, "B": cb} {
		other := map[string]string{"A": "B.", "B": "A."}[name]
		for _, ev := range c.events() {
			if d, ok := ev.(DeltaEvent); ok && strings.Contains(d.Text, other) {
				t.Errorf("session %s got the other's delta %q", name, d.Text)
			}
		}
	}
}

func TestCLIClearResetsSession(t *testing.T) {
	e := newCLIEnv(t)
	e.api.Script(fakeapi.Reply(fakeapi.Text("One.")))
	s, c, rec := e.start(t, Options{})
	defer rec.save(t, e, "clear")
	sendText(t, s, "hello")
	c.waitResult(t, 1)
	before := s.SessionID()
	sendText(t, s, "/clear")
	c.waitN(t, 1, "conversation_reset", func(ev Event) bool { _, ok := ev.(ConversationResetEvent); return ok })
	c.waitResult(t, 2)
	after := s.SessionID()
	if after == "" || after == before {
		t.Errorf("session id after /clear %q (before %q)", after, before)
	}
	last := c.waitN(t, 2, "init", func(ev Event) bool { _, ok := ev.(InitEvent); return ok }).(InitEvent)
	if last.SessionID != after {
		t.Errorf("session id %s, the init after the reset says %s", after, last.SessionID)
	}
}

// TestCLIModes pins [Modes] to the CLI: each starts a session that
// reports it (manual as the wire's "default"), set_permission_mode takes
// each, and the modes the CLI lists when it refuses one are ours plus
// bypassPermissions (which needs a launch flag the chat never passes).
func TestCLIModes(t *testing.T) {
	e := newCLIEnv(t)
	for _, m := range Modes() {
		s, _, _ := e.start(t, Options{Mode: m})
		if got := s.Init().Mode; got != WireMode(m) || ModeName(got) != m {
			t.Errorf("--permission-mode %s: the CLI reports %q", m, got)
		}
		s.Kill()
		<-s.Done()
	}
	s, _, _ := e.start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	for _, m := range append(Modes(), "default") {
		if err := s.SetMode(ctx, m); err != nil {
			t.Errorf("SetMode(%s): %v", m, err)
		}
	}
	_, err := s.Request(ctx, "set_permission_mode", map[string]any{"mode": "bogus"})
	var ce *ControlError
	if !errors.As(err, &ce) {
		t.Fatalf("an unknown mode: %v", err)
	}
	_, list, _ := strings.Cut(ce.Message, "must be one of ")
	var cli []string
	for _, m := range strings.Split(list, ", ") {
		if m != "bypassPermissions" {
			cli = append(cli, ModeName(m))
		}
	}
	sort.Strings(cli)
	ours := Modes()
	sort.Strings(ours)
	if strings.Join(cli, " ") != strings.Join(ours, " ") {
		t.Errorf("the CLI's modes are %v (%q), ours %v", cli, ce.Message, ours)
	}
}
