package chatpanel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/display"
)

// The CLI's dialogs (request_user_dialog): a refusal that could be retried
// on a fallback model, auto mode asking about reads outside the working
// directories, auto mode's classifier falling back to billed requests.
// Each is shown in the transcript like a permission prompt (kind "dialog"):
// its text, and its choices with the CLI's own labels; the user picks one
// or dismisses it. Go builds the view and checks the answer against the
// kind's results; Lua only shows it and sends the choice back.

// dialogKinds are the kinds the chat declares (and renders).
func dialogKinds() []string { return chat.RenderedDialogKinds() }

// dialogChoice is one answer a dialog offers: what the CLI reads and what
// the user reads.
type dialogChoice struct {
	Result string `json:"result"`
	Label  string `json:"label"`
}

// dialogView is what the transcript shows of a dialog.
type dialogView struct {
	title   string
	body    []string
	choices []dialogChoice
}

const dialogLineMax = 300

// dialogViewOf renders a dialog of a declared kind. Every string of the
// payload is the CLI's (partly the API's): made displayable here.
func dialogViewOf(kind string, payload json.RawMessage) (dialogView, error) {
	lines := func(s string) []string { return display.Lines(s, dialogLineMax, 20) }
	switch kind {
	case "refusal_fallback_prompt":
		var p struct {
			OriginalModel string  `json:"originalModel"`
			FallbackModel string  `json:"fallbackModel"`
			Category      *string `json:"apiRefusalCategory"`
			GuidanceText  string  `json:"guidanceText"`
			ServedNotice  *struct {
				Text         string `json:"text"`
				LearnMoreURL string `json:"learnMoreUrl"`
			} `json:"servedNotice"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return dialogView{}, fmt.Errorf("dialog %s: bad payload: %w", kind, err)
		}
		orig, fb := display.Line(p.OriginalModel, 80), display.Line(p.FallbackModel, 80)
		v := dialogView{title: fmt.Sprintf("%s declined to answer", orig)}
		if p.Category != nil && *p.Category != "" {
			v.body = append(v.body, "Reason given: "+display.Line(*p.Category, 80))
		}
		if p.GuidanceText != "" {
			v.body = append(v.body, lines(p.GuidanceText)...)
		}
		if p.ServedNotice != nil && p.ServedNotice.Text != "" {
			v.body = append(v.body, lines(p.ServedNotice.Text)...)
			if p.ServedNotice.LearnMoreURL != "" {
				v.body = append(v.body, "Learn more: "+display.Line(p.ServedNotice.LearnMoreURL, dialogLineMax))
			}
		}
		v.choices = []dialogChoice{
			{"retry_fallback", "Retry this prompt with " + fb},
			{"edit_prompt", "Edit the prompt (it comes back to the prompt buffer)"},
		}
		return v, nil
	case "auto_mode_outside_reads":
		var p struct {
			ToolName  string `json:"toolName"`
			Path      string `json:"path"`
			Title     string `json:"title"`
			Question  string `json:"question"`
			Explainer string `json:"explainer"`
			Options   []struct {
				Value string `json:"value"`
				Label string `json:"label"`
			} `json:"options"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return dialogView{}, fmt.Errorf("dialog %s: bad payload: %w", kind, err)
		}
		v := dialogView{title: display.Line(p.Title, 120)}
		if v.title == "" {
			v.title = "Read outside the working directories"
		}
		v.body = append(v.body, display.Line(p.ToolName, 60)+": "+display.Line(p.Path, dialogLineMax))
		v.body = append(v.body, lines(p.Question)...)
		v.body = append(v.body, lines(p.Explainer)...)
		// The CLI's words, and what each sends: a label must not hide
		// its result; a value offered twice is shown once.
		seen := map[string]bool{}
		for _, o := range p.Options {
			if valid(kind, o.Value) && !seen[o.Value] {
				seen[o.Value] = true
				v.choices = append(v.choices, dialogChoice{o.Value, display.Line(o.Label, 160) + " (" + o.Value + ")"})
			}
		}
		return v, nil
	case "auto_mode_server_fallback":
		var p struct {
			GatewayHost string   `json:"gatewayHost"`
			Title       string   `json:"title"`
			Paragraphs  []string `json:"paragraphs"`
			HelpURL     string   `json:"helpUrl"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return dialogView{}, fmt.Errorf("dialog %s: bad payload: %w", kind, err)
		}
		v := dialogView{title: display.Line(p.Title, 120)}
		if v.title == "" {
			v.title = "Auto mode's classifier"
		}
		if p.GatewayHost != "" {
			v.body = append(v.body, "Gateway: "+display.Line(p.GatewayHost, 120))
		}
		for _, para := range p.Paragraphs {
			v.body = append(v.body, lines(para)...)
		}
		if p.HelpURL != "" {
			v.body = append(v.body, "More: "+display.Line(p.HelpURL, dialogLineMax))
		}
		v.choices = []dialogChoice{
			{"continue", "Continue in auto mode"},
			{"interrupt", "Stop this turn"},
		}
		return v, nil
	}
	return dialogView{}, fmt.Errorf("dialog %q is not one the chat renders", kind)
}

func valid(kind, result string) bool {
	for _, r := range chat.DialogResults(kind) {
		if r == result {
			return true
		}
	}
	return false
}

// onDialog shows a dialog in the transcript (as a prompt of kind "dialog",
// so the sessions dashboard and :ClaudeAnswer see it waiting). A payload
// the chat cannot read is dismissed at once, saying so: the CLI then does
// what it does without a dialog.
func (ch *chatProc) onDialog(e chat.DialogRequestEvent) {
	v, err := dialogViewOf(e.Kind, e.Payload)
	if err != nil || len(v.choices) == 0 {
		if err == nil {
			err = fmt.Errorf("dialog %s offers no choice the chat knows", e.Kind)
		}
		if sess := ch.session(); sess != nil {
			_ = sess.CancelDialog(e.RequestID)
		}
		ch.system("warn", "The Claude CLI asked for a dialog the chat could not show, so it was dismissed: "+err.Error())
		return
	}
	ch.mu.Lock()
	if _, dup := ch.dialogs[e.RequestID]; dup {
		// the same request id again: the first block answers it
		ch.mu.Unlock()
		return
	}
	ch.dialogs[e.RequestID] = dialogState{kind: e.Kind, choices: v.choices}
	ch.mu.Unlock()
	body := v.body
	if body == nil {
		body = []string{}
	}
	ch.push("permission", map[string]any{
		"request_id": e.RequestID, "kind": "dialog", "dialog_kind": e.Kind,
		"tool": "Dialog", "display_name": v.title, "summary": v.title,
		"body": body, "fits": true, "lines": len(body), "choices": v.choices,
		"input": json.RawMessage("{}"), "diff": false,
	})
}

// dialogState is an open dialog of a chat.
type dialogState struct {
	kind    string
	choices []dialogChoice
}

func (ch *chatProc) onDialogCancel(e chat.DialogCancelEvent) {
	ch.mu.Lock()
	_, open := ch.dialogs[e.RequestID]
	delete(ch.dialogs, e.RequestID)
	ch.mu.Unlock()
	if open {
		ch.push("permission_done", map[string]any{"request_id": e.RequestID, "behavior": "deny", "by": "cli_cancelled"})
	}
}

type dialogParams struct {
	idParams
	RequestID string `json:"request_id"`
	// Result is one of the dialog's choices; "" dismisses it.
	Result string `json:"result"`
}

// handleDialog answers an open dialog with the user's choice (or
// dismisses it).
func (ch *chatProc) handleDialog(_ context.Context, a dialogParams) (any, error) {
	ch.mu.Lock()
	d, open := ch.dialogs[a.RequestID]
	ch.mu.Unlock()
	if !open {
		return nil, fmt.Errorf("chat_dialog: dialog %s is not open (answered or withdrawn)", a.RequestID)
	}
	label := "dismissed"
	if a.Result != "" {
		label = ""
		for _, c := range d.choices {
			if c.Result == a.Result && label == "" {
				label = c.Label
			}
		}
		if label == "" {
			return nil, fmt.Errorf("chat_dialog: %q is not a choice of this dialog", a.Result)
		}
	}
	sess := ch.session()
	if sess == nil {
		return nil, fmt.Errorf("chat_dialog: %w", chat.ErrExited)
	}
	var err error
	if a.Result == "" {
		err = sess.CancelDialog(a.RequestID)
	} else {
		err = sess.AnswerDialog(a.RequestID, a.Result)
	}
	if err != nil {
		// Not forgotten here: when the CLI withdrew the dialog meanwhile,
		// its DialogCancelEvent (queued behind this call) settles the
		// block; when the CLI is gone, the exit does.
		return nil, fmt.Errorf("chat_dialog: %w", err)
	}
	ch.mu.Lock()
	delete(ch.dialogs, a.RequestID)
	ch.mu.Unlock()
	behavior := "allow"
	if a.Result == "" {
		behavior = "deny"
	}
	ch.push("permission_done", map[string]any{"request_id": a.RequestID, "behavior": behavior, "by": "user", "result": a.Result, "label": label})
	return map[string]any{"result": a.Result}, nil
}
