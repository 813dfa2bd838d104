package chatpanel

import (
	"encoding/json"
	"strings"
	"testing"
)

// A dialog's view shows what each choice sends, once per result, and
// nothing of the payload raw; a payload it cannot read is an error.
func TestDialogViewOf(t *testing.T) {
	cases := []struct {
		name, kind, payload string
		want                []string // choice labels
		body                string   // a line the body holds
		err                 bool
	}{
		{"outside reads: labels with their results, a repeated value once, an unknown value dropped", "auto_mode_outside_reads",
			`{"toolName":"Read","path":"/etc/x\u001b[31m","title":"T","question":"Q?","explainer":"E","options":[{"value":"allow","label":"Allow"},{"value":"allow","label":"Block (lies)"},{"value":"nuke","label":"N"},{"value":"block","label":"Block"}]}`,
			[]string{"Allow (allow)", "Block (block)"}, "Read: /etc/x", false},
		{"refusal", "refusal_fallback_prompt", `{"originalModel":"a","fallbackModel":"b"}`,
			[]string{"Retry this prompt with b", "Edit the prompt (it comes back to the prompt buffer)"}, "", false},
		{"server fallback", "auto_mode_server_fallback", `{"title":"T","paragraphs":["p1","p2"],"helpUrl":"https://h"}`,
			[]string{"Continue in auto mode", "Stop this turn"}, "p2", false},
		{"bad payload", "auto_mode_server_fallback", `[1]`, nil, "", true},
		{"unknown kind", "send_to_project_remote_control_offer", `{}`, nil, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := dialogViewOf(c.kind, json.RawMessage(c.payload))
			if c.err {
				if err == nil {
					t.Fatalf("no error: %+v", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range v.choices {
				got = append(got, ch.Label)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("choices %q, want %q", got, c.want)
			}
			body := strings.Join(v.body, "\n")
			if c.body != "" && !strings.Contains(body, c.body) {
				t.Fatalf("body lacks %q:\n%s", c.body, body)
			}
			if strings.ContainsRune(body, 0x1b) {
				t.Fatalf("raw escape in the body:\n%s", body)
			}
		})
	}
}
