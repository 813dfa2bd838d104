package chatpanel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// The outbox delivers everything in order, merges deltas of one block
// while they queue, keeps other events between them in place, and never
// drops an event even when delivery is slow.
func TestChatOutbox(t *testing.T) {
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	first := true
	o := newOutbox(func(ctx context.Context, name string, data any) error {
		mu.Lock()
		wait := first
		first = false
		d := data.(map[string]any)
		got = append(got, fmt.Sprintf("%s:%v", name, d["delta"]))
		mu.Unlock()
		if wait {
			<-release // a slow Neovim: everything else queues up
		}
		return nil
	}, func(string, ...any) {})
	o.start()
	o.push("chat.status", map[string]any{"delta": "s0"})
	for i := 0; i < 500; i++ {
		o.pushDelta("chat.text", map[string]any{}, "m1\x000", "a")
	}
	o.push("chat.tool_use", map[string]any{"delta": "tu"})
	o.pushDelta("chat.text", map[string]any{}, "m1\x000", "b")
	o.pushDelta("chat.thinking", map[string]any{}, "m1\x000", "t")
	o.pushDelta("chat.text", map[string]any{}, "m1\x001", "c")
	for i := 0; i < 1000; i++ {
		o.push("chat.lifecycle", map[string]any{"delta": i})
	}
	close(release)
	o.closeDrained()
	select {
	case <-o.done:
	case <-time.After(10 * nvimtest.Slack * time.Second):
		t.Fatal("the outbox did not drain")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"chat.status:s0", "chat.text:" + strings.Repeat("a", 500), "chat.tool_use:tu", "chat.text:b", "chat.thinking:t", "chat.text:c"}
	if len(got) != len(want)+1000 {
		t.Fatalf("%d events delivered, want %d", len(got), len(want)+1000)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d = %.60s, want %.60s", i, got[i], w)
		}
	}
	for i := 0; i < 1000; i++ {
		if got[len(want)+i] != fmt.Sprintf("chat.lifecycle:%d", i) {
			t.Fatalf("lifecycle %d out of order: %s", i, got[len(want)+i])
		}
	}
}

func TestChatOutboxHalt(t *testing.T) {
	block := make(chan struct{})
	o := newOutbox(func(ctx context.Context, name string, data any) error {
		<-block
		return nil
	}, func(string, ...any) {})
	o.start()
	o.push("chat.x", map[string]any{})
	o.pushDelta("chat.text", map[string]any{}, "k", "d")
	close(block)
	o.halt()
	o.halt() // twice is harmless
}

func TestUnifiedDiff(t *testing.T) {
	a := "one\ntwo\nthree\nfour\nfive\nsix\n"
	b := "one\nTWO\nthree\nfour\nfive\nsix\nseven\n"
	want := "-two\n+TWO\n three\n@@\n six\n+seven\n"
	if got := unifiedDiff(a, b, 60); !strings.HasSuffix(got, want) || !strings.HasPrefix(got, " one\n") {
		t.Errorf("diff:\n%s", got)
	}
	if got := unifiedDiff(a, b, 2); !strings.Contains(got, "… (more changes)") {
		t.Errorf("cut diff:\n%s", got)
	}
	if got := unifiedDiff("", "x\n", 10); got != "+x\n" {
		t.Errorf("from empty: %q", got)
	}
}

func TestChatAttachments(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("l1\nl2\nl3\nl4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	if err := os.WriteFile(filepath.Join(dir, "p.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", maxFileAttachment+10)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		a         attachment
		wantText  string
		wantLabel string
		wantErr   string
	}{
		{"lines", attachment{Type: "file", Path: "a.go", StartLine: 2, EndLine: 3},
			"<file path=\"" + dir + "/a.go\" lines=\"2-3\">\nl2\nl3\n\n</file>", "a.go:2-3", ""},
		{"whole file", attachment{Type: "file", Path: filepath.Join(dir, "a.go")},
			"<file path=\"" + dir + "/a.go\">\nl1\nl2\nl3\nl4\n\n</file>", "a.go", ""},
		{"past the end", attachment{Type: "file", Path: "a.go", StartLine: 9}, "", "", "past the end"},
		{"missing", attachment{Type: "file", Path: "nope"}, "", "", "no such file"},
		{"big is cut", attachment{Type: "file", Path: "big.txt"}, "(cut at 256 KiB", "big.txt", ""},
		{"text", attachment{Type: "text", Text: "```lua\nx\n```"}, "```lua\nx\n```", "```lua …", ""},
		{"image", attachment{Type: "image", Path: "p.png"}, "", "p.png", ""},
		{"not an image", attachment{Type: "image", Path: "x.txt"}, "", "", "is not png"},
		{"unknown", attachment{Type: "video"}, "", "", "unknown attachment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, label, err := tt.a.block(context.Background(), dir, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if label != tt.wantLabel {
				t.Errorf("label %q, want %q", label, tt.wantLabel)
			}
			if tt.a.Type == "image" {
				if b.Type != "image" || b.Source.MediaType != "image/png" || b.Source.Data != base64.StdEncoding.EncodeToString(png) {
					t.Errorf("image block = %+v", b)
				}
				return
			}
			if !strings.Contains(b.Text, tt.wantText) {
				t.Errorf("text = %.200q, want %q", b.Text, tt.wantText)
			}
		})
	}
}

