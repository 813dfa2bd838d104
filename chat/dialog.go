package chat

import (
	"encoding/json"
	"fmt"
)

// The CLI (2.1.332) can ask its host to render a dialog with a
// request_user_dialog control request, but only for the kinds the host
// declared in initialize.supportedDialogKinds: the CLI treats absence as
// "cannot display" and falls back to its no-dialog behaviour. A kind that
// was not declared must never be answered (an error answer is discarded
// and the dialog stays pending; {behavior:"cancelled"} is a real
// settlement, read as the user dismissing it). The chat does not render
// any kind yet, so it declares none and answers none.

// dialogRequest is a request_user_dialog control request as the CLI's
// schema defines it: dialog_kind, an opaque per-kind payload and an
// optional tool_use_id.
type dialogRequest struct {
	Subtype    string          `json:"subtype"`
	DialogKind string          `json:"dialog_kind"`
	Payload    json.RawMessage `json:"payload"`
	ToolUseID  string          `json:"tool_use_id"`
}

// DialogOption is one choice of an options dialog such as
// auto_mode_outside_reads: the value is what the answer carries, the
// label what the user reads.
type DialogOption struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// dialogResults are the results the CLI's schema accepts per kind
// (besides "cancelled", which only a real dismissal may send).
var dialogResults = map[string][]string{
	"auto_mode_outside_reads":   {"allow", "block", "ask_again", "allow_once"},
	"auto_mode_server_fallback": {"continue", "interrupt"},
	"refusal_fallback_prompt":   {"retry_fallback", "edit_prompt"},
}

// UndeclaredDialogEvent reports a request_user_dialog of a kind the chat
// did not declare. It is left unanswered, as the CLI's protocol requires;
// the host only logs it.
type UndeclaredDialogEvent struct {
	RequestID string
	Kind      string
}

// dialogAnswer builds the control_response body that settles a dialog
// with the user's choice: {behavior:"completed", result:<value>}. It
// refuses a result the kind's schema does not accept, so a bad value
// never reaches the CLI (which would reject it and keep the dialog open).
func dialogAnswer(kind, result string) (map[string]any, error) {
	ok := false
	for _, v := range dialogResults[kind] {
		if v == result {
			ok = true
		}
	}
	if !ok {
		return nil, fmt.Errorf("dialog %q: result %q is not one the CLI accepts", kind, result)
	}
	return map[string]any{"behavior": "completed", "result": result}, nil
}
func (UndeclaredDialogEvent) isEvent() {}
