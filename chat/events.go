package chat

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Event is one thing the CLI reported, decoded from a stdout line (or the
// end of the process). The concrete types are below; unknown lines become
// [OtherEvent].
type Event interface{ isEvent() }

// InitEvent is system/init, the first event of every turn.
type InitEvent struct {
	SessionID      string
	Model          string
	PermissionMode string
	Cwd            string
	Tools          []string
}

// StatusEvent is system/status: a mode change (PermissionMode set),
// "requesting", "compacting" or a compaction result.
type StatusEvent struct {
	PermissionMode string // "" when the event does not carry one
	Status         string
	CompactResult  string
}

// DeltaEvent is a streamed piece of an assistant content block
// (stream_event content_block_delta).
type DeltaEvent struct {
	MessageID string
	Index     int
	// Kind is "text", "thinking" or "input_json".
	Kind string
	Text string
}

// Block is one content block of an assistant message.
type Block struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Thinking string          `json:"thinking,omitempty"`
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
}

// Usage is a message's or a turn's token usage.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// ContextTokens is how much of the context window the usage fills.
func (u Usage) ContextTokens() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
}

// AssistantEvent is one assistant event: with CLI 2.1.330 one content block
// per event; group them by MessageID.
type AssistantEvent struct {
	MessageID       string
	Model           string
	Blocks          []Block
	Aborted         bool
	ParentToolUseID string
	Usage           Usage
}

// Synthetic reports a locally generated answer (slash command, API error).
func (e AssistantEvent) Synthetic() bool { return e.Model == "<synthetic>" }

// ToolResultEvent is the result of one tool call (a user event with a
// tool_result block).
type ToolResultEvent struct {
	ToolUseID string
	IsError   bool
	Text      string
	// Structured is the event's tool_use_result (may be a string or an
	// object, or empty).
	Structured json.RawMessage
	// FilePath is tool_use_result.filePath when present (Edit, Write …).
	FilePath string
}

// UserEvent is any other user event: interrupt markers, replays, local
// command output.
type UserEvent struct {
	UUID     string
	Text     string
	IsReplay bool
}

// ResultEvent ends a turn. IsError may be true with Subtype "success" (API
// errors): check IsError and TerminalReason.
type ResultEvent struct {
	Subtype        string
	IsError        bool
	Result         string
	TerminalReason string
	CostUSD        float64
	DurationMS     int64
	SessionID      string
	Usage          Usage
	// ContextWindow is the largest contextWindow of modelUsage.
	ContextWindow int
	Errors        []string
}

// SystemEvent is any other system event (api_retry, permission_denied,
// compact_boundary …) with its raw line.
type SystemEvent struct {
	Subtype string
	Raw     json.RawMessage
}

// ConversationResetEvent reports a /clear: the session id changes, and the
// next InitEvent carries the new one. NewConversationID is the CLI's
// new_conversation_id, which (CLI 2.1.330) is not the new session id.
type ConversationResetEvent struct {
	NewConversationID string
	Trigger           string
	UserMessageUUID   string
}

// LifecycleEvent is command_lifecycle for a user message the host sent
// with a uuid.
type LifecycleEvent struct {
	UUID  string
	State string // queued, started, completed
}

// PermissionRequestEvent is a can_use_tool request. Answer it with
// [Session.Answer] exactly once (unless a [PermissionCancelEvent] for it
// arrives first): an unanswered request blocks the turn.
type PermissionRequestEvent struct {
	RequestID               string
	ToolName                string
	DisplayName             string
	Input                   json.RawMessage
	Description             string
	ToolUseID               string
	Suggestions             json.RawMessage
	DecisionReason          string
	DecisionReasonType      string
	BlockedPath             string
	RequiresUserInteraction bool
}

// PermissionCancelEvent is control_cancel_request: the CLI withdrew an open
// request (interrupt); answering it now is ignored.
type PermissionCancelEvent struct {
	RequestID string
}

// ExitEvent is the last event of a session: the process ended.
type ExitEvent struct {
	Code   int
	Stderr string
}

// OtherEvent is a line of an unknown type, kept raw.
type OtherEvent struct {
	Type string
	Raw  json.RawMessage
}

