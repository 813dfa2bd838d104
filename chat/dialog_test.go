package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDialogAnswerShape(t *testing.T) {
	cases := []struct {
		kind, result string
		want         string // JSON, "" = refused
	}{
		{"auto_mode_outside_reads", "allow", `{"behavior":"completed","result":"allow"}`},
		{"auto_mode_outside_reads", "allow_once", `{"behavior":"completed","result":"allow_once"}`},
		{"auto_mode_server_fallback", "interrupt", `{"behavior":"completed","result":"interrupt"}`},
		{"refusal_fallback_prompt", "edit_prompt", `{"behavior":"completed","result":"edit_prompt"}`},
		// a fake dismissal is never built, nor a value of another kind
		{"auto_mode_outside_reads", "cancelled", ""},
		{"auto_mode_server_fallback", "allow", ""},
		{"send_to_project_remote_control_offer", "declined", ""},
	}
	for _, c := range cases {
		got, err := dialogAnswer(c.kind, c.result)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s/%s: answered %v, want refused", c.kind, c.result, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s/%s: %v", c.kind, c.result, err)
		}
		b, _ := json.Marshal(got)
		if string(b) != c.want {
			t.Errorf("%s/%s: %s, want %s", c.kind, c.result, b, c.want)
		}
	}
}

// TestDialogSchemaOfCLI pins the request and answer shapes to the CLI's
// own zod schema text, so a CLI that changes them fails here.
func TestDialogSchemaOfCLI(t *testing.T) {
	bin := os.Getenv("CLAUDE_BIN")
	if bin == "" {
		t.Skip("CLAUDE_BIN not set")
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`supportedDialogKinds:O(r()).optional()`,
		`subtype:P("request_user_dialog"),dialog_kind:r()`,
		`behavior:U(["completed","cancelled"]),result:de().optional()`,
		`kind:"auto_mode_outside_reads",payload:p(()=>u({toolName:r(),path:r(),title:r(),question:r(),explainer:r(),options:O(u({value:U(co),label:r()}))}))`,
		`co=["allow","block","ask_again","allow_once"]`,
		`payload:p(()=>u({gatewayHost:r().optional(),title:r(),paragraphs:O(r()),helpUrl:r()})),result:p(()=>U(["continue","interrupt","cancelled"]))`,
		`result:p(()=>U(["retry_fallback","edit_prompt","cancelled"]))`,
	} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the CLI's schema no longer holds %q", want)
		}
	}
}

