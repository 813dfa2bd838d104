package app

import (
	"encoding/json"
	"strings"

	"github.com/nvim-claude/nvim-claude/sessions"
)

// HookRequest is what the hook entry point (`nvim-claude hook`, which
// imports only app of the features) sends of a PermissionRequest's tool
// input, by the sessions feature's rule: the text the user is asked to
// allow (its start and its end when long: cut), how many lines the whole
// has, and the model's description.
func HookRequest(input json.RawMessage) (text, description string, lines int, cut bool) {
	text, description = sessions.RequestText(input)
	lines = strings.Count(strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), "\n") + 1
	text, cut = sessions.CutText(text, sessions.MaxRequestText)
	return text, description, lines, cut
}

// HookOutput is what the hook entry point prints for the CLI when its
// PermissionRequest call comes back with the host's reply (the sessions
// feature's rule: sessions.HookOutput); nil: nothing, the CLI keeps its own
// prompt.
func HookOutput(reply []byte, tool string, input, suggestions json.RawMessage) ([]byte, error) {
	return sessions.HookOutput(reply, tool, input, suggestions)
}

// HookPlanMax and HookPlanTool are the sessions feature's cap on the plan
// a hook sends, and the tool that presents one.
const (
	HookPlanMax  = sessions.MaxPlan
	HookPlanTool = sessions.PlanTool
)

// HookInput is what the sessions feature reads of the CLI's hook input.
type HookInput = sessions.HookInput

// HookMaxInput bounds the hook input read (sessions.MaxHookInput).
const HookMaxInput = sessions.MaxHookInput

// HookDigest is the sessions feature's digest of a hook's input (nil: too
// large or none) for the host, and the input as read.
func HookDigest(event, session string, body []byte) (sessions.HookCall, HookInput) {
	return sessions.Digest(event, session, body)
}
