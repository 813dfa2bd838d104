//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/internal/bench/chatwire"
)

// The test binary doubles as the stand-in (for chat.Start) when
// STANDIN_AS_CLI=1.
func TestMain(m *testing.M) {
	if os.Getenv("STANDIN_AS_CLI") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}

// shape is a JSON value's structure: the keys of objects (recursively),
// the shape of an array's first element, the kind of anything else.
func shape(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + shape(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		return "[" + shape(x[0]) + "]"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", x)
	}
}

func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, line)
	}
	return m
}

// recordedTurn is the recording's first turn (the lines the stand-in
// replays), decoded.
func recordedTurn(t *testing.T) []map[string]any {
	t.Helper()
	sc, err := parseRecording(recording)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range sc.turn {
		out = append(out, decode(t, l.raw))
	}
	return out
}

// TestReplayShapes: the stand-in's turn is the recorded one line by line —
// same order, same keys at every depth — with the recorded deltas replaced
// by the asked-for number, and the new text everywhere the old one was.
func TestReplayShapes(t *testing.T) {
	ask := chatwire.Ask{N: 450, Rate: 20000, Seq: 7}
	host := uuid.NewString()
	in := strings.Join([]string{
		`{"type":"control_request","request_id":"h1","request":{"subtype":"initialize"}}`,
		`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":` + jsonString(ask.Prompt()) + `}]},"parent_tool_use_id":null,"uuid":"` + host + `"}`,
	}, "\n") + "\n"
	logPath := filepath.Join(t.TempDir(), "log")
	var out, errb strings.Builder
	env := map[string]string{chatwire.LogEnv: logPath, "CLAUDE_CONFIG_DIR": "/cfg", "HOME": "/home"}
	if code := run([]string{"--resume", "sess-1"}, strings.NewReader(in), &out, &errb, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	init := decode(t, lines[0])
	if r, _ := init["response"].(map[string]any); r == nil || r["request_id"] != "h1" {
		t.Fatalf("initialize answer: %.200s", lines[0])
	}
	rec := recordedTurn(t)
	got := lines[1:]
	// Expand the recorded deltas to ask.N.
	var want []map[string]any
	for _, r := range rec {
		if ev, _ := r["event"].(map[string]any); ev != nil && ev["type"] == "content_block_delta" {
			if len(want) > 0 && isDelta(want[len(want)-1]) {
				continue
			}
			for i := 0; i < ask.N; i++ {
				want = append(want, r)
			}
			continue
		}
		want = append(want, r)
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	var text strings.Builder
	seen := map[string]bool{}
	for i, l := range got {
		g := decode(t, l)
		if shape(g) != shape(want[i]) {
			t.Errorf("line %d: shape\n%s\nwant (recorded)\n%s", i, shape(g), shape(want[i]))
		}
		if g["session_id"] != nil && g["session_id"] != "sess-1" {
			t.Errorf("line %d: session_id %v", i, g["session_id"])
		}
		if u, _ := g["uuid"].(string); u != "" {
			if seen[u] {
				t.Errorf("line %d: uuid %s used twice", i, u)
			}
			seen[u] = true
		}
		if g["type"] == "command_lifecycle" && g["command_uuid"] != host {
			t.Errorf("line %d: command_uuid %v, want %s", i, g["command_uuid"], host)
		}
		if isDelta(g) {
			text.WriteString(g["event"].(map[string]any)["delta"].(map[string]any)["text"].(string))
		}
		switch g["type"] {
		case "assistant":
			c := g["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
			if c["text"] != ask.Text() {
				t.Errorf("assistant text differs from the answer")
			}
		case "result":
			if g["result"] != ask.Text() {
				t.Errorf("result text differs from the answer")
			}
		}
		if strings.Contains(l, "$CWD") || strings.Contains(l, "$CONFIG") || strings.Contains(l, "$HOME") {
			t.Errorf("line %d keeps a placeholder: %.200s", i, l)
		}
	}
	if text.String() != ask.Text() {
		t.Errorf("the deltas make %q…, want %q…", first(text.String(), 80), first(ask.Text(), 80))
	}
	lg, err := chatwire.FindLog(logPath, ask.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Written) != ask.N {
		t.Errorf("log: %d times, want %d", len(lg.Written), ask.N)
	}
	for i := 1; i < len(lg.Written); i++ {
		if lg.Written[i] < lg.Written[i-1] {
			t.Errorf("log: time %d before time %d", i, i-1)
		}
	}
}

func isDelta(m map[string]any) bool {
	ev, _ := m["event"].(map[string]any)
	if ev == nil || ev["type"] != "content_block_delta" {
		return false
	}
	d, _ := ev["delta"].(map[string]any)
	return d != nil && d["type"] == "text_delta"
}

func first(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TestWithChatSession: chatpanel's client (package chat) runs the stand-in
// as it would the CLI and reads the answer whole, twice.
func TestWithChatSession(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	evs := make(chan chat.Event, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := chat.Start(ctx, chat.Options{
		Bin: self, Cwd: t.TempDir(), Mode: "default",
		Env:     append(os.Environ(), "STANDIN_AS_CLI=1"),
		OnEvent: func(ev chat.Event) { evs <- ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Kill()
		<-s.Done()
	}()
	if len(s.Init().Models) == 0 || len(s.Init().Commands) == 0 {
		t.Errorf("initialize: %d models, %d commands", len(s.Init().Models), len(s.Init().Commands))
	}
	for turn, ask := range []chatwire.Ask{{N: 300, Rate: 5000, Seq: 0}, {N: 40, Rate: 2000, Seq: 300}} {
		if err := s.Send(ctx, uuid.NewString(), []chat.ContentBlock{{Type: "text", Text: ask.Prompt()}}); err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for done := false; !done; {
			select {
			case ev := <-evs:
				switch e := ev.(type) {
				case chat.DeltaEvent:
					text.WriteString(e.Text)
				case chat.ResultEvent:
					if e.IsError || e.Result != ask.Text() {
						t.Errorf("turn %d: result %+v", turn, e)
					}
					done = true
				case chat.ExitEvent:
					t.Fatalf("exited: %+v", e)
				}
			case <-ctx.Done():
				t.Fatal("no result")
			}
		}
		if text.String() != ask.Text() {
			t.Errorf("turn %d: streamed text differs", turn)
		}
	}
	if s.SessionID() == "" {
		t.Error("no session id")
	}
	if err := s.Close(ctx); err != nil {
		t.Error(err)
	}
}
