package chat

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