func (InitEvent) isEvent()              {}
func (StatusEvent) isEvent()            {}
func (DeltaEvent) isEvent()             {}
func (AssistantEvent) isEvent()         {}
func (ToolResultEvent) isEvent()        {}
func (UserEvent) isEvent()              {}
func (ResultEvent) isEvent()            {}
func (SystemEvent) isEvent()            {}
func (ConversationResetEvent) isEvent() {}
func (LifecycleEvent) isEvent()         {}
func (PermissionRequestEvent) isEvent() {}
func (PermissionCancelEvent) isEvent()  {}
func (ExitEvent) isEvent()              {}
func (OtherEvent) isEvent()             {}

// line is the union of the top-level fields the decoder reads.
type line struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	UUID      string          `json:"uuid"`
	Message   json.RawMessage `json:"message"`
	Event     json.RawMessage `json:"event"`
	// system/init
	Model          string   `json:"model"`
	PermissionMode *string  `json:"permissionMode"`
	Cwd            string   `json:"cwd"`
	Tools          []string `json:"tools"`
	// system/status
	Status        *string `json:"status"`
	CompactResult string  `json:"compact_result"`
	// assistant
	Aborted         bool    `json:"aborted"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	APIMessageID    string  `json:"api_message_id"`
	// user
	IsReplay      bool            `json:"isReplay"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	// result
	IsError        bool                       `json:"is_error"`
	Result         string                     `json:"result"`
	TerminalReason string                     `json:"terminal_reason"`
	TotalCostUSD   float64                    `json:"total_cost_usd"`
	DurationMS     int64                      `json:"duration_ms"`
	Usage          Usage                      `json:"usage"`
	ModelUsage     map[string]json.RawMessage `json:"modelUsage"`
	Errors         []string                   `json:"errors"`
	// conversation_reset
	NewConversationID string `json:"new_conversation_id"`
	Trigger           string `json:"trigger"`
	UserMessageUUID   string `json:"user_message_uuid"`
	// command_lifecycle
	CommandUUID string `json:"command_uuid"`
	State       string `json:"state"`
	// control messages
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
}

type apiMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   Usage           `json:"usage"`
}

type streamEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		ID string `json:"id"`
	} `json:"message"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
}

type canUseTool struct {
	Subtype                 string          `json:"subtype"`
	ToolName                string          `json:"tool_name"`
	DisplayName             string          `json:"display_name"`
	Input                   json.RawMessage `json:"input"`
	Description             string          `json:"description"`
	ToolUseID               string          `json:"tool_use_id"`
	PermissionSuggestions   json.RawMessage `json:"permission_suggestions"`
	DecisionReason          string          `json:"decision_reason"`
	DecisionReasonType      string          `json:"decision_reason_type"`
	BlockedPath             string          `json:"blocked_path"`
	RequiresUserInteraction bool            `json:"requires_user_interaction"`
}

// contentBlock is a user or assistant content block as the decoder reads it.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parseContent reads a message content: a string or an array of blocks.
// Its first byte says which (trying a string first would scan a whole
// array of blocks once more only to fail: a resumed session's history is
// megabytes of them).
func parseContent(raw json.RawMessage) []contentBlock {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []contentBlock{{Type: "text", Text: s}}
	}
	var blocks []contentBlock
	_ = json.Unmarshal(raw, &blocks) // anything else has no blocks
	return blocks
}

// contentText flattens a string or an array of text blocks.
func contentText(raw json.RawMessage) string {
	var parts []string
	for _, b := range parseContent(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decoder turns stdout lines into events. It remembers the message id of
// the stream in progress (stream events may not carry it).
type decoder struct {
	streamMsgID string
}

// decode returns the events of one stdout line; a line that is not JSON
// gives an error.
func (d *decoder) decode(raw []byte) ([]Event, *line, error) {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, nil, err
	}
	cp := json.RawMessage(append([]byte(nil), raw...))
	switch l.Type {
	case "system":
		return d.system(&l, cp), &l, nil
	case "stream_event":
		return d.stream(&l), &l, nil
	case "assistant":
		var m apiMessage
		_ = json.Unmarshal(l.Message, &m)
		ev := AssistantEvent{MessageID: m.ID, Model: m.Model, Aborted: l.Aborted, Usage: m.Usage}
		if l.ParentToolUseID != nil {
			ev.ParentToolUseID = *l.ParentToolUseID
		}
		for _, b := range parseContent(m.Content) {
			ev.Blocks = append(ev.Blocks, Block{Type: b.Type, Text: b.Text, Thinking: b.Thinking, ID: b.ID, Name: b.Name, Input: b.Input})
		}
		return []Event{ev}, &l, nil
	case "user":
		return d.user(&l), &l, nil
	case "result":
		ev := ResultEvent{
			Subtype: l.Subtype, IsError: l.IsError, Result: l.Result, TerminalReason: l.TerminalReason,
			CostUSD: l.TotalCostUSD, DurationMS: l.DurationMS, SessionID: l.SessionID, Usage: l.Usage, Errors: l.Errors,
		}
		for _, mu := range l.ModelUsage {
			var u struct {
				ContextWindow int `json:"contextWindow"`
			}
			if json.Unmarshal(mu, &u) == nil && u.ContextWindow > ev.ContextWindow {
				ev.ContextWindow = u.ContextWindow
			}
		}
		return []Event{ev}, &l, nil
	case "conversation_reset":
		return []Event{ConversationResetEvent{NewConversationID: l.NewConversationID, Trigger: l.Trigger, UserMessageUUID: l.UserMessageUUID}}, &l, nil
	case "command_lifecycle":
		return []Event{LifecycleEvent{UUID: l.CommandUUID, State: l.State}}, &l, nil
	case "control_request", "control_response", "control_cancel_request", "keep_alive":
		return nil, &l, nil // the session handles these
	}
	return []Event{OtherEvent{Type: l.Type, Raw: cp}}, &l, nil
}

func (d *decoder) system(l *line, raw json.RawMessage) []Event {
	switch l.Subtype {
	case "init":
		ev := InitEvent{SessionID: l.SessionID, Model: l.Model, Cwd: l.Cwd, Tools: l.Tools}
		if l.PermissionMode != nil {
			ev.PermissionMode = *l.PermissionMode
		}
		return []Event{ev}
	case "status":
		ev := StatusEvent{CompactResult: l.CompactResult}
		if l.PermissionMode != nil {
			ev.PermissionMode = *l.PermissionMode
		}
		if l.Status != nil {
			ev.Status = *l.Status
		}
		return []Event{ev}
	}
	return []Event{SystemEvent{Subtype: l.Subtype, Raw: raw}}
}

func (d *decoder) stream(l *line) []Event {
	var se streamEvent
	if json.Unmarshal(l.Event, &se) != nil {
		return nil
	}
	switch se.Type {
	case "message_start":
		d.streamMsgID = se.Message.ID
	case "content_block_delta":
		id := l.APIMessageID
		if id == "" {
			id = d.streamMsgID
		}
		ev := DeltaEvent{MessageID: id, Index: se.Index}
		switch se.Delta.Type {
		case "text_delta":
			ev.Kind, ev.Text = "text", se.Delta.Text
		case "thinking_delta":
			ev.Kind, ev.Text = "thinking", se.Delta.Thinking
		case "input_json_delta":
			ev.Kind, ev.Text = "input_json", se.Delta.PartialJSON
		default:
			return nil
		}
		return []Event{ev}
	}
	return nil
}

func (d *decoder) user(l *line) []Event {
	var m apiMessage
	_ = json.Unmarshal(l.Message, &m)
	var evs []Event
	var texts []string
	for _, b := range parseContent(m.Content) {
		switch b.Type {
		case "tool_result":
			ev := ToolResultEvent{ToolUseID: b.ToolUseID, IsError: b.IsError, Text: contentText(b.Content), Structured: l.ToolUseResult}
			var fp struct {
				FilePath string `json:"filePath"`
			}
			if len(l.ToolUseResult) > 0 && l.ToolUseResult[0] == '{' && json.Unmarshal(l.ToolUseResult, &fp) == nil {
				ev.FilePath = fp.FilePath
			}
			evs = append(evs, ev)
		case "text":
			texts = append(texts, b.Text)
		}
	}
	if len(texts) > 0 {
		evs = append(evs, UserEvent{UUID: l.UUID, Text: strings.Join(texts, "\n"), IsReplay: l.IsReplay})
	}
	return evs
}
