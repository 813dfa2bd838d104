package review

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/workspace"
)

func newTestQueue(t *testing.T) *Queue {
	t.Helper()
	var q *Queue
	app := core.New(core.Options{Features: func(h host.Host) []host.Feature {
		q = New(h)
		return []host.Feature{q}
	}})
	t.Cleanup(func() { _ = app.Close() })
	return q
}

// feed applies transcript lines to q as records of the project dir (their
// cwd), the workspace's folder.
func feed(t *testing.T, q *Queue, dir string, lines ...string) {
	t.Helper()
	testWorkspace(q).SetCwd(dir)
	for _, l := range lines {
		q.apply([]byte(withCwd(l, dir)), false, dir)
	}
}

// withCwd gives a transcript line the cwd the CLI records.
func withCwd(line, cwd string) string {
	var m map[string]any
	if json.Unmarshal([]byte(line), &m) != nil {
		return line
	}
	m["cwd"] = cwd
	b, _ := json.Marshal(m)
	return string(b)
}

// Transcript lines as CLI 2.1.331 writes them (the fields the queue reads).
func promptLine(session, prompt string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "sessionId": session, "promptId": prompt, "uuid": prompt + "-u",
		"message": map[string]any{"role": "user", "content": "do it"}})
	return string(b)
}

func editLine(session, prompt, path, orig, old, new string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "sessionId": session, "promptId": prompt,
		"message":       map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t"}}},
		"toolUseResult": map[string]any{"filePath": path, "oldString": old, "newString": new, "originalFile": orig, "userModified": false, "replaceAll": false}})
	return string(b)
}

func createLine(session, prompt, path, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "sessionId": session, "promptId": prompt,
		"message":       map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t"}}},
		"toolUseResult": map[string]any{"type": "create", "filePath": path, "content": content, "originalFile": nil}})
	return string(b)
}

