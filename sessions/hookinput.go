package sessions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nvim-claude/nvim-claude/workspace"
)

// The limits of reading a hook's input (the CLI's hook JSON, on a command
// hook's stdin or in an HTTP hook's body).
const (
	// MaxHookInput bounds the input read: a PreToolUse for a large Write
	// carries the whole file, of which only the tool's name is kept.
	MaxHookInput = 8 << 20
	// maxHookField bounds each text kept.
	maxHookField = 500
)

// HookInput is what the feature reads of the CLI's hook input.
type HookInput struct {
	SessionID        string          `json:"session_id"`
	Cwd              string          `json:"cwd"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	Message          string          `json:"message"`
	NotificationType string          `json:"notification_type"`
	Suggestions      json.RawMessage `json:"permission_suggestions"`
}

// Digest is what the host needs of a hook's input: never a file's
// contents; a PermissionRequest's command, up to MaxRequestText, and a
// plan to approve (up to MaxPlan); a digest of the tool's input, which
// tells the PostToolUse of an answered call. Input that is too large
// (over MaxHookInput: pass nil) or not JSON still reports the event. It
// also returns the input as read, for the decision the hook may give.
func Digest(event, session string, body []byte) (HookCall, HookInput) {
	return digest(event, session, body, nil)
}

// digest is Digest; local, when not nil, maps a path the hook names (its
// cwd, the plan file) to this machine's spelling, and refuses (false) one
// that must not be taken as a local path: a far CLI's.
func digest(event, session string, body []byte, local func(string) (string, bool)) (HookCall, HookInput) {
	if local == nil {
		local = func(p string) (string, bool) { return p, true }
	}
	c := HookCall{Event: event, Session: session}
	var in HookInput
	if len(body) == 0 || len(body) > MaxHookInput || json.Unmarshal(body, &in) != nil {
		return c, HookInput{}
	}
	c.ClaudeSession, c.Tool = clipField(in.SessionID), clipField(in.ToolName)
	if in.Cwd != "" {
		c.cwdSeen = true
		if cwd, ok := local(in.Cwd); ok {
			c.Cwd = clipField(cwd)
		}
	}
	c.Message, c.NotificationType = clipField(in.Message), clipField(in.NotificationType)
	if (event == "PermissionRequest" || event == "PostToolUse") && len(in.ToolInput) > 0 {
		sum := sha256.Sum256(in.ToolInput)
		c.InputKey = hex.EncodeToString(sum[:8])
	}
	if event == "PermissionRequest" && len(in.ToolInput) > 0 {
		// what the user is asked to allow, for the sessions panel and
		// :ClaudeAnswer: the command (its start and its end when long),
		// a file's name — never its contents
		text, desc := RequestText(in.ToolInput)
		lines := strings.Count(strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), "\n") + 1
		text, cut := CutText(text, MaxRequestText)
		if text != "" {
			c.Input, c.InputLines = text, strconv.Itoa(lines)
		}
		if cut {
			c.InputCut = "1"
		}
		if desc != "" {
			c.Description = clipField(desc)
		}
		var plan struct {
			Plan string `json:"plan"`
		}
		if in.ToolName == PlanTool && json.Unmarshal(in.ToolInput, &plan) == nil && plan.Plan != "" {
			c.setPlan(plan.Plan)
		}
	}
	if event == "PostToolUse" && planWriters[in.ToolName] {
		// The CLI's plan mode has the model write its plan to a file of
		// the CLI's plans directory, and ExitPlanMode then carries no
		// plan (checked against the real CLI): the plan as written goes
		// to the host, for the plan's approval.
		var f struct {
			Path string `json:"file_path"`
		}
		if json.Unmarshal(in.ToolInput, &f) == nil {
			if p, ok := local(f.Path); !ok {
				f.Path = ""
			} else {
				f.Path = p
			}
			if text, ok := readPlan(f.Path); ok {
				c.setPlan(text)
			}
		}
	}
	return c, in
}

// planWriters are the tools that write a plan file.
var planWriters = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true}

// setPlan puts a plan in the call, cut at MaxPlan.
func (c *HookCall) setPlan(plan string) {
	if len(plan) > MaxPlan {
		plan = strings.ToValidUTF8(plan[:MaxPlan], "")
		c.PlanCut = "1"
	}
	c.Plan = plan
}

// readPlan reads the plan file path: a regular file named *.md in a
// directory named plans (the CLI's plans directory), read through the
// workspace's confined reader, at most a little more than the plan cap
// (setPlan cuts it); anything else is no plan.
func readPlan(path string) (string, bool) {
	if !filepath.IsAbs(path) || filepath.Ext(path) != ".md" || filepath.Base(filepath.Dir(path)) != "plans" {
		return "", false
	}
	b, _, err := workspace.ReadIn(filepath.Dir(path), filepath.Base(path), MaxPlan+1)
	if err != nil {
		return "", false
	}
	return string(b), true
}

func clipField(s string) string {
	if len(s) <= maxHookField {
		return s
	}
	return strings.ToValidUTF8(s[:maxHookField], "") + "…"
}
