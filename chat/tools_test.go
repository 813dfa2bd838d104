package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestProposedText(t *testing.T) {
	tests := []struct {
		name, tool, input, current, want string
		noMatch                          bool
	}{
		{"edit once", "Edit", `{"file_path":"/f","old_string":"b","new_string":"B"}`, "a\nb\nc\n", "a\nB\nc\n", false},
		{"edit not found", "Edit", `{"file_path":"/f","old_string":"x","new_string":"X"}`, "a\n", "", true},
		{"edit not unique", "Edit", `{"file_path":"/f","old_string":"a","new_string":"A"}`, "a a\n", "", true},
		{"edit replace_all", "Edit", `{"file_path":"/f","old_string":"a","new_string":"A","replace_all":true}`, "a a\n", "A A\n", false},
		{"edit creates", "Edit", `{"file_path":"/f","old_string":"","new_string":"new\n"}`, "", "new\n", false},
		{"edit empty old on text", "Edit", `{"file_path":"/f","old_string":"","new_string":"x"}`, "a", "", true},
		{"write", "Write", `{"file_path":"/f","content":"all new"}`, "old", "all new", false},
		{"multiedit in order", "MultiEdit", `{"file_path":"/f","edits":[{"old_string":"a","new_string":"b"},{"old_string":"b\n","new_string":"c\n"}]}`, "a\n", "c\n", false},
		{"multiedit fails", "MultiEdit", `{"file_path":"/f","edits":[{"old_string":"z","new_string":"b"}]}`, "a\n", "", true},
		{"not an edit", "Bash", `{"command":"ls"}`, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProposedText(tt.tool, json.RawMessage(tt.input), tt.current)
			if tt.noMatch {
				if !errors.Is(err, ErrNoMatch) {
					t.Errorf("err = %v, want ErrNoMatch", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEditedInput(t *testing.T) {
	tests := []struct {
		tool, input, want string
	}{
		{"Edit", `{"file_path":"/f","old_string":"b","new_string":"B","replace_all":true}`,
			`{"file_path":"/f","new_string":"MINE","old_string":"cur","replace_all":false}`},
		{"Write", `{"file_path":"/f","content":"theirs"}`, `{"content":"MINE","file_path":"/f"}`},
		{"MultiEdit", `{"file_path":"/f","edits":[{"old_string":"a","new_string":"b"}]}`,
			`{"edits":[{"new_string":"MINE","old_string":"cur","replace_all":false}],"file_path":"/f"}`},
	}
	for _, tt := range tests {
		got, err := EditedInput(tt.tool, json.RawMessage(tt.input), "cur", "MINE")
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %s, %v; want %s", tt.tool, got, err, tt.want)
		}
		// Applying the edited input to the current text gives the user's.
		if text, err := ProposedText(tt.tool, got, "cur"); err != nil || text != "MINE" {
			t.Errorf("%s: applying the edited input gives %q, %v", tt.tool, text, err)
		}
	}
	if _, err := EditedInput("Bash", json.RawMessage(`{}`), "", ""); err == nil {
		t.Errorf("Bash input was edited")
	}
	if _, err := EditedInput("Edit", json.RawMessage(`[]`), "", ""); err == nil {
		t.Errorf("a non-object input was edited")
	}
}

func TestAlwaysAllow(t *testing.T) {
	bashSugg := json.RawMessage(`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch x"}],"behavior":"allow","destination":"localSettings"},{"type":"setMode","mode":"acceptEdits","destination":"session"}]`)
	tests := []struct {
		tool  string
		sugg  json.RawMessage
		scope string
		want  string
	}{
		{"Edit", nil, "session", `[{"type":"addRules","rules":[{"toolName":"Edit"}],"behavior":"allow","destination":"session"}]`},
		{"Write", nil, "project", `[{"type":"addRules","rules":[{"toolName":"Write"}],"behavior":"allow","destination":"localSettings"}]`},
		{"Bash", bashSugg, "user", `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch x"}],"behavior":"allow","destination":"userSettings"}]`},
		// No suggestion: exactly this command, never every command.
		{"Bash", nil, "session", `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm -rf build"}],"behavior":"allow","destination":"session"}]`},
		{"Bash", json.RawMessage(`[{"type":"addDirectories","directories":["/x"],"destination":"session"}]`), "project",
			`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm -rf build"}],"behavior":"allow","destination":"localSettings"}]`},
		// A compound command: every suggested rule.
		{"Bash", json.RawMessage(`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"cd a:*"},{"toolName":"Bash","ruleContent":"make:*"}],"behavior":"allow","destination":"localSettings"}]`), "session",
			`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"cd a:*"},{"toolName":"Bash","ruleContent":"make:*"}],"behavior":"allow","destination":"session"}]`},
		{"WebFetch", nil, "session", `[{"type":"addRules","rules":[{"toolName":"WebFetch"}],"behavior":"allow","destination":"session"}]`},
	}
	for _, tt := range tests {
		got, err := AlwaysAllow(tt.tool, json.RawMessage(`{"command":"rm -rf build"}`), tt.sugg, tt.scope)
		raw, _ := json.Marshal(got)
		if err != nil || string(raw) != tt.want {
			t.Errorf("%s/%s = %s, %v; want %s", tt.tool, tt.scope, raw, err, tt.want)
		}
	}
	if _, err := AlwaysAllow("Bash", json.RawMessage(`{}`), nil, "session"); err == nil {
		t.Errorf("a Bash call without a command got an allow-always rule")
	}
	if _, err := AlwaysAllow("Edit", nil, nil, "forever"); err == nil {
		t.Errorf("an unknown scope was accepted")
	}
}

func TestSummaries(t *testing.T) {
	tests := []struct{ tool, input, want string }{
		{"Edit", `{"file_path":"/w/lua/x.lua"}`, "Edit lua/x.lua"},
		{"Bash", `{"command":"make test"}`, "Bash: make test"},
		{"Bash", `{"command":"make test\nmore"}`, "Bash: make test … more (2 lines)"},
		{"Bash", `{"command":"cat README.md\n\n\n\ncurl x | sh\n"}`, "Bash: cat README.md … curl x | sh (5 lines)"},
		{"Grep", `{"pattern":"foo"}`, `Grep "foo"`},
		{"TodoWrite", `{"todos":[{"content":"a","status":"pending","activeForm":"A"}]}`, "TodoWrite (1 items)"},
		{"mcp__x__y", `{}`, "mcp__x__y"},
	}
	for _, tt := range tests {
		if got := RelSummary(tt.tool, json.RawMessage(tt.input), "/w"); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.tool, got, tt.want)
		}
	}
	if got := ProjectSlug("/tmp/sjrun/sessions/ws_1.x"); got != "-tmp-sjrun-sessions-ws-1-x" {
		t.Errorf("slug %q", got)
	}
	if got := ConfigDir([]string{"HOME=/h", "CLAUDE_CONFIG_DIR=/c"}); got != "/c" {
		t.Errorf("ConfigDir %q", got)
	}
	if got := ConfigDir([]string{"HOME=/h"}); got != "/h/.claude" {
		t.Errorf("ConfigDir %q", got)
	}
}

// Transcripts as the CLI writes them (entries cut down): titles, first
// prompts, message counts, order, and the history of one.
func TestListSessionsAndHistory(t *testing.T) {
	cfg, cwd := t.TempDir(), "/work/proj"
	dir := filepath.Join(cfg, "projects", ProjectSlug(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(id string, age time.Duration, lines ...string) {
		p := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	user := func(uuid, text string) string {
		return `{"type":"user","uuid":"` + uuid + `","message":{"role":"user","content":[{"type":"text","text":` + strings.TrimSpace(mustQuote(text)) + `}]}}`
	}
	write("old", time.Hour,
		`{"type":"queue-operation","operation":"enqueue"}`,
		user("u1", "first question\nwith detail"),
		`{"type":"assistant","uuid":"a1","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Let me look."}]}}`,
		`{"type":"assistant","uuid":"a2","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/work/proj/a.go"}}]}}`,
		`{"type":"user","uuid":"r1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"…"}]}}`,
		`{"type":"assistant","uuid":"a3","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"It is fine."}]}}`,
		`{"type":"user","uuid":"m1","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>"}}`,
		`{"type":"summary","summary":"Checking a.go"}`,
		`not json (a torn line)`,
	)
	write("new", time.Minute,
		user("u2", "second session"),
		`{"type":"assistant","uuid":"b1","message":{"id":"msg_3","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`,
		`{"type":"custom-title","customTitle":"My title","sessionId":"new"}`,
	)
	write("empty", 0, `{"type":"queue-operation","operation":"enqueue"}`)
	list, err := ListSessions(cfg, cwd)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(list)
	want := `[{"session_id":"new","title":"My title","first_prompt":"second session","modified":%d,"messages":2},` +
		`{"session_id":"old","title":"Checking a.go","first_prompt":"first question","modified":%d,"messages":3}]`
	if len(list) != 2 || string(got) != sprintf(want, list[0].Modified, list[1].Modified) {
		t.Errorf("sessions = %s", got)
	}
	hist, err := ReadHistory(cfg, cwd, "old")
	if err != nil {
		t.Fatal(err)
	}
	got, _ = json.Marshal(hist)
	if string(got) != `[{"role":"user","text":"first question\nwith detail","uuid":"u1"},{"role":"assistant","text":"Let me look.","uuid":"a1","tools":["Read /work/proj/a.go"]},{"role":"assistant","text":"It is fine.","uuid":"a3"}]` {
		t.Errorf("history = %s", got)
	}
	if _, err := ReadHistory(cfg, cwd, "../../etc/passwd"); err == nil {
		t.Errorf("a path as session id was read")
	}
	if l, err := ListSessions(cfg, "/nowhere"); err != nil || len(l) != 0 {
		t.Errorf("no project: %v, %v", l, err)
	}
}

// Prompts and answers are read whatever the JSON's spacing and whether
// the content is a string or blocks; other entries are skipped unread.
func TestHistoryContentForms(t *testing.T) {
	cfg, cwd := t.TempDir(), "/work/proj"
	p := TranscriptPath(cfg, cwd, "forms")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"type":"api-request","params":{"model":"x"}}`,
		`{ "type" : "user", "uuid" : "u1", "message" : { "role" : "user", "content" : "a plain string prompt" } }`,
		`{"type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant", "content":  [ {"type": "text", "text": "spaced blocks"} ]}}`,
		`{"type":"assistant","uuid":"a2","message":{"id":"m2","role":"assistant","content":{"not":"a list"}}}`,
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hist, err := ReadHistory(cfg, cwd, "forms")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(hist)
	if string(got) != `[{"role":"user","text":"a plain string prompt","uuid":"u1"},{"role":"assistant","text":"spaced blocks","uuid":"a1"},{"role":"assistant","text":"","uuid":"a2"}]` {
		t.Errorf("history = %s", got)
	}
	if messageLine([]byte(lines[0])) || !messageLine([]byte(lines[1])) || !messageLine([]byte(lines[2])) {
		t.Errorf("messageLine does not tell the entries apart")
	}
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// The project directory name matches the CLI's JavaScript: one "-" per
// UTF-16 code unit, and long names cut to 200 plus a hash suffix.
func TestProjectDir(t *testing.T) {
	slugs := []struct{ cwd, want string }{
		{"/tmp/sjrun/sessions/ws_1.x", "-tmp-sjrun-sessions-ws-1-x"},
		{"/home/josé/p", "-home-jos--p"}, // é: one code unit
		{"/w/😀x", "-w---x"},              // astral: a surrogate pair
		{"/w/日本", "-w---"},               // BMP: one each
		{"/w/a b\x00", "-w-a-b-"},
	}
	for _, tt := range slugs {
		if got := ProjectSlug(tt.cwd); got != tt.want {
			t.Errorf("ProjectSlug(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	cfg := t.TempDir()
	short := "/work/p"
	if got := ProjectDir(cfg, short); got != filepath.Join(cfg, "projects", "-work-p") {
		t.Errorf("short: %s", got)
	}
	long := "/" + strings.Repeat("a", 150) + "/" + strings.Repeat("b", 100)
	other := long[:len(long)-1] + "c" // the same first 200
	prefix := ProjectSlug(long)[:200]
	if got := ProjectDir(cfg, long); got != filepath.Join(cfg, "projects", prefix) {
		t.Errorf("none yet: %s", got)
	}
	mk := func(name, cwd string) string {
		d := filepath.Join(cfg, "projects", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		line := `{"type":"user","cwd":` + strconv.Quote(cwd) + `,"uuid":"u1","message":{"role":"user","content":"hi"}}` + "\n"
		if err := os.WriteFile(filepath.Join(d, "s.jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := mk(prefix+"-1k2j3h", other)
	if got := ProjectDir(cfg, long); got != filepath.Join(cfg, "projects", prefix) {
		t.Errorf("only another cwd's directory: %s", got)
	}
	b := mk(prefix+"-zz9", long)
	mk(prefix+"-x-y", long) // not a hash suffix
	if got := ProjectDir(cfg, long); got != b {
		t.Errorf("long: %s, want %s", got, b)
	}
	if got := ProjectDir(cfg, other); got != a {
		t.Errorf("other: %s, want %s", got, a)
	}
	if got := TranscriptPath(cfg, long, "s"); got != filepath.Join(b, "s.jsonl") {
		t.Errorf("TranscriptPath = %s", got)
	}
}
