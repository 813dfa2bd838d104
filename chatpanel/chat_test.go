//go:build unix

package chatpanel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/diff"
	"github.com/nvim-claude/nvim-claude/edtools"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/ide/editorcontext"
	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// chatRecorder is the App's Editor with the chat events kept in Go
// (instead of going to the Lua chat module, which these tests do not
// exercise).
type chatRecorder struct {
	Editor
	b *nvimbridge.Bridge

	mu      sync.Mutex
	evs     []chatEv
	changed chan struct{}
}

func (r *chatRecorder) Emit(ctx context.Context, event string, data any) error {
	if !strings.HasPrefix(event, "chat.") {
		return r.Editor.Emit(ctx, event, data)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	r.mu.Lock()
	r.evs = append(r.evs, chatEv{strings.TrimPrefix(event, "chat."), m})
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return nil
}

func (r *chatRecorder) EmitIdempotent(ctx context.Context, event string, data any) error {
	return r.Emit(ctx, event, data)
}

// wait returns the n-th event called name whose data satisfies pred.
func (r *chatRecorder) wait(t *testing.T, n int, name string, pred func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(60 * nvimtest.Slack * time.Second)
	for {
		r.mu.Lock()
		evs, ch := r.evs, r.changed
		r.mu.Unlock()
		k := 0
		for _, e := range evs {
			if e.name == name && (pred == nil || pred(e.data)) {
				if k++; k == n {
					return e.data
				}
			}
		}
		select {
		case <-ch:
		case <-deadline:
			var names []string
			for _, e := range evs {
				names = append(names, fmt.Sprintf("%s %v", e.name, e.data))
			}
			t.Fatalf("no %s #%d; events:\n%s", name, n, strings.Join(names, "\n"))
		}
	}
}

func (r *chatRecorder) events(name string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.evs {
		if e.name == name {
			out = append(out, e.data)
		}
	}
	return out
}

// chatHarness is a real Neovim, the App on a Bridge to it, the real CLI and
// a fake API.
type chatHarness struct {
	*nvimtest.Nvim
	app   *core.App
	chats *Panel
	rec   *chatRecorder
	api   *fakeapi.Server
	env   *clienv.Env
	bin   string
	dir   string
}

// diffMainText is main.txt's text in the chat's project.
const diffMainText = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"

func startChatHarness(t *testing.T) *chatHarness {
	t.Helper()
	bin := clienv.Binary(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.txt"), []byte(diffMainText), 0o644); err != nil {
		t.Fatal(err)
	}
	api := fakeapi.New(t)
	env := clienv.New(t, api.URL(), dir)
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({})
vim.cmd("edit main.txt")`})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	rec := &chatRecorder{Editor: b, b: b, changed: make(chan struct{})}
	var cs *Panel
	ws := workspace.New()
	app := core.New(core.Options{Editor: rec, Workspace: ws, Features: func(h host.Host) []host.Feature {
		ctx := editorcontext.New(h, b, ws, "test")
		rev := diff.New(h, b)
		tools := edtools.New(h, b, edtools.Peers{Review: rev, Paths: ctx}, "test")
		cs = New(h, rec, Peers{Review: rev, Tools: tools})
		return []host.Feature{ctx, rev, tools, cs}
	}})
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return &chatHarness{Nvim: n, app: app, chats: cs, rec: rec, api: api, env: env, bin: bin, dir: dir}
}

// call runs a chat_* Lua request handler as Lua would.
func (h *chatHarness) call(t *testing.T, name string, params any) map[string]any {
	t.Helper()
	res, err := h.try(name, params)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func (h *chatHarness) try(name string, params any) (map[string]any, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*nvimtest.Slack*time.Second)
	defer cancel()
	res, err := h.chats.luaRequests()[name](ctx, raw)
	if err != nil {
		return nil, err
	}
	out, _ := json.Marshal(res)
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return m, nil
}

func (h *chatHarness) open(t *testing.T, extra map[string]any) string {
	t.Helper()
	p := map[string]any{"cwd": h.dir, "bin": h.bin, "env": h.env.Map()}
	for k, v := range extra {
		p[k] = v
	}
	res := h.call(t, "chat_open", p)
	id, _ := res["id"].(string)
	if id == "" || res["state"] != "starting" {
		t.Fatalf("chat_open = %v", res)
	}
	// chat_open answers before the CLI runs; "ready" says it does.
	ready := h.ready(t, id)
	if len(ready["models"].([]any)) == 0 {
		t.Fatalf("ready = %v", ready)
	}
	return id
}

// ready waits for chat id's "ready" event (its CLI has started).
func (h *chatHarness) ready(t *testing.T, id any) map[string]any {
	t.Helper()
	return h.rec.wait(t, 1, "ready", func(d map[string]any) bool { return d["id"] == id })
}

// failed waits for chat id's "failed" event (its CLI did not start).
func (h *chatHarness) failed(t *testing.T, id any) map[string]any {
	t.Helper()
	return h.rec.wait(t, 1, "failed", func(d map[string]any) bool { return d["id"] == id })
}

func (h *chatHarness) file(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, "main.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const waitDiffOpen = `#require("claude.diff").pending() == 1`

// An Edit opens our diff review; the user tweaks the proposal and accepts
// (in the diff, or from the chat): the file holds the tweak, the next
// request tells the model, and rewind gives the file as it was.
func TestChatEditDiffReview(t *testing.T) {
	tweakProposal := `local d = require("claude.diff").pending()[1]
vim.api.nvim_buf_set_lines(d.proposal_bufnr, 0, 1, false, { "ONE (tweaked by the user)" })`
	tests := []struct {
		name     string
		accept   func(t *testing.T, h *chatHarness, id, reqID string)
		by       string
		tweaked  bool
		wantFile string
	}{
		{"tweak and :w in the proposal", func(t *testing.T, h *chatHarness, id, reqID string) {
			h.Exec(t, tweakProposal+`
vim.api.nvim_set_current_win(vim.fn.bufwinid(d.proposal_bufnr))
vim.cmd("write")`)
		}, "diff", true, strings.Replace(strings.Replace(diffMainText, "three", "THREE", 1), "one", "ONE (tweaked by the user)", 1)},
		{"tweak and allow from the chat", func(t *testing.T, h *chatHarness, id, reqID string) {
			// As the chat panel sends it: the parameters claude.chat.permission
			// builds, carrying the tweaked proposal; Go closes the diff.
			h.Exec(t, tweakProposal+`
local chan, id, req_id, tab = ...
local params = require("claude.chat.permission").params({ id = id }, { id = req_id, d = { diff = true, tab_name = tab } }, { behavior = "allow" })
assert(params.proposal and params.proposal:find("tweaked by the user", 1, true), vim.inspect(params))
local res = vim.fn.rpcrequest(chan, "chat_permission", vim.json.encode(params))
assert(res == "{}", res)`, h.ChannelID(), id, reqID, "[Claude chat] main.txt")
		}, "user", true, strings.Replace(strings.Replace(diffMainText, "three", "THREE", 1), "one", "ONE (tweaked by the user)", 1)},
		{"allow unchanged from the chat", func(t *testing.T, h *chatHarness, id, reqID string) {
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": reqID, "behavior": "allow"})
		}, "user", false, strings.Replace(diffMainText, "three", "THREE", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startChatHarness(t)
			path := filepath.Join(h.dir, "main.txt")
			edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "three", "new_string": "THREE"})
			h.api.Script(
				fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
				fakeapi.Reply(fakeapi.Text("Changing it."), edit),
				fakeapi.Reply(fakeapi.Text("Done.")),
				fakeapi.Reply(fakeapi.Text("Noted.")),
			)
			id := h.open(t, nil)
			sent := h.call(t, "chat_send", map[string]any{"id": id, "text": "capitalise three"})
			perm := h.rec.wait(t, 1, "permission", nil)
			if perm["diff"] != true || perm["kind"] != "edit" || perm["tool"] != "Edit" || perm["summary"] != "Edit main.txt" ||
				perm["tab_name"] != "[Claude chat] main.txt" {
				t.Fatalf("permission = %v", perm)
			}
			h.WaitFor(t, 30*nvimtest.Slack*time.Second, waitDiffOpen, "", "the diff opens")
			var tab string
			h.Eval(t, `return require("claude.diff").pending()[1].tab_name`, &tab)
			if tab != "[Claude chat] main.txt" {
				t.Errorf("diff tab %q", tab)
			}
			tt.accept(t, h, id, perm["request_id"].(string))
			done := h.rec.wait(t, 1, "permission_done", nil)
			if done["behavior"] != "allow" || done["by"] != tt.by {
				t.Errorf("permission_done = %v, want allow by %s", done, tt.by)
			}
			h.rec.wait(t, 1, "turn_done", nil)
			h.WaitFor(t, 10*nvimtest.Slack*time.Second, `#require("claude.diff").pending() == 0`, "", "the diff closes")
			if got := h.file(t); got != tt.wantFile {
				t.Errorf("file = %q, want %q", got, tt.wantFile)
			}
			fc := h.rec.wait(t, 1, "file_changed", nil)
			if ps, _ := fc["paths"].([]any); len(ps) != 1 || ps[0] != path {
				t.Errorf("file_changed = %v", fc)
			}

			h.call(t, "chat_send", map[string]any{"id": id, "text": "thanks"})
			h.rec.wait(t, 2, "turn_done", nil)
			mains := h.api.MainRequests()
			last := mains[len(mains)-1]
			msgs := last.Messages()
			lastUser := ""
			for _, c := range msgs[len(msgs)-1].Content {
				lastUser += c.Text + "\n"
			}
			hasNote := strings.Contains(lastUser, "I edited your proposed change to "+path) &&
				strings.Contains(lastUser, "+ONE (tweaked by the user)")
			if hasNote != tt.tweaked {
				t.Errorf("note in the next request = %v, want %v:\n%s", hasNote, tt.tweaked, lastUser)
			}

			rw := h.call(t, "chat_rewind", map[string]any{"id": id, "uuid": sent["uuid"]})
			files, _ := rw["files"].([]any)
			if len(files) != 1 {
				t.Fatalf("rewind = %v", rw)
			}
			f := files[0].(map[string]any)
			if f["path"] != path || f["contents"] != diffMainText || f["changed"] != true {
				t.Errorf("rewind file = %v", f)
			}
		})
	}
}

