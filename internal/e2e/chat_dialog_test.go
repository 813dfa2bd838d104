//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CLI's dialogs in the chat. The CLI raises one only on server-side
// conditions the fake Messages API cannot stand for (a refusal that the
// API answers with a fallback model; auto mode's classifier service), so
// here the CLI is a script that speaks its side of the stream-json control
// protocol exactly as the CLI's schema defines it (chat's
// TestDialogSchemaOfCLI pins that schema against the real binary): it
// answers initialize, asks for a refusal_fallback_prompt when it gets a
// user message, and logs every line the host writes.
const dialogFakeCLI = `#!/bin/sh
log="$DIALOG_LOG"
rid() { printf '%s' "$1" | sed -n 's/.*"request_id":"\([^"]*\)".*/\1/p'; }
n=0
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$log"
  case "$line" in
  *'"subtype":"initialize"'*)
    printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{"models":[{"value":"default","displayName":"Default"}],"commands":[],"pid":%d}}}\n' "$(rid "$line")" $$
    printf '{"type":"system","subtype":"init","session_id":"5b1f3e52-7d1c-4a53-9d55-1f0a2b3c4d5e","model":"m","permissionMode":"default","cwd":"%s","tools":[]}\n' "$PWD" ;;
  *'"type":"control_request"'*)
    printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$(rid "$line")" ;;
  *'"type":"user"'*)
    n=$((n + 1))
    printf '{"type":"control_request","request_id":"dlg%d","request":{"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{"originalModel":"claude-fable\\u001b[31m","fallbackModel":"claude-opus-4-8","apiRefusalCategory":"cyber"}}}\n' $n ;;
  *'"type":"control_response"'*)
    printf '{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"5b1f3e52-7d1c-4a53-9d55-1f0a2b3c4d5e","total_cost_usd":0,"duration_ms":1,"num_turns":1}\n' ;;
  esac
done
`

// A refusal's dialog shows in the transcript with the CLI's choices (the
// model name made displayable), is answered from it with the allow key
// and the choice picked, and the answer the CLI reads is its schema's;
// "edit the prompt" gives the refused prompt back; the deny key dismisses
// a dialog ({behavior:"cancelled"}).
func TestChatDialogRefusalFallback(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "claude")
	if err := os.WriteFile(fake, []byte(dialogFakeCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "host-lines")
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := startChatWith(t, project, fake, map[string]string{"DIALOG_LOG": logFile}, "")
	id := "1"
	hostLines := func() string {
		b, _ := os.ReadFile(logFile)
		return string(b)
	}

	s.send(t, id, "the refused prompt")
	s.waitPermission(t, id, 1)
	s.waitTranscript(t, id, "1. Retry this prompt with claude-opus-4-8")
	tr := s.transcript(t, id)
	if !strings.Contains(tr, "⚠ Claude asks: claude-fable") || strings.Contains(tr, "\x1b") || !strings.Contains(tr, "2. Edit the prompt") {
		t.Fatalf("the dialog reads:\n%s", tr)
	}
	if init := strings.SplitN(hostLines(), "\n", 2)[0]; !strings.Contains(init, `"supportedDialogKinds":["refusal_fallback_prompt","auto_mode_outside_reads","auto_mode_server_fallback"]`) {
		t.Fatalf("initialize declared no dialog kinds: %s", init)
	}

	// The user has not typed another prompt: "edit" gives the refused
	// one back.
	s.focus(t, id, "t")
	s.feed(t, "]p")
	s.Exec(t, `table.insert(_G.selects, "Edit the prompt")`)
	s.feed(t, "a")
	s.waitTranscript(t, id, "✓ Edit the prompt")
	s.waitTurns(t, 1)
	if l := hostLines(); !strings.Contains(l, `"request_id":"dlg1","response":{"behavior":"completed","result":"edit_prompt"}`) {
		t.Fatalf("the CLI read no edit_prompt answer:\n%s", l)
	}
	var prompt string
	s.Eval(t, `return require("claude.chat.prompt").text(require("claude.chat").get(...))`, &prompt, id)
	if prompt != "the refused prompt" {
		t.Fatalf("the prompt holds %q, want the refused one back", prompt)
	}

	// The deny key dismisses the next one.
	s.send(t, id, "again")
	s.waitPermission(t, id, 2)
	s.focus(t, id, "t")
	s.feed(t, "]p")
	s.feed(t, "d")
	s.waitTranscript(t, id, "✗ dismissed")
	s.WaitFor(t, 10*time.Second, `#require("claude.chat").get(`+jsonOf(id)+`).pending == 0`, "", "no prompt waiting")
	// the script logs the answer before it ends the turn: once the turn
	// ends, the log holds it (Lua drops the prompt as it sends, sooner)
	s.waitTurns(t, 2)
	if l := hostLines(); !strings.Contains(l, `"request_id":"dlg2","response":{"behavior":"cancelled"}`) {
		t.Fatalf("the CLI read no dismissal:\n%s", l)
	}
}