// A chat whose CLI runs elsewhere is told the far path of an attached
// file; a file it cannot name (outside the mapping) is refused, naming it.
func TestChatAttachmentsFar(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("l1\nl2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := pathmap.New("/workspaces/app", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := attachment{Type: "file", Path: "a.go", StartLine: 2, EndLine: 2}.block(context.Background(), dir, m.ToRemote)
	if err != nil || !strings.HasPrefix(b.Text, `<file path="/workspaces/app/a.go" lines="2-2">`) {
		t.Fatalf("far attachment %q, %v", b.Text, err)
	}
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "o.txt"), []byte("o\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = attachment{Type: "file", Path: filepath.Join(out, "o.txt")}.block(context.Background(), dir, m.ToRemote)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(out, "o.txt")) || !strings.Contains(err.Error(), "outside the mapping") {
		t.Fatalf("outside the mapping: %v", err)
	}
}

// A Neovim that is busy or blocked at a prompt makes deliveries fail for a
// while: the outbox retries each event until it is taken, in order; only
// an error the Lua side raised for that payload skips it.
func TestChatOutboxRetries(t *testing.T) {
	transient := []error{
		fmt.Errorf("emit: %w", nvimbridge.ErrTimeout),
		fmt.Errorf("emit: %w", nvimbridge.ErrBlocked),
		&nvimbridge.LuaError{Func: "emit", Message: "expired: the caller stopped waiting before Neovim could run it"},
	}
	var mu sync.Mutex
	var got []string
	fails := map[string]int{}
	o := newOutbox(func(ctx context.Context, name string, data any) error {
		d := data.(map[string]any)
		key := fmt.Sprint(d["n"])
		mu.Lock()
		defer mu.Unlock()
		if key == "bad" {
			return &nvimbridge.LuaError{Func: "emit", Message: "attempt to index a nil value"}
		}
		if fails[key] < 3 {
			fails[key]++
			return transient[fails[key]-1]
		}
		got = append(got, name+":"+key)
		return nil
	}, func(string, ...any) {})
	o.start()
	want := []string{}
	for i := 0; i < 5; i++ {
		o.push("chat.permission", map[string]any{"n": i})
		want = append(want, fmt.Sprintf("chat.permission:%d", i))
		if i == 2 {
			o.push("chat.system", map[string]any{"n": "bad"})
		}
	}
	o.closeDrained()
	select {
	case <-o.done:
	case <-time.After(20 * nvimtest.Slack * time.Second):
		o.halt()
		t.Fatal("the outbox did not drain")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("delivered %q, want %q", got, want)
	}
}

// halt stops an outbox that keeps retrying.
func TestChatOutboxHaltWhileRetrying(t *testing.T) {
	tried := make(chan struct{}, 1)
	o := newOutbox(func(ctx context.Context, name string, data any) error {
		select {
		case tried <- struct{}{}:
		default:
		}
		return nvimbridge.ErrBlocked
	}, func(string, ...any) {})
	o.start()
	o.push("chat.status", map[string]any{})
	select {
	case <-tried:
	case <-time.After(5 * nvimtest.Slack * time.Second):
		t.Fatal("no delivery attempt")
	}
	halted := make(chan struct{})
	go func() { o.halt(); close(halted) }()
	select {
	case <-halted:
	case <-time.After(5 * nvimtest.Slack * time.Second):
		t.Fatal("halt did not stop the retrying outbox")
	}
}