// Deny from the chat rejects the diff, and the model reads the reason;
// plan mode refuses the edit without asking.
func TestChatDenyAndPlanMode(t *testing.T) {
	tests := []struct {
		name  string
		mode  string
		act   func(t *testing.T, h *chatHarness, id string)
		want  string
		byWho string
	}{
		{"deny with a reason", "default", func(t *testing.T, h *chatHarness, id string) {
			perm := h.rec.wait(t, 1, "permission", nil)
			h.WaitFor(t, 30*nvimtest.Slack*time.Second, waitDiffOpen, "", "the diff opens")
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "deny",
				"message": "Keep the lowercase, it is the style."})
		}, "Keep the lowercase, it is the style.", "user"},
		{"plan mode", "plan", func(t *testing.T, h *chatHarness, id string) {}, "Plan mode is on", "plan_mode"},
		// The user switches to plan while the diff is open, then accepts:
		// nothing is written, the model hears the plan-mode refusal.
		{"plan mode after the prompt, then allow", "default", func(t *testing.T, h *chatHarness, id string) {
			perm := h.rec.wait(t, 1, "permission", nil)
			h.WaitFor(t, 30*nvimtest.Slack*time.Second, waitDiffOpen, "", "the diff opens")
			h.call(t, "chat_set_mode", map[string]any{"id": id, "mode": "plan"})
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "allow"})
		}, "Plan mode is on", "plan_mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startChatHarness(t)
			path := filepath.Join(h.dir, "main.txt")
			edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "three", "new_string": "THREE"})
			h.api.Script(
				fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
				fakeapi.Reply(edit),
				fakeapi.Reply(fakeapi.Text("OK.")),
			)
			id := h.open(t, map[string]any{"mode": tt.mode})
			h.call(t, "chat_send", map[string]any{"id": id, "text": "capitalise three"})
			tt.act(t, h, id)
			done := h.rec.wait(t, 1, "permission_done", nil)
			if done["behavior"] != "deny" || done["by"] != tt.byWho {
				t.Errorf("permission_done = %v", done)
			}
			h.rec.wait(t, 1, "turn_done", nil)
			if got := h.file(t); got != diffMainText {
				t.Errorf("the file changed: %q", got)
			}
			mains := h.api.MainRequests()
			tr, ok := mains[len(mains)-1].ToolResult(edit.ID)
			if !ok || !tr.IsError || !strings.Contains(tr.ResultText(), tt.want) {
				t.Errorf("tool_result = %q (error %v), want %q", tr.ResultText(), tr.IsError, tt.want)
			}
			var pending int
			h.Eval(t, `return #require("claude.diff").pending()`, &pending)
			if pending != 0 {
				t.Errorf("%d diffs still open", pending)
			}
		})
	}
}