func list(t *testing.T, q *Queue, scope string) map[string]ListItem {
	t.Helper()
	res, err := q.handleList(context.Background(), ref{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ListItem{}
	for _, it := range res.(List).Items {
		out[filepath.Base(it.Path)+"@"+it.Session] = it
	}
	return out
}

func TestQueueTurns(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q := newTestQueue(t)
	steps := []struct {
		name  string
		lines []string
		disk  map[string]string
		scope string
		want  map[string]string // base@session → status +added -removed
	}{
		{"turn 1 edits a twice and creates b", []string{
			promptLine("S1", "p1"),
			editLine("S1", "p1", a, "1\n2\n3\n", "2", "two"),
			editLine("S1", "p1", a, "1\ntwo\n3\n", "3", "three"),
			createLine("S1", "p1", b, "x\ny\n"),
		}, map[string]string{a: "1\ntwo\nthree\n", b: "x\ny\n"}, "turn",
			map[string]string{"a.txt@S1": "modified +2 -2", "b.txt@S1": "new +2 -0"}},
		{"another session's turn is listed beside it", []string{
			promptLine("S2", "q1"),
			editLine("S2", "q1", a, "1\ntwo\nthree\n", "1", "one"),
		}, map[string]string{a: "one\ntwo\nthree\n"}, "turn",
			map[string]string{"a.txt@S1": "modified +3 -3", "b.txt@S1": "new +2 -0", "a.txt@S2": "modified +1 -1"}},
		{"S1's next turn starts a new list", []string{promptLine("S1", "p2")}, nil, "turn",
			map[string]string{"a.txt@S2": "modified +1 -1"}},
		{"the session keeps every turn", nil, nil, "session",
			map[string]string{"a.txt@S1": "modified +3 -3", "b.txt@S1": "new +2 -0", "a.txt@S2": "modified +1 -1"}},
		// (Created, then gone: as before the turn, nothing to review.)
		{"a file created then gone is not listed", nil, map[string]string{b: ""}, "session",
			map[string]string{"a.txt@S1": "modified +3 -3", "a.txt@S2": "modified +1 -1"}},
		{"a file put back as it was is not listed", nil, map[string]string{a: "1\ntwo\nthree\n"}, "session",
			map[string]string{"a.txt@S1": "modified +2 -2"}},
		{"junk is ignored", []string{"", "{", `{"type":"user","sessionId":"S1","toolUseResult":"Error: nope"}`,
			`{"type":"assistant","sessionId":"S1"}`}, map[string]string{a: "one\ntwo\nthree\n"}, "turn",
			map[string]string{"a.txt@S2": "modified +1 -1"}},
	}
	for _, st := range steps {
		for p, s := range st.disk {
			if s == "" {
				_ = os.Remove(p)
			} else {
				write(p, s)
			}
		}
		for _, l := range st.lines {
			feed(t, q, dir, l)
		}
		got := list(t, q, st.scope)
		if len(got) != len(st.want) {
			t.Fatalf("%s: listed %v, want %v", st.name, got, st.want)
		}
		for k, w := range st.want {
			it, ok := got[k]
			if !ok {
				t.Fatalf("%s: %s not listed: %v", st.name, k, got)
			}
			if s := it.Status + " +" + itoa(it.Added) + " -" + itoa(it.Removed); s != w {
				t.Errorf("%s: %s is %q, want %q", st.name, k, s, w)
			}
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The poller reads what a session file gains once the options name the
// config directory, never what was there before.
func TestQueuePollsTranscripts(t *testing.T) {
	cfg, proj := t.TempDir(), t.TempDir()
	dir := filepath.Join(cfg, "projects", projectDirName(proj))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(proj, "a.txt")
	if err := os.WriteFile(a, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(old, []byte(withCwd(promptLine("OLD", "o1"), proj)+"\n"+withCwd(editLine("OLD", "o1", a, "old\n", "old", "new"), proj)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := newTestQueue(t)
	testWorkspace(q).SetCwd(proj)
	q.setOptions(reviewOptions(t, Options{ConfigDir: cfg, Cwd: proj}))
	f, err := os.OpenFile(filepath.Join(dir, "s1.jsonl"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Half a line first: nothing until its end comes.
	line := withCwd(editLine("S1", "p1", a, "old\n", "old", "new"), proj)
	if _, err := f.WriteString(withCwd(promptLine("S1", "p1"), proj) + "\n" + line[:20]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line[20:] + "\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := list(t, q, "turn")
		if len(got) == 1 {
			if it := got["a.txt@S1"]; it.Added != 1 || it.Removed != 1 {
				t.Fatalf("listed %+v", got)
			}
			break
		}
		if len(got) > 1 || time.Now().After(deadline) {
			t.Fatalf("listed %+v, want a.txt of S1 alone (the old session's file is history)", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A project path too long for a directory name is filed under its first
// 200 characters and a hash; that directory, made after the queue first
// looked, is found and read whole.
func TestQueueLongProjectPath(t *testing.T) {
	cfg, files := t.TempDir(), t.TempDir()
	cwd := "/" + strings.Repeat("long-directory/", 20)
	q := newTestQueue(t)
	q.setOptions(reviewOptions(t, Options{ConfigDir: cfg, Cwd: cwd}))
	dir := filepath.Join(cfg, "projects", projectDirName(cwd)[:maxProjectName]+"-1a2b3c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(files, "f.txt")
	if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := withCwd(promptLine("S", "p"), cwd) + "\n" + withCwd(createLine("S", "p", f, "x\n"), cwd) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(list(t, q, "turn")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the session filed under the cut name was never read")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A subagent's writes (its transcript in <session>/subagents/, as CLI
// 2.1.331 files it: isSidechain, the session's id, a prompt id of its own)
// are the session's, in the session's turn.
func TestQueueSubagentWrites(t *testing.T) {
	cfg, proj := t.TempDir(), t.TempDir()
	dir := filepath.Join(cfg, "projects", projectDirName(proj))
	a, sub := filepath.Join(proj, "a.txt"), filepath.Join(proj, "sub.txt")
	for p, s := range map[string]string{a: "new\n", sub: "from sub\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q := newTestQueue(t)
	testWorkspace(q).SetCwd(proj)
	q.setOptions(reviewOptions(t, Options{ConfigDir: cfg, Cwd: proj}))
	if err := os.MkdirAll(filepath.Join(dir, "S1", "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	main := withCwd(promptLine("S1", "p1"), proj) + "\n" + withCwd(editLine("S1", "p1", a, "old\n", "old", "new"), proj) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "S1.jsonl"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	side := func(l string) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(l), &m)
		m["isSidechain"] = true
		m["cwd"] = proj
		b, _ := json.Marshal(m)
		return string(b)
	}
	subLines := side(promptLine("S1", "agent-own-prompt")) + "\n" + side(createLine("S1", "agent-own-prompt", sub, "from sub\n")) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "S1", "subagents", "agent-1.jsonl"), []byte(subLines), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := list(t, q, "turn")
		if len(got) == 2 {
			if got["a.txt@S1"].Status != "modified" || got["sub.txt@S1"].Status != "new" {
				t.Fatalf("listed %+v", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listed %+v, want a.txt and the subagent's sub.txt in S1's turn", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Bad requests from Lua get errors a person can act on.
func TestQueueBadRequests(t *testing.T) {
	q := newTestQueue(t)
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	feed(t, q, dir, promptLine("S", "p"))
	feed(t, q, dir, editLine("S", "p", a, "w\n", "w", "x"))
	ctx := context.Background()
	tests := []struct {
		name string
		call func() (any, error)
		want string
	}{
		{"unknown scope", func() (any, error) { return q.handleList(ctx, ref{Scope: "week"}) }, `unknown scope "week"`},
		{"not listed", func() (any, error) {
			return q.handleBaseline(ctx, ref{Session: "S", Path: filepath.Join(dir, "b.txt")})
		}, "is not in the review queue"},
		{"other session", func() (any, error) { return q.handleMark(ctx, markRef{ref: ref{Session: "T", Path: a}}) }, "is not in the review queue"},
		{"no hunk under the cursor", func() (any, error) {
			return q.handleRevertHunk(ctx, revertRef{ref: ref{Session: "S", Path: a}, Line: 5, Lines: []string{"x"}})
		}, "no change of Claude's under the cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.call()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// And the good ones.
	e, err := q.handleRevertHunk(ctx, revertRef{ref: ref{Session: "S", Path: a}, Line: 1, Lines: []string{"x"}})
	if err != nil || !reflect.DeepEqual(e, Edit{Start: 0, End: 1, Lines: []string{"w"}}) {
		t.Fatalf("revert hunk: %+v, %v", e, err)
	}
	if _, err := q.handleMark(ctx, markRef{ref: ref{Session: "S", Path: a}, Reviewed: true}); err != nil {
		t.Fatal(err)
	}
	if n := q.toReview(); n != 0 {
		t.Fatalf("%d to review after marking the only file", n)
	}
}

// Claude's result where the record alone cannot say it: an Edit whose
// oldString is not in originalFile as it is (the CLI matched it after
// normalizing quotes, or line ends) is read from the file, not taken as
// "nothing changed" — else the file had no hunk of Claude's to revert.
// And a UTF-8 BOM, which a buffer does not hold as text ('bomb'), is not
// part of line 1: Claude's hunk there is revertable and the BOM never
// lands in the buffer.
func TestQueueResultsAsTheBufferSeesThem(t *testing.T) {
	q := newTestQueue(t)
	dir := t.TempDir()
	curly, bom := filepath.Join(dir, "curly.txt"), filepath.Join(dir, "bom.txt")
	for p, s := range map[string]string{curly: "say “bye”\nx\n", bom: "\ufeffONE\ntwo\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	feed(t, q, dir, promptLine("S", "p"))
	feed(t, q, dir, editLine("S", "p", curly, "say “hi”\nx\n", `say "hi"`, `say "bye"`))
	feed(t, q, dir, editLine("S", "p", bom, "\ufeffone\ntwo\n", "one", "ONE"))
	ctx := context.Background()
	tests := []struct {
		name string
		path string
		cur  []string // the buffer
		want []Edit
	}{
		{"oldString not in the file as it was", curly, []string{"say “bye”", "x"}, []Edit{{Start: 0, End: 1, Lines: []string{"say “hi”"}}}},
		{"a BOM", bom, []string{"ONE", "two"}, []Edit{{Start: 0, End: 1, Lines: []string{"one"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := q.handleRevertFile(ctx, revertRef{ref: ref{Session: "S", Path: tt.path}, Lines: tt.cur})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.(RevertFile).Edits; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("edits %+v, want %+v", got, tt.want)
			}
			b, err := q.handleBaseline(ctx, ref{Session: "S", Path: tt.path})
			if err != nil {
				t.Fatal(err)
			}
			if l := b.(Baseline).Lines; strings.HasPrefix(l[0], "\ufeff") {
				t.Fatalf("the baseline's line 1 holds the BOM: %q", l[0])
			}
		})
	}
}

// A listed file that cannot be read now (here a directory in its place)
// is listed as unreadable: before, the whole list failed on it and
// :ClaudeReview showed nothing at all.
func TestQueueListsAnUnreadableFile(t *testing.T) {
	q := newTestQueue(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	if err := os.WriteFile(a, []byte("A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	feed(t, q, dir, promptLine("S", "p"))
	feed(t, q, dir, editLine("S", "p", a, "a\n", "a", "A"))
	feed(t, q, dir, createLine("S", "p", b, "b\n"))
	got := list(t, q, "turn")
	if it := got["a.txt@S"]; it.Status != "modified" || it.Added != 1 || it.Removed != 1 {
		t.Errorf("a.txt: %+v", it)
	}
	if it := got["b.txt@S"]; it.Status != "unreadable" {
		t.Errorf("b.txt (a directory now): %+v, want unreadable", it)
	}
}

// A session file new to the queue that begins with records copied from
// an older session (a fork or a resume: the CLI copies them with their
// own times, without their prompt ids) lists only what happens after the
// queue started: the copied writes are history, not the current turn's.
func TestQueueCopiedHistoryIsHistory(t *testing.T) {
	q := newTestQueue(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for p, s := range map[string]string{a: "A\n", b: "B\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func(line string, at time.Time, dropPrompt bool) []byte {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		m["timestamp"] = at.UTC().Format(time.RFC3339Nano)
		if dropPrompt {
			delete(m, "promptId")
		}
		out, _ := json.Marshal(m)
		return out
	}
	yesterday, now := time.Now().Add(-24*time.Hour), time.Now()
	for _, l := range [][]byte{
		stamp(promptLine("F", "old"), yesterday, true),
		stamp(editLine("F", "old", a, "a\n", "a", "A"), yesterday, true),
		stamp(promptLine("F", "p1"), now, false),
		stamp(editLine("F", "p1", b, "b\n", "b", "B"), now, false),
	} {
		feed(t, q, dir, string(l))
	}
	for _, scope := range []string{"turn", "session"} {
		got := list(t, q, scope)
		if _, ok := got["b.txt@F"]; len(got) != 1 || !ok {
			t.Errorf("%s: listed %v, want b.txt alone", scope, got)
		}
	}
}

// A fork made while the queue runs: the fork's file copies the parent's
// records, uuids and times kept, under the fork's first prompt id (as CLI
// 2.1.331 does, TestChatCLIReviewQueueFork). The copies are not the
// fork's writes.
func TestQueueForkCopiesAreNotWrites(t *testing.T) {
	q := newTestQueue(t)
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withUUID := func(line, uuid string) []byte {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		m["uuid"] = uuid
		out, _ := json.Marshal(m)
		return out
	}
	for _, l := range [][]byte{
		withUUID(promptLine("P", "p1"), "u1"),
		withUUID(editLine("P", "p1", a, "a\n", "a", "A"), "u2"),
		// the fork: the copies under its first prompt's id, then that prompt
		withUUID(promptLine("F", "f1"), "u1"),
		withUUID(editLine("F", "f1", a, "a\n", "a", "A"), "u2"),
		withUUID(promptLine("F", "f1"), "u3"),
	} {
		feed(t, q, dir, string(l))
	}
	for _, scope := range []string{"turn", "session"} {
		got := list(t, q, scope)
		if _, ok := got["a.txt@P"]; len(got) != 1 || !ok {
			t.Errorf("%s: listed %v, want a.txt of the parent session alone", scope, got)
		}
	}
}

// reviewOptions are host options carrying r as setup()'s review table.
func reviewOptions(t *testing.T, r Options) host.Options {
	t.Helper()
	o, err := host.OptionsOf(map[string]any{"review": r})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// testWorkspace is q's workspace as the lifecycle changes it (the cwd, the
// deny-list); the feature itself sees it read-only.
func testWorkspace(q *Queue) *workspace.Workspace {
	return q.h.Workspace().(*workspace.Workspace)
}

// A long session keeps one entry per file for its earlier turns, however
// many turns wrote it: the session scope lists the same (the first
// baseline, the last result; reviewed only if every turn's was), and the
// queue's memory does not grow with the transcript.
func TestQueueEarlierTurnsMerge(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	q := newTestQueue(t)
	text := "0\n"
	for i := 1; i <= 50; i++ {
		turn := "p" + itoa(i)
		next := itoa(i) + "\n"
		lines := []string{promptLine("S1", turn), editLine("S1", turn, a, text, strings.TrimSuffix(text, "\n"), strings.TrimSuffix(next, "\n"))}
		if i == 3 {
			lines = append(lines, createLine("S1", turn, b, "new\n"))
		}
		feed(t, q, dir, lines...)
		text = next
	}
	if err := os.WriteFile(a, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	n := len(q.entries)
	q.mu.Unlock()
	if n != 3 { // a's earlier turns, b's, a's current turn
		t.Fatalf("%d entries kept after 50 turns, want 3", n)
	}
	got := list(t, q, "session")
	if it := got["a.txt@S1"]; it.Status != "modified" || it.Added != 1 || it.Removed != 1 {
		t.Fatalf("a.txt in the session scope: %+v (want 0 → 50, +1 -1)", it)
	}
	if it := got["b.txt@S1"]; it.Status != "new" {
		t.Fatalf("b.txt in the session scope: %+v", it)
	}
	base, _, _, err := q.texts(ref{Scope: "session", Session: "S1", Path: a})
	if err != nil || strings.Join(base, "\n") != "0" {
		t.Fatalf("a.txt's session baseline %q, %v; want the first turn's", base, err)
	}
	if turn := list(t, q, "turn"); len(turn) != 1 || turn["a.txt@S1"].Added != 1 {
		t.Fatalf("the turn scope: %v", turn)
	}
}
