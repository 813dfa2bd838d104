package fakeapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
}

// parseSSE splits a text/event-stream body into events. It fails the test
// on lines that are neither "event:", "data:" nor blank.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if cur.name != "" || cur.data != "" {
		t.Fatalf("stream ends without a blank line after event %q", cur.name)
	}
	return out
}

// assembled is what a client builds from a stream.
type assembled struct {
	blocks     []Block
	stopReason string
}

// assemble rebuilds the message from a stream the way the SDK does, checking
// the order of events and that each event's data has the event's type.
func assemble(t *testing.T, evs []sseEvent) assembled {
	t.Helper()
	var a assembled
	var partial []string
	open := -1
	for i, e := range evs {
		var d struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Message struct {
				Content []json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil {
			t.Fatalf("event %d (%s): data is not JSON: %v", i, e.name, err)
		}
		if d.Type != e.name {
			t.Fatalf("event %d: name %q but data type %q", i, e.name, d.Type)
		}
		switch e.name {
		case "message_start":
			if i != 0 || d.Message.Content == nil || len(d.Message.Content) != 0 {
				t.Fatalf("message_start must come first with content [], got %s", e.data)
			}
		case "content_block_start":
			if open != -1 || d.Index != len(a.blocks) {
				t.Fatalf("content_block_start index %d while block %d open, %d done", d.Index, open, len(a.blocks))
			}
			var b Block
			var cb struct {
				Type  string          `json:"type"`
				Text  *string         `json:"text"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(d.ContentBlock, &cb); err != nil {
				t.Fatal(err)
			}
			switch cb.Type {
			case "text":
				if cb.Text == nil || *cb.Text != "" {
					t.Fatalf("text block must start with text \"\": %s", d.ContentBlock)
				}
				b = Block{Type: "text"}
			case "tool_use":
				if string(cb.Input) != "{}" {
					t.Fatalf("tool_use block must start with input {}: %s", d.ContentBlock)
				}
				b = Block{Type: "tool_use", ID: cb.ID, Name: cb.Name}
			default:
				t.Fatalf("unknown block type %q", cb.Type)
			}
			a.blocks = append(a.blocks, b)
			open, partial = d.Index, nil
		case "content_block_delta":
			if d.Index != open {
				t.Fatalf("delta for block %d while %d is open", d.Index, open)
			}
			b := &a.blocks[open]
			switch {
			case d.Delta.Type == "text_delta" && b.Type == "text":
				b.Text += d.Delta.Text
			case d.Delta.Type == "input_json_delta" && b.Type == "tool_use":
				partial = append(partial, d.Delta.PartialJSON)
			default:
				t.Fatalf("delta %q for a %s block", d.Delta.Type, b.Type)
			}
		case "content_block_stop":
			if d.Index != open {
				t.Fatalf("stop for block %d while %d is open", d.Index, open)
			}
			if b := &a.blocks[open]; b.Type == "tool_use" {
				b.Input = json.RawMessage(strings.Join(partial, ""))
				if len(partial) == 0 {
					b.Input = json.RawMessage("{}")
				}
				if !json.Valid(b.Input) {
					t.Fatalf("tool input pieces %q do not join to JSON", partial)
				}
			}
			open = -1
		case "message_delta":
			a.stopReason = d.Delta.StopReason
		case "message_stop":
			if i != len(evs)-1 {
				t.Fatal("message_stop is not the last event")
			}
		case "ping":
		default:
			t.Fatalf("unknown event %q", e.name)
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].name != "message_stop" {
		t.Fatal("stream does not end with message_stop")
	}
	return a
}

// encode writes all events of a.
func encode(t *testing.T, a answer) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range a.events() {
		if err := writeEvent(&buf, e); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// golden compares got with testdata/name, rewriting it when env
// UPDATE_GOLDEN is set.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func goldenAnswer() answer {
	tool := Block{Type: "tool_use", ID: "toolu_01GOLDEN", Name: "Write",
		Input: json.RawMessage(`{"file_path":"/tmp/x/hello.txt","content":"héllo\n"}`)}
	return answer{
		id: "msg_01GOLDEN", model: "claude-test", inputTokens: 120, outputTokens: 17,
		blocks:     []Block{Text("I will write the file."), tool},
		stopReason: Turn{Blocks: []Block{tool}}.StopReason(),
	}
}

func TestStreamGolden(t *testing.T) {
	golden(t, "stream.golden", encode(t, goldenAnswer()))
}

func TestMessageGolden(t *testing.T) {
	got, err := json.MarshalIndent(goldenAnswer().message(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "message.golden", append(got, '\n'))
}

func TestStreamRoundTrip(t *testing.T) {
	long := strings.Repeat("αβγ ", 50)
	tests := []struct {
		name   string
		blocks []Block
	}{
		{"empty answer", nil},
		{"one text", []Block{Text("hi")}},
		{"empty text", []Block{Text("")}},
		{"multibyte text", []Block{Text(long)}},
		{"tool only", []Block{ToolUse("Read", map[string]string{"file_path": "/a/b"})}},
		{"tool with empty input", []Block{ToolUse("TaskList", struct{}{})}},
		{"text tool text", []Block{
			Text("first"),
			ToolUse("Edit", map[string]any{"file_path": "/x", "old_string": "a", "new_string": long}),
			Text("last"),
		}},
		{"two tools", []Block{
			ToolUse("Write", map[string]string{"file_path": "/x", "content": "1"}),
			ToolUse("Write", map[string]string{"file_path": "/y", "content": "2"}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := Reply(tt.blocks...)
			a := answer{id: "msg_x", model: "m", blocks: turn.Blocks, stopReason: turn.StopReason()}
			got := assemble(t, parseSSE(t, encode(t, a)))
			if got.stopReason != turn.StopReason() {
				t.Errorf("stop_reason %q, want %q", got.stopReason, turn.StopReason())
			}
			if len(got.blocks) != len(tt.blocks) {
				t.Fatalf("%d blocks, want %d", len(got.blocks), len(tt.blocks))
			}
			for i, want := range tt.blocks {
				g := got.blocks[i]
				if g.Type != want.Type || g.Text != want.Text || g.ID != want.ID || g.Name != want.Name {
					t.Errorf("block %d = %+v, want %+v", i, g, want)
				}
				if want.Type == "tool_use" && !bytes.Equal(g.Input, want.input()) {
					t.Errorf("block %d input %s, want %s", i, g.Input, want.input())
				}
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"a", 3, []string{"a"}},
		{"abc", 3, []string{"a", "b", "c"}},
		{"abcdefg", 3, []string{"abc", "de", "fg"}},
		{"ééé", 3, []string{"é", "é", "é"}},
		{"aé", 2, []string{"a", "é"}},
		{"éa", 2, []string{"é", "a"}},
		{"日本", 3, []string{"日", "本"}},
		{"abc", 1, []string{"abc"}},
	}
	for _, tt := range tests {
		got := split(tt.in, tt.n)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestTurnStopReason(t *testing.T) {
	tests := []struct {
		turn Turn
		want string
	}{
		{Reply(), "end_turn"},
		{Reply(Text("a")), "end_turn"},
		{Reply(Text("a"), ToolUse("Bash", map[string]string{"command": "ls"})), "tool_use"},
	}
	for _, tt := range tests {
		if got := tt.turn.StopReason(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.turn, got, tt.want)
		}
	}
}

func TestToolUse(t *testing.T) {
	a := ToolUse("Write", map[string]string{"file_path": "/f"})
	b := ToolUse("Write", map[string]string{"file_path": "/f"})
	if !strings.HasPrefix(a.ID, "toolu_01") || len(a.ID) != len("toolu_01")+22 {
		t.Errorf("id %q does not look like toolu_01 + 22 characters", a.ID)
	}
	if a.ID == b.ID {
		t.Errorf("two tool_use blocks share the id %q", a.ID)
	}
	if string(a.Input) != `{"file_path":"/f"}` || a.Type != "tool_use" || a.Name != "Write" {
		t.Errorf("ToolUse = %+v", a)
	}
	for _, bad := range []any{"a string", []int{1}, func() {}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ToolUse(%T) did not panic", bad)
				}
			}()
			ToolUse("X", bad)
		}()
	}
}