// textOf concatenates chat id's streamed text.
func (h *chatHarness) textOf(id string) string {
	s := ""
	for _, e := range h.rec.events("text") {
		if e["id"] == id {
			s += e["delta"].(string)
		}
	}
	return s
}

func TestChatFlows(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, h *chatHarness, path string)
	}{
		{"streamed answer, in order", func(t *testing.T, h *chatHarness, path string) {
			const answer = "A streamed answer that arrives in several pieces."
			h.api.Script(fakeapi.Reply(fakeapi.Text(answer)).Slow(20 * time.Millisecond))
			id := h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": id, "text": "hi"})
			done := h.rec.wait(t, 1, "turn_done", nil)
			if done["result"] != answer || done["is_error"] != false {
				t.Errorf("turn_done = %v", done)
			}
			if got := h.textOf(id); got != answer {
				t.Errorf("streamed %q", got)
			}
			h.rec.wait(t, 2, "status", func(d map[string]any) bool { return d["state"] == "idle" })
			var order []string
			h.rec.mu.Lock()
			for _, e := range h.rec.evs {
				if n := len(order); n == 0 || order[n-1] != e.name {
					order = append(order, e.name)
				}
			}
			h.rec.mu.Unlock()
			got := strings.Join(order, " ")
			if !strings.HasPrefix(got, "status ready user lifecycle status text turn_done file_changed status") {
				t.Errorf("event order: %s", got)
			}
			var states []string
			for _, s := range h.rec.events("status") {
				states = append(states, s["state"].(string))
			}
			if st := strings.Join(states, " "); !strings.Contains(st, "running") || !strings.HasSuffix(st, "idle") {
				t.Errorf("states %s", st)
			}
		}},
		{"acceptEdits: no prompt, file_changed, rewind", func(t *testing.T, h *chatHarness, path string) {
			h.api.Script(
				fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
				fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "two", "new_string": "TWO"})),
				fakeapi.Reply(fakeapi.ToolUse("Write", map[string]any{"file_path": filepath.Join(h.dir, "new.txt"), "content": "new\n"})),
				fakeapi.Reply(fakeapi.ToolUse("Bash", map[string]any{"command": "true"})),
				fakeapi.Reply(fakeapi.Text("Done.")),
			)
			id := h.open(t, map[string]any{"allowed_tools": []string{"Bash(true)"}})
			if res := h.call(t, "chat_set_mode", map[string]any{"id": id, "mode": "acceptEdits"}); res["mode"] != "acceptEdits" {
				t.Errorf("chat_set_mode = %v", res)
			}
			if _, err := h.try("chat_set_mode", map[string]any{"id": id, "mode": "bypassPermissions"}); err == nil {
				t.Errorf("bypassPermissions was accepted")
			}
			sent := h.call(t, "chat_send", map[string]any{"id": id, "text": "go"})
			h.rec.wait(t, 1, "turn_done", nil)
			if len(h.rec.events("permission")) != 0 {
				t.Errorf("asked in acceptEdits")
			}
			if got := h.file(t); got != strings.Replace(diffMainText, "two", "TWO", 1) {
				t.Errorf("file = %q", got)
			}
			h.rec.wait(t, 1, "file_changed", nil)
			h.rec.wait(t, 1, "file_changed", func(d map[string]any) bool { return d["all"] == true })
			// Checkpointed from the results' originalFile (the CLI wrote
			// without asking): the contents before the edit, and none for
			// the file the Write created.
			rw := h.call(t, "chat_rewind", map[string]any{"id": id, "uuid": sent["uuid"]})
			files, _ := rw["files"].([]any)
			if len(files) != 2 || files[0].(map[string]any)["contents"] != diffMainText || files[0].(map[string]any)["changed"] != true ||
				files[1].(map[string]any)["path"] != filepath.Join(h.dir, "new.txt") || files[1].(map[string]any)["contents"] != nil {
				t.Errorf("rewind = %v", rw)
			}
		}},
		{"interrupt during a slow stream", func(t *testing.T, h *chatHarness, path string) {
			h.api.Script(
				fakeapi.Reply(fakeapi.Text("This is slow and gets interrupted before it ends.")).Slow(300*time.Millisecond),
				fakeapi.Reply(fakeapi.Text("Next answer.")),
			)
			id := h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": id, "text": "slowly"})
			h.rec.wait(t, 1, "text", nil)
			h.call(t, "chat_interrupt", map[string]any{"id": id})
			done := h.rec.wait(t, 1, "turn_done", nil)
			// Interrupted, not an error (issue 16, defect 4).
			if done["interrupted"] != true || done["is_error"] != false || done["terminal_reason"] != "aborted_streaming" {
				t.Errorf("turn_done = %v", done)
			}
			h.call(t, "chat_send", map[string]any{"id": id, "text": "again"})
			if done := h.rec.wait(t, 2, "turn_done", nil); done["result"] != "Next answer." {
				t.Errorf("after the interrupt: %v", done)
			}
		}},
		{"allow always for the session", func(t *testing.T, h *chatHarness, path string) {
			h.api.Script(
				fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
				fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "one", "new_string": "ONE"})),
				fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "two", "new_string": "TWO"})),
				fakeapi.Reply(fakeapi.Text("Done.")),
			)
			id := h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": id, "text": "go"})
			perm := h.rec.wait(t, 1, "permission", nil)
			h.WaitFor(t, 30*nvimtest.Slack*time.Second, waitDiffOpen, "", "the diff opens")
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "allow", "scope": "session"})
			h.rec.wait(t, 1, "turn_done", nil)
			if n := len(h.rec.events("permission")); n != 1 {
				t.Errorf("%d permission prompts, want 1", n)
			}
			if got := h.file(t); got != strings.NewReplacer("one", "ONE", "two", "TWO").Replace(diffMainText) {
				t.Errorf("file = %q", got)
			}
		}},
		{"AskUserQuestion and ExitPlanMode", func(t *testing.T, h *chatHarness, path string) {
			q := map[string]any{"questions": []map[string]any{{"question": "Which greeting?", "header": "Greeting", "multiSelect": false,
				"options": []map[string]any{{"label": "hello", "description": "plain"}, {"label": "hi", "description": "short"}}}}}
			ask := fakeapi.ToolUse("AskUserQuestion", q)
			exit := fakeapi.ToolUse("ExitPlanMode", map[string]any{})
			h.api.Script(fakeapi.Reply(ask), fakeapi.Reply(exit), fakeapi.Reply(fakeapi.Text("Planned.")))
			id := h.open(t, map[string]any{"mode": "plan"})
			h.call(t, "chat_send", map[string]any{"id": id, "text": "plan it"})
			perm := h.rec.wait(t, 1, "permission", nil)
			qs, _ := perm["questions"].([]any)
			if perm["kind"] != "question" || len(qs) != 1 {
				t.Fatalf("question prompt = %v", perm)
			}
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "allow",
				"answers": map[string]string{"Which greeting?": "hello"}})
			perm = h.rec.wait(t, 2, "permission", nil)
			if perm["kind"] != "plan" {
				t.Fatalf("plan prompt = %v", perm)
			}
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "allow", "accept_plan_mode": "acceptEdits"})
			h.rec.wait(t, 1, "turn_done", nil)
			mains := h.api.MainRequests()
			if tr, ok := mains[1].ToolResult(ask.ID); !ok || !strings.Contains(tr.ResultText(), `"Which greeting?"="hello"`) {
				t.Errorf("answer result = %q", tr.ResultText())
			}
			if tr, ok := mains[2].ToolResult(exit.ID); !ok || tr.IsError {
				t.Errorf("plan result = %q (error %v)", tr.ResultText(), tr.IsError)
			}
			h.rec.wait(t, 1, "status", func(d map[string]any) bool { return d["mode"] == "acceptEdits" })
			list := h.call(t, "chat_list", map[string]any{})
			if cs, _ := list["chats"].([]any); len(cs) != 1 || cs[0].(map[string]any)["mode"] != "acceptEdits" {
				t.Errorf("chat_list = %v", list)
			}
		}},
		{"model validation", func(t *testing.T, h *chatHarness, path string) {
			id := h.open(t, nil)
			if _, err := h.try("chat_set_model", map[string]any{"id": id, "model": "nope-model"}); err == nil || !strings.Contains(err.Error(), "unknown model") {
				t.Errorf("unknown model: %v", err)
			}
			// The answer (and the header) name the model the CLI reports,
			// not the alias asked for.
			res := h.call(t, "chat_set_model", map[string]any{"id": id, "model": "sonnet"})
			if m := fmt.Sprint(res["model"]); !strings.HasPrefix(m, "claude-sonnet") {
				t.Errorf("chat_set_model = %v", res)
			}
			h.rec.wait(t, 1, "status", func(d map[string]any) bool { return d["model"] == res["model"] })
			h.api.Script(fakeapi.Reply(fakeapi.Text("Sonnet here.")))
			h.call(t, "chat_send", map[string]any{"id": id, "text": "who?"})
			h.rec.wait(t, 1, "turn_done", nil)
			if m := h.api.MainRequests()[0].Model(); !strings.Contains(m, "sonnet") {
				t.Errorf("request model %q", m)
			}
		}},
		{"sessions, history, resume and fork", func(t *testing.T, h *chatHarness, path string) {
			h.api.Script(fakeapi.Reply(fakeapi.Text("First answer.")), fakeapi.Reply(fakeapi.Text("Second answer.")))
			id := h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": id, "text": "first prompt"})
			h.rec.wait(t, 1, "turn_done", nil)
			second := h.call(t, "chat_send", map[string]any{"id": id, "text": "second prompt"})
			h.rec.wait(t, 2, "turn_done", nil)
			var sid string
			for _, s := range h.rec.events("status") {
				if v, _ := s["session_id"].(string); v != "" {
					sid = v
				}
			}
			ss := h.call(t, "chat_sessions", map[string]any{"cwd": h.dir, "config_dir": h.env.ConfigDir})
			if list, _ := ss["sessions"].([]any); len(list) != 1 || list[0].(map[string]any)["session_id"] != sid ||
				list[0].(map[string]any)["first_prompt"] != "first prompt" {
				t.Errorf("chat_sessions = %v", ss)
			}

			// A fork to a message the CLI does not know fails in the new
			// chat, which says why; closing it leaves the first alone.
			bad := h.call(t, "chat_fork", map[string]any{"id": id, "uuid": "00000000-0000-0000-0000-000000000000"})
			if f := h.failed(t, bad["id"]); !strings.Contains(fmt.Sprint(f["message"]), "could not go back") {
				t.Errorf("failed fork = %v", f)
			}
			if _, err := h.try("chat_send", map[string]any{"id": bad["id"], "text": "x"}); err == nil || !strings.Contains(err.Error(), "did not start") {
				t.Errorf("send to the failed fork: %v", err)
			}
			h.call(t, "chat_close", map[string]any{"id": bad["id"]})
			if list := h.call(t, "chat_list", map[string]any{}); len(list["chats"].([]any)) != 1 {
				t.Errorf("the failed fork left a chat: %v", list)
			}
			fork := h.call(t, "chat_fork", map[string]any{"id": id, "uuid": second["uuid"]})
			if fork["id"] == id || fork["state"] != "starting" {
				t.Errorf("chat_fork = %v", fork)
			}
			if ready := h.ready(t, fork["id"]); ready["prefill"] != "second prompt" {
				t.Errorf("fork ready = %v", ready)
			}
			hist := h.call(t, "chat_history", map[string]any{"id": fork["id"]})
			if msgs, _ := hist["messages"].([]any); len(msgs) != 2 || msgs[0].(map[string]any)["text"] != "first prompt" ||
				msgs[1].(map[string]any)["text"] != "First answer." {
				t.Errorf("fork history = %v", hist)
			}
			h.api.Script(fakeapi.Reply(fakeapi.Text("Forked.")))
			h.call(t, "chat_send", map[string]any{"id": fork["id"], "text": "instead"})
			h.rec.wait(t, 1, "turn_done", func(d map[string]any) bool { return d["id"] == fork["id"] })
			mains := h.api.MainRequests()
			if txt := mains[len(mains)-1].Text(); !strings.Contains(txt, "first prompt") || strings.Contains(txt, "second prompt") {
				t.Errorf("the fork's request should have the first prompt and not the second")
			}

			res := h.call(t, "chat_open", map[string]any{"cwd": h.dir, "bin": h.bin, "env": h.env.Map(), "resume": sid})
			h.ready(t, res["id"])
			hist = h.call(t, "chat_history", map[string]any{"id": res["id"]})
			if msgs, _ := hist["messages"].([]any); len(msgs) != 4 {
				t.Errorf("resumed history = %v", hist)
			}
		}},
		{"a CLI that never speaks: chat_open answers at once, the chat says what to check", func(t *testing.T, h *chatHarness, path string) {
			script := filepath.Join(h.dir, "silent-claude")
			pidFile := filepath.Join(h.dir, "silent.pid")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 300\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			h.chats.startTimeout = 500 * time.Millisecond
			res := h.call(t, "chat_open", map[string]any{"cwd": h.dir, "bin": script})
			if res["state"] != "starting" {
				t.Fatalf("chat_open = %v", res)
			}
			f := h.failed(t, res["id"])
			for _, want := range []string{"did not start within 500ms", "chat.cmd", script + " --version", ":checkhealth claude"} {
				if !strings.Contains(fmt.Sprint(f["message"]), want) {
					t.Errorf("failed = %v, want it to say %q", f, want)
				}
			}
			// The silent process does not outlive the failed start.
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the silent CLI (pid %d) still runs", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if list := h.call(t, "chat_list", map[string]any{}); len(list["chats"].([]any)) != 1 ||
				list["chats"].([]any)[0].(map[string]any)["state"] != "failed" {
				t.Errorf("chat_list = %v", list)
			}
			h.call(t, "chat_close", map[string]any{"id": res["id"]})
		}},
		{"a resumed chat's history is there while its CLI starts; a fork's once it runs", func(t *testing.T, h *chatHarness, path string) {
			script := filepath.Join(h.dir, "slow-claude")
			if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := t.TempDir()
			tp := chat.TranscriptPath(cfg, h.dir, "sess-early")
			if err := os.MkdirAll(filepath.Dir(tp), 0o700); err != nil {
				t.Fatal(err)
			}
			entries := `{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"text","text":"early prompt"}]}}
{"type":"assistant","uuid":"a1","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Early answer."}]}}
`
			if err := os.WriteFile(tp, []byte(entries), 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]any{"CLAUDE_CONFIG_DIR": cfg}
			res := h.call(t, "chat_open", map[string]any{"cwd": h.dir, "bin": script, "env": env, "resume": "sess-early"})
			if res["state"] != "starting" {
				t.Fatalf("chat_open = %v", res)
			}
			hist := h.call(t, "chat_history", map[string]any{"id": res["id"]})
			if msgs, _ := hist["messages"].([]any); len(msgs) != 2 || msgs[1].(map[string]any)["text"] != "Early answer." {
				t.Errorf("history while starting = %v", hist)
			}
			fork := h.call(t, "chat_open", map[string]any{"cwd": h.dir, "bin": script, "env": env, "resume": "sess-early", "fork": true})
			if _, err := h.try("chat_history", map[string]any{"id": fork["id"]}); err == nil || !strings.Contains(err.Error(), "still starting") {
				t.Errorf("a starting fork's history: %v, want an error", err)
			}
			h.call(t, "chat_close", map[string]any{"id": res["id"]})
			h.call(t, "chat_close", map[string]any{"id": fork["id"]})
		}},
		{"two chats side by side", func(t *testing.T, h *chatHarness, path string) {
			h.api.Script(fakeapi.Reply(fakeapi.Text("Answer one.")).Slow(30*time.Millisecond),
				fakeapi.Reply(fakeapi.Text("Answer two.")).Slow(30*time.Millisecond))
			a, b := h.open(t, nil), h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": a, "text": "to a"})
			h.call(t, "chat_send", map[string]any{"id": b, "text": "to b"})
			da := h.rec.wait(t, 1, "turn_done", func(d map[string]any) bool { return d["id"] == a })
			db := h.rec.wait(t, 1, "turn_done", func(d map[string]any) bool { return d["id"] == b })
			if da["result"] == db["result"] || h.textOf(a) != da["result"] || h.textOf(b) != db["result"] {
				t.Errorf("crossed: a %v (%q), b %v (%q)", da, h.textOf(a), db, h.textOf(b))
			}
		}},
		{"attachments reach the API: image byte-identical, file lines", func(t *testing.T, h *chatHarness, path string) {
			png, _ := base64.StdEncoding.DecodeString(testPNG)
			img := filepath.Join(h.dir, "pixel.png")
			if err := os.WriteFile(img, png, 0o644); err != nil {
				t.Fatal(err)
			}
			h.api.Script(fakeapi.Reply(fakeapi.Text("Seen.")))
			id := h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": id, "text": "look", "attachments": []map[string]any{
				{"type": "image", "path": img}, {"type": "file", "path": path, "start_line": 2, "end_line": 3}}})
			u := h.rec.wait(t, 1, "user", nil)
			if at, _ := u["attachments"].([]any); len(at) != 2 || at[0].(map[string]any)["label"] != "pixel.png" ||
				at[1].(map[string]any)["label"] != "main.txt:2-3" {
				t.Errorf("user event = %v", u)
			}
			h.rec.wait(t, 1, "turn_done", nil)
			var image, file bool
			for _, m := range h.api.MainRequests()[0].Messages() {
				for _, c := range m.Content {
					if c.Type == "image" && strings.Contains(string(c.Source), `"data":"`+testPNG+`"`) {
						image = true
					}
					if c.Type == "text" && strings.Contains(c.Text, `lines="2-3">`+"\ntwo\nthree\n") {
						file = true
					}
				}
			}
			if !image || !file {
				t.Errorf("image %v, file %v in the request", image, file)
			}
		}},
		{"a CLI that dies is reported, not restarted", func(t *testing.T, h *chatHarness, path string) {
			id := h.open(t, nil)
			ch, err := h.chats.get(id)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(ch.session().Init().PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			ex := h.rec.wait(t, 1, "exited", nil)
			if ex["code"] == float64(0) {
				t.Errorf("exited = %v", ex)
			}
			h.rec.wait(t, 1, "status", func(d map[string]any) bool { return d["state"] == "exited" })
			if _, err := h.try("chat_send", map[string]any{"id": id, "text": "x"}); err == nil || !strings.Contains(err.Error(), "exited") {
				t.Errorf("send after the exit: %v", err)
			}
			list := h.call(t, "chat_list", map[string]any{})
			if cs, _ := list["chats"].([]any); len(cs) != 1 || cs[0].(map[string]any)["state"] != "exited" {
				t.Errorf("chat_list = %v", list)
			}
		}},
		{"interrupt while a diff is open: the CLI withdraws the prompt", func(t *testing.T, h *chatHarness, path string) {
			h.api.Script(
				fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
				fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "one", "new_string": "ONE"})),
				fakeapi.Reply(fakeapi.Text("After.")),
			)
			id := h.open(t, nil)
			h.call(t, "chat_send", map[string]any{"id": id, "text": "go"})
			perm := h.rec.wait(t, 1, "permission", nil)
			h.WaitFor(t, 30*nvimtest.Slack*time.Second, waitDiffOpen, "", "the diff opens")
			h.call(t, "chat_interrupt", map[string]any{"id": id})
			done := h.rec.wait(t, 1, "permission_done", nil)
			if done["request_id"] != perm["request_id"] || done["by"] != "cli_cancelled" {
				t.Errorf("permission_done = %v", done)
			}
			h.rec.wait(t, 1, "turn_done", nil)
			h.WaitFor(t, 10*nvimtest.Slack*time.Second, `#require("claude.diff").pending() == 0`, "", "the diff closes")
			if _, err := h.try("chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "allow"}); err == nil {
				t.Errorf("a withdrawn prompt was answered")
			}
			if got := h.file(t); got != diffMainText {
				t.Errorf("file = %q", got)
			}
			h.call(t, "chat_send", map[string]any{"id": id, "text": "next"})
			h.rec.wait(t, 2, "turn_done", nil)
		}},
		{"close reports the exit; a missing CLI is an error", func(t *testing.T, h *chatHarness, path string) {
			id := h.open(t, nil)
			h.call(t, "chat_close", map[string]any{"id": id})
			ex := h.rec.wait(t, 1, "exited", nil)
			if ex["code"] != float64(0) {
				t.Errorf("exited = %v", ex)
			}
			if list := h.call(t, "chat_list", map[string]any{}); len(list["chats"].([]any)) != 0 {
				t.Errorf("chat_list after close = %v", list)
			}
			if _, err := h.try("chat_send", map[string]any{"id": id, "text": "x"}); err == nil {
				t.Errorf("send to a closed chat succeeded")
			}
			// A missing CLI: the chat opens, and says what to check.
			res := h.call(t, "chat_open", map[string]any{"cwd": h.dir, "bin": filepath.Join(h.dir, "no-such-claude")})
			if f := h.failed(t, res["id"]); !strings.Contains(fmt.Sprint(f["message"]), "not found") || !strings.Contains(fmt.Sprint(f["message"]), "chat.cmd") {
				t.Errorf("missing CLI: %v", f)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startChatHarness(t)
			tt.run(t, h, filepath.Join(h.dir, "main.txt"))
		})
	}
}