// fakeDialogs is the fake CLI's "dialog" mode: it writes the initialize
// request it got to $CHAT_FAKE_OUT, asks for three dialogs (a refusal
// fallback, an undeclared kind, a server fallback), copies every control
// response it reads to $CHAT_FAKE_OUT, and withdraws the server-fallback
// dialog once the refusal is answered.
func fakeDialogs(initLine []byte, in *bufio.Reader) int {
	out, err := os.OpenFile(os.Getenv("CHAT_FAKE_OUT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 2
	}
	defer out.Close()
	out.Write(initLine)
	for _, l := range []string{
		`{"type":"control_request","request_id":"d1","request":{"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{"originalModel":"claude-fable","fallbackModel":"claude-opus-4-8","apiRefusalCategory":"cyber"}}}`,
		`{"type":"control_request","request_id":"d2","request":{"subtype":"request_user_dialog","dialog_kind":"send_to_project_remote_control_offer","payload":{}}}`,
		`{"type":"control_request","request_id":"d3","request":{"subtype":"request_user_dialog","dialog_kind":"auto_mode_server_fallback","payload":{"title":"Billed","paragraphs":["p"],"helpUrl":"https://x"}}}`,
	} {
		fmt.Println(l)
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		if bytes.Contains(line, []byte(`"control_response"`)) {
			out.Write(line)
			if bytes.Contains(line, []byte(`"d1"`)) {
				fmt.Println(`{"type":"control_cancel_request","request_id":"d3"}`)
			}
		}
	}
}

// The dialog round trip against a CLI that asks for them: the declared
// kinds go out in initialize, a declared dialog comes in as a request and
// is answered once with a result of its kind, an undeclared one is
// reported and never answered, and a withdrawn one is reported withdrawn
// and can no longer be answered.
func TestDialogRoundTrip(t *testing.T) {
	outFile := filepath.Join(t.TempDir(), "out")
	s, c := startFake(t, "dialog", func(o *Options) {
		o.Env = append(o.Env, "CHAT_FAKE_OUT="+outFile)
		o.DialogKinds = RenderedDialogKinds()
	})
	d1 := c.waitN(t, 1, "the refusal dialog", func(e Event) bool {
		d, ok := e.(DialogRequestEvent)
		return ok && d.RequestID == "d1"
	}).(DialogRequestEvent)
	if d1.Kind != "refusal_fallback_prompt" || !bytes.Contains(d1.Payload, []byte(`"fallbackModel":"claude-opus-4-8"`)) {
		t.Fatalf("d1 = %+v", d1)
	}
	c.waitN(t, 1, "the undeclared dialog", func(e Event) bool {
		d, ok := e.(UndeclaredDialogEvent)
		return ok && d.RequestID == "d2" && d.Kind == "send_to_project_remote_control_offer"
	})
	c.waitN(t, 1, "the server-fallback dialog", func(e Event) bool {
		d, ok := e.(DialogRequestEvent)
		return ok && d.RequestID == "d3"
	})
	if err := s.AnswerDialog("d3", "allow"); err == nil {
		t.Fatal("a result of another kind was sent")
	}
	if err := s.AnswerDialog("d2", "declined"); err == nil {
		t.Fatal("an undeclared dialog was answered")
	}
	if err := s.AnswerDialog("d1", "retry_fallback"); err != nil {
		t.Fatal(err)
	}
	if err := s.AnswerDialog("d1", "edit_prompt"); err == nil {
		t.Fatal("a dialog was answered twice")
	}
	c.waitN(t, 1, "the withdrawal of d3", func(e Event) bool {
		d, ok := e.(DialogCancelEvent)
		return ok && d.RequestID == "d3"
	})
	if err := s.CancelDialog("d3"); err == nil {
		t.Fatal("a withdrawn dialog was settled")
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	_ = s.Close(ctx)
	got, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the CLI read %d lines, want initialize and one answer:\n%s", len(lines), got)
	}
	var init struct {
		Request struct {
			Subtype string   `json:"subtype"`
			Kinds   []string `json:"supportedDialogKinds"`
		} `json:"request"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &init); err != nil || init.Request.Subtype != "initialize" ||
		strings.Join(init.Request.Kinds, ",") != strings.Join(RenderedDialogKinds(), ",") {
		t.Fatalf("initialize = %s", lines[0])
	}
	var ans struct {
		Response struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Response  json.RawMessage `json:"response"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &ans); err != nil || ans.Response.RequestID != "d1" || ans.Response.Subtype != "success" ||
		string(ans.Response.Response) != `{"behavior":"completed","result":"retry_fallback"}` {
		t.Fatalf("answer = %s", lines[1])
	}
}

// Without declared kinds, initialize declares none and every dialog is
// undeclared (the CLI's no-dialog behaviour applies).
func TestDialogNoneDeclared(t *testing.T) {
	outFile := filepath.Join(t.TempDir(), "out")
	_, c := startFake(t, "dialog", func(o *Options) { o.Env = append(o.Env, "CHAT_FAKE_OUT="+outFile) })
	for _, id := range []string{"d1", "d2", "d3"} {
		c.waitN(t, 1, id+" undeclared", func(e Event) bool {
			d, ok := e.(UndeclaredDialogEvent)
			return ok && d.RequestID == id
		})
	}
	if n := c.count(func(e Event) bool { _, ok := e.(DialogRequestEvent); return ok }); n != 0 {
		t.Fatalf("%d dialogs offered without a declaration", n)
	}
	got, _ := os.ReadFile(outFile)
	if bytes.Contains(got, []byte("supportedDialogKinds")) {
		t.Fatalf("initialize declared kinds: %s", got)
	}
}