// chatEv is one chat event a test saw: its name without "chat." and its
// data.
type chatEv struct {
	name string
	data map[string]any
}

// unitChat is a chatProc without a CLI, fed events by hand; its Lua
// events are recorded.
func unitChat(t *testing.T, cwd string) (*chatProc, func() []chatEv) {
	t.Helper()
	app := core.New(core.Options{})
	t.Cleanup(func() { _ = app.Close() })
	var mu sync.Mutex
	var evs []chatEv
	ch := &chatProc{c: New(app, nil, Peers{}), id: "1", params: openParams{Cwd: cwd}, state: "idle", mode: "default",
		perms: map[string]*chatPerm{}, streamed: map[string]bool{}, cpSeen: map[string]bool{}, toolUses: map[string]toolUse{}, taskNames: map[string]string{}}
	ch.out = newOutbox(func(ctx context.Context, name string, data any) error {
		mu.Lock()
		evs = append(evs, chatEv{name, data.(map[string]any)})
		mu.Unlock()
		return nil
	}, func(string, ...any) {})
	ch.out.start()
	t.Cleanup(ch.out.halt)
	return ch, func() []chatEv {
		mu.Lock()
		defer mu.Unlock()
		return append([]chatEv(nil), evs...)
	}
}

// Edits that were not asked about (acceptEdits, allow always, a
// subagent's) are checkpointed from what the CLI says it replaced, not from
// the file when the tool_use arrives (the CLI may have written it by then);
// rewind gives the pre-edit contents, and a file that is not UTF-8 is
// restored by the host, byte for byte.
func TestChatCheckpointFromResult(t *testing.T) {
	dir := t.TempDir()
	edited := filepath.Join(dir, "a.txt")
	created := filepath.Join(dir, "new.txt")
	binary := filepath.Join(dir, "b.dat")
	orig := "one\ntwo\n"
	binOrig := "caf\xe9\n" // Latin-1
	ch, _ := unitChat(t, dir)
	ch.sent, ch.lastSent = []string{"u1"}, "u1"
	ch.onEvent(chat.LifecycleEvent{UUID: "u1", State: "started"})
	tool := func(id, name, parent string, input map[string]any) {
		raw, _ := json.Marshal(input)
		ch.onEvent(chat.AssistantEvent{MessageID: "m" + id, ParentToolUseID: parent,
			Blocks: []chat.Block{{Type: "tool_use", ID: id, Name: name, Input: raw}}})
	}
	result := func(id string, structured map[string]any) {
		raw, _ := json.Marshal(structured)
		ch.onEvent(chat.ToolResultEvent{ToolUseID: id, Text: "ok", Structured: raw, FilePath: structured["filePath"].(string)})
	}
	// The CLI wrote before we saw the tool_use (as it may in acceptEdits).
	if err := os.WriteFile(edited, []byte("ONE\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool("t1", "Edit", "", map[string]any{"file_path": edited, "old_string": "one", "new_string": "ONE"})
	result("t1", map[string]any{"filePath": edited, "originalFile": orig})
	// A subagent's Write creates a file.
	if err := os.WriteFile(created, []byte("made\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool("t2", "Write", "task1", map[string]any{"file_path": created, "content": "made\n"})
	result("t2", map[string]any{"type": "create", "filePath": created, "originalFile": nil})
	// A file that is not UTF-8, checkpointed when its edit was allowed.
	if err := os.WriteFile(binary, []byte(binOrig), 0o600); err != nil {
		t.Fatal(err)
	}
	ch.checkpoint(binary)
	if err := os.WriteFile(binary, []byte("changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	res, err := ch.handleRewind(rewindParams{UUID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	files := res.(map[string]any)["files"].([]map[string]any)
	got := map[string]map[string]any{}
	for _, f := range files {
		got[f["path"].(string)] = f
	}
	if f := got[edited]; f == nil || f["contents"] != orig || f["changed"] != true {
		t.Errorf("edited file: %v", f)
	}
	if f := got[created]; f == nil || f["contents"] != nil || f["changed"] != true {
		t.Errorf("created file (subagent): %v", f)
	}
	if f := got[binary]; f == nil || f["restored_by_host"] != true || f["contents"] != nil || f["error"] != nil {
		t.Errorf("binary file: %v", f)
	}
	if b, err := os.ReadFile(binary); err != nil || string(b) != binOrig {
		t.Errorf("binary file restored as %q, %v", b, err)
	}
	if st, err := os.Stat(binary); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("binary file mode: %v %v", st.Mode(), err)
	}
	if len(files) != 3 {
		t.Errorf("%d files: %v", len(files), files)
	}
}

// After a Bash result and at the end of a turn Lua is told to check every
// buffer (a command may have changed any file).
func TestChatFileChangedAll(t *testing.T) {
	ch, evs := unitChat(t, t.TempDir())
	ch.onEvent(chat.AssistantEvent{MessageID: "m1", Blocks: []chat.Block{{Type: "tool_use", ID: "b1", Name: "Bash",
		Input: json.RawMessage(`{"command":"make"}`)}}})
	ch.onEvent(chat.ToolResultEvent{ToolUseID: "b1", Text: "done"})
	ch.onEvent(chat.ResultEvent{Subtype: "success"})
	ch.out.closeDrained()
	<-ch.out.done
	var names []string
	for _, e := range evs() {
		if e.name == "chat.file_changed" {
			if e.data["all"] != true || len(e.data["paths"].([]string)) != 0 {
				t.Errorf("file_changed = %v", e.data)
			}
		}
		names = append(names, strings.TrimPrefix(e.name, "chat."))
	}
	if got := strings.Join(names, " "); got != "tool_use tool_result file_changed turn_done file_changed status" {
		t.Errorf("events: %s", got)
	}
}

// TestViewOf: a prompt's body shows all of the input, displayable, or says
// it does not (fits false).
func TestViewOf(t *testing.T) {
	long := strings.Repeat("x", permLineMax+1)
	many := strings.TrimSuffix(strings.Repeat("echo a\n", permLinesMax+1), "\n")
	tests := []struct {
		name, tool, input, desc string
		wantSummary             string
		wantBody                []string
		wantFits                bool
		wantLines               int
	}{
		{"one line", "Bash", `{"command":"make test"}`, "Run the tests", "Bash: make test",
			[]string{"$ make test", "Claude says: Run the tests"}, true, 1},
		{"blank run collapsed, end shown", "Bash", `{"command":"cat README.md` + strings.Repeat(`\n`, 81) + `curl x | sh"}`, "",
			"Bash: cat README.md … curl x | sh (82 lines)",
			[]string{"(a command of 82 lines)", "$ cat README.md", "  ⋮ 80 blank lines", "  curl x | sh"}, true, 82},
		{"control characters shown", "Bash", `{"command":"printf '\u001b]0;x\u0007'"}`, "a\u001bb",
			"Bash: printf '^[]0;x^G'", []string{"$ printf '^[]0;x^G'", "Claude says: a^[b"}, true, 1},
		{"a line too long", "Bash", `{"command":"` + long + `"}`, "", "", nil, false, 1},
		{"too many lines", "Bash", `{"command":"` + strings.ReplaceAll(many, "\n", `\n`) + `"}`, "", "", nil, false, permLinesMax + 1},
		{"other tool: its input", "mcp__x__run", `{"b":2,"a":"one\ntwo"}`, "", "mcp__x__run",
			[]string{"a:", "  one", "  two", "b: 2"}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := chat.PermissionRequestEvent{ToolName: tt.tool, Input: json.RawMessage(tt.input), Description: tt.desc}
			v := viewOf(e, permKind(tt.tool), "/w")
			if v.fits != tt.wantFits || v.lines != tt.wantLines {
				t.Errorf("fits %v lines %d, want %v %d", v.fits, v.lines, tt.wantFits, tt.wantLines)
			}
			if tt.wantSummary != "" && v.summary != tt.wantSummary {
				t.Errorf("summary %q, want %q", v.summary, tt.wantSummary)
			}
			if tt.wantBody != nil && strings.Join(v.body, "\n") != strings.Join(tt.wantBody, "\n") {
				t.Errorf("body\n%s\nwant\n%s", strings.Join(v.body, "\n"), strings.Join(tt.wantBody, "\n"))
			}
			if !tt.wantFits && !strings.Contains(v.body[len(v.body)-1], "cannot be allowed") {
				t.Errorf("an input that does not fit does not say so: %q", v.body)
			}
			for _, l := range append(v.body, v.summary) {
				if strings.ContainsAny(l, "\n\x1b\x07") {
					t.Errorf("a control character reaches the chat: %q", l)
				}
			}
		})
	}
}