// testPNG is a 1×1 PNG.
const testPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// Approving a plan with ga ("manual") must leave the CLI in manual
// (the wire's "default") mode, whatever mode it had before plan: the model's next Edit asks. (CLI
// 2.1.331 restores the mode from before plan on a plain allow: from
// default → acceptEdits → plan, ga used to leave acceptEdits, and the Edit
// was written with no prompt.) gA (acceptEdits) lets it through.
func TestChatPlanApprovalSetsTheChosenMode(t *testing.T) {
	for _, tt := range []struct {
		name, accept string
		asks         bool
	}{
		{"ga: manual, the edit asks", "manual", true},
		{"the old name default is manual", "default", true},
		{"gA: acceptEdits, the edit is written", "acceptEdits", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := startChatHarness(t)
			path := filepath.Join(h.dir, "main.txt")
			edit := fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": "three", "new_string": "THREE"})
			h.api.Script(
				fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
				fakeapi.Reply(fakeapi.ToolUse("ExitPlanMode", map[string]any{"plan": "1. Capitalise three."})),
				fakeapi.Reply(edit),
				fakeapi.Reply(fakeapi.Text("Done.")),
			)
			id := h.open(t, nil)
			// As <S-Tab> twice: default → acceptEdits → plan.
			h.call(t, "chat_set_mode", map[string]any{"id": id, "mode": "acceptEdits"})
			h.call(t, "chat_set_mode", map[string]any{"id": id, "mode": "plan"})
			h.call(t, "chat_send", map[string]any{"id": id, "text": "capitalise three"})
			plan := h.rec.wait(t, 1, "permission", func(d map[string]any) bool { return d["kind"] == "plan" })
			h.call(t, "chat_permission", map[string]any{"id": id, "request_id": plan["request_id"], "behavior": "allow",
				"accept_plan_mode": tt.accept})
			if tt.asks {
				// Answered the moment the prompt arrives, before its diff
				// may be on screen: the review is registered before Lua
				// hears of the prompt, so the answer finds it (it could
				// get "no longer open" when the review registered later).
				perm := h.rec.wait(t, 1, "permission", func(d map[string]any) bool { return d["kind"] == "edit" })
				h.call(t, "chat_permission", map[string]any{"id": id, "request_id": perm["request_id"], "behavior": "deny"})
			}
			h.rec.wait(t, 1, "turn_done", nil)
			wantFile := diffMainText
			if !tt.asks {
				wantFile = strings.Replace(diffMainText, "three", "THREE", 1)
			}
			if got := h.file(t); got != wantFile {
				t.Errorf("file = %q, want %q", got, wantFile)
			}
			// The header shows the CLI's mode: the last status says it.
			sts := h.rec.events("status")
			if last := sts[len(sts)-1]; last["mode"] != chat.ModeName(tt.accept) {
				t.Errorf("last status %v, want mode %s", last, chat.ModeName(tt.accept))
			}
		})
	}
}

// Issue 16, defect 3: CLI 2.1.331 offers no TodoWrite in stream-json mode
// and answers a call "No such tool available": the to-do window shows
// nothing for it (it showed the list the CLI had refused).
func TestChatRefusedTodoWriteShowsNoList(t *testing.T) {
	h := startChatHarness(t)
	todo := fakeapi.ToolUse("TodoWrite", map[string]any{"todos": []map[string]any{
		{"content": "Capitalise three", "status": "in_progress", "activeForm": "Capitalising three"}}})
	h.api.Script(fakeapi.Reply(todo), fakeapi.Reply(fakeapi.Text("Done.")))
	id := h.open(t, nil)
	h.call(t, "chat_send", map[string]any{"id": id, "text": "plan it"})
	h.rec.wait(t, 1, "turn_done", nil)
	res := h.rec.wait(t, 1, "tool_result", func(d map[string]any) bool { return d["tool_use_id"] == todo.ID })
	if res["is_error"] != true {
		t.Fatalf("the CLI ran TodoWrite (%v): this CLI has it again; show its list", res)
	}
	if got := h.rec.events("todos"); len(got) != 0 {
		t.Errorf("a refused TodoWrite showed a list: %v", got)
	}
}

// The progress CLI 2.1.331 does report: its background tasks
// (system/background_tasks_changed) fill the to-do window while they run,
// and their end is one line in the transcript.
func TestChatBackgroundTasksShowAsProgress(t *testing.T) {
	h := startChatHarness(t)
	bg := fakeapi.ToolUse("Bash", map[string]any{"command": "sleep 1; echo done-bg", "run_in_background": true, "description": "warm the cache"})
	h.api.Script(fakeapi.Reply(bg), fakeapi.Reply(fakeapi.Text("Started it.")), fakeapi.Reply(fakeapi.Text("Noted.")))
	id := h.open(t, map[string]any{"allowed_tools": []string{"Bash"}})
	h.call(t, "chat_send", map[string]any{"id": id, "text": "warm it in the background"})
	running := h.rec.wait(t, 1, "todos", func(d map[string]any) bool { return len(d["todos"].([]any)) == 1 })
	item := running["todos"].([]any)[0].(map[string]any)
	if item["content"] != "background command: warm the cache" || item["status"] != "in_progress" {
		t.Errorf("running task shown as %v", item)
	}
	h.rec.wait(t, 1, "todos", func(d map[string]any) bool { return len(d["todos"].([]any)) == 0 })
	done := h.rec.wait(t, 1, "system", func(d map[string]any) bool {
		return strings.Contains(fmt.Sprint(d["text"]), "warm the cache") && strings.Contains(fmt.Sprint(d["text"]), "completed")
	})
	if done["level"] != "info" {
		t.Errorf("task end = %v", done)
	}
}
