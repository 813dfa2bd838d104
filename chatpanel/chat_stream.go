package chatpanel

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/display"
)

// The stream's translation: each event the session reads from the CLI
// becomes what Lua shows (chat.* events), one function per event type.

// onEvent translates the session's events; it runs on the session's
// reader goroutine and must not block.
func (ch *chatProc) onEvent(ev chat.Event) {
	switch e := ev.(type) {
	case chat.InitEvent:
		ch.onInit(e)
	case chat.StatusEvent:
		ch.onStatus(e)
	case chat.DeltaEvent:
		ch.onDelta(e)
	case chat.AssistantEvent:
		ch.onAssistant(e)
	case chat.ToolResultEvent:
		ch.onToolResult(e)
	case chat.UserEvent:
		ch.onUser(e)
	case chat.ResultEvent:
		ch.onResult(e)
	case chat.SystemEvent:
		ch.onSystem(e)
	case chat.UndeclaredDialogEvent:
		ch.onUndeclaredDialog(e)
	case chat.ConversationResetEvent:
		// The new session id comes with the next init (status then).
		ch.system("info", "The conversation was cleared; a new session starts.")
	case chat.LifecycleEvent:
		ch.onLifecycle(e)
	case chat.PermissionRequestEvent:
		ch.onPermission(e)
	case chat.PermissionCancelEvent:
		ch.onPermissionCancel(e)
	case chat.DialogRequestEvent:
		ch.onDialog(e)
	case chat.DialogCancelEvent:
		ch.onDialogCancel(e)
	case chat.ExitEvent:
		ch.onExit(e)
	}
}

// onInit takes the session id and the mode the CLI's init reports.
func (ch *chatProc) onInit(e chat.InitEvent) {
	ch.mu.Lock()
	mode := chat.ModeName(e.PermissionMode)
	changed := e.SessionID != ch.sessionID || (mode != "" && mode != ch.mode)
	ch.sessionID = e.SessionID
	if mode != "" {
		ch.mode = mode
	}
	ch.mu.Unlock()
	if changed {
		ch.pushStatus()
	}
}

// onStatus follows the mode and says when the conversation is compacted.
func (ch *chatProc) onStatus(e chat.StatusEvent) {
	if e.PermissionMode != "" {
		ch.mu.Lock()
		mode := chat.ModeName(e.PermissionMode)
		changed := mode != ch.mode
		ch.mode = mode
		ch.mu.Unlock()
		if changed {
			ch.pushStatus()
		}
	}
	if e.Status == "compacting" {
		ch.system("info", "Compacting the conversation…")
	}
	if e.CompactResult != "" && e.CompactResult != "success" {
		ch.system("warn", "Compaction "+e.CompactResult)
	}
}

// onDelta streams text and thinking; the message they belong to is then
// not sent again whole (onAssistant).
func (ch *chatProc) onDelta(e chat.DeltaEvent) {
	if e.Kind != "text" && e.Kind != "thinking" {
		return
	}
	ch.mu.Lock()
	ch.streamed[e.MessageID] = true
	ch.mu.Unlock()
	key := fmt.Sprintf("%s\x00%d", e.MessageID, e.Index)
	ch.out.pushDelta("chat."+e.Kind, map[string]any{"id": ch.id, "message_id": e.MessageID, "index": e.Index}, key, e.Text)
}

// onToolResult shows a tool's result (cut at 8 KiB), checkpoints an edit
// nobody was asked about, and says which files may have changed.
func (ch *chatProc) onToolResult(e chat.ToolResultEvent) {
	text := e.Text
	if len(text) > 8<<10 {
		text = text[:8<<10] + "\n… (cut)"
	}
	ch.mu.Lock()
	tu := ch.toolUses[e.ToolUseID]
	delete(ch.toolUses, e.ToolUseID)
	ch.mu.Unlock()
	if tu.path != "" && !e.IsError {
		// An edit nobody was asked about (acceptEdits, allow
		// always): the CLI reports what it replaced.
		ch.checkpointResult(tu, e.Structured)
	}
	ch.push("tool_result", map[string]any{"tool_use_id": e.ToolUseID, "is_error": e.IsError,
		"summary": resultSummary(e), "text": shown(text)})
	if tu.todos != nil && !e.IsError {
		ch.push("todos", map[string]any{"todos": tu.todos})
	}
	switch {
	case e.FilePath != "" && !e.IsError:
		ch.push("file_changed", map[string]any{"paths": []string{e.FilePath}})
	case tu.name == "Bash":
		// A command may have changed any file.
		ch.push("file_changed", map[string]any{"paths": []string{}, "all": true})
	}
}

// onUser notices the CLI's own note that the user interrupted the turn.
func (ch *chatProc) onUser(e chat.UserEvent) {
	if strings.HasPrefix(e.Text, "[Request interrupted by user") {
		ch.noteInterrupted()
	}
}

// onResult ends the turn: its cost, the context's size, and the chat back
// to idle.
func (ch *chatProc) onResult(e chat.ResultEvent) {
	// An interrupted turn ends as an error ("aborted_streaming"): the
	// user hears "Interrupted." once, and no error line.
	interrupted := ch.wasInterrupted() || strings.HasPrefix(e.TerminalReason, "aborted")
	if interrupted {
		ch.noteInterrupted() // the CLI's "[Request interrupted…" may come after
	}
	ch.mu.Lock()
	ch.toolUses = map[string]toolUse{} // a turn's results come before its end
	ch.state = "idle"
	// The CLI reports the session's running total; a turn's own cost
	// is the difference.
	turnCost := max(e.CostUSD-ch.cost, 0)
	ch.cost = e.CostUSD
	if e.ContextWindow > 0 {
		ch.ctxWindow = e.ContextWindow
	}
	if ch.ctxTokens == 0 {
		ch.ctxTokens = e.Usage.ContextTokens()
	}
	if e.SessionID != "" {
		ch.sessionID = e.SessionID
	}
	ch.mu.Unlock()
	ch.push("turn_done", map[string]any{"is_error": e.IsError && !interrupted, "interrupted": interrupted,
		"subtype": e.Subtype, "terminal_reason": e.TerminalReason, "result": e.Result,
		"cost_usd": turnCost, "session_cost_usd": e.CostUSD, "duration_ms": e.DurationMS})
	ch.push("file_changed", map[string]any{"paths": []string{}, "all": true})
	ch.pushStatus()
}

// onUndeclaredDialog tells the user of a dialog the chat did not declare.
// It is left unanswered, as the CLI requires for such a kind; shown so the
// user knows the CLI wanted something.
func (ch *chatProc) onUndeclaredDialog(e chat.UndeclaredDialogEvent) {
	ch.system("info", "The Claude CLI asked for a dialog the chat cannot show ("+display.Line(e.Kind, 60)+"); it was left unanswered.")
}

// onLifecycle marks the turn the CLI started as running.
func (ch *chatProc) onLifecycle(e chat.LifecycleEvent) {
	ch.push("lifecycle", map[string]any{"uuid": e.UUID, "state": e.State})
	if e.State != "started" {
		return
	}
	ch.mu.Lock()
	ch.turnUUID = e.UUID
	ch.interrupted = false
	changed := ch.state != "running"
	ch.state = "running"
	ch.mu.Unlock()
	if changed {
		ch.pushStatus()
	}
}

// onAssistant shows a whole message's text (unless it was streamed) and
// its tool calls, remembering each call for its result.
func (ch *chatProc) onAssistant(e chat.AssistantEvent) {
	if e.Usage.InputTokens > 0 && e.ParentToolUseID == "" {
		ch.mu.Lock()
		ch.ctxTokens = e.Usage.ContextTokens()
		ch.mu.Unlock()
	}
	ch.mu.Lock()
	streamed := ch.streamed[e.MessageID]
	ch.mu.Unlock()
	for i, b := range e.Blocks {
		switch b.Type {
		case "text", "thinking":
			if streamed || e.ParentToolUseID != "" {
				continue // already sent as deltas
			}
			text := b.Text
			if b.Type == "thinking" {
				text = b.Thinking
			}
			ch.push(b.Type, map[string]any{"message_id": e.MessageID, "index": i, "delta": text})
		case "tool_use":
			// Every edit is checkpointed, a subagent's too: when it is
			// allowed (chat_permission) or from its result (unasked).
			tu := toolUse{name: b.Name, path: chat.EditPath(b.Name, b.Input)}
			if b.Name == "TodoWrite" && e.ParentToolUseID == "" {
				tu.todos = []map[string]any{}
				for _, t := range chat.Todos(b.Input) {
					tu.todos = append(tu.todos, map[string]any{"content": t.Content, "status": t.Status, "active_form": t.ActiveForm})
				}
			}
			ch.mu.Lock()
			tu.turn = ch.turnUUID
			if tu.turn == "" {
				tu.turn = ch.lastSent
			}
			ch.toolUses[b.ID] = tu
			ch.mu.Unlock()
			if e.ParentToolUseID != "" {
				continue // a subagent's own tools are not shown
			}
			ch.push("tool_use", map[string]any{"tool_use_id": b.ID, "name": b.Name, "input": rawOrEmpty(b.Input),
				"summary": summaryOf(b.Name, b.Input, ch.params.Cwd)})
		}
	}
}

// onSystem shows the CLI's system messages: retries, denials, compaction,
// API errors, and its background tasks.
func (ch *chatProc) onSystem(e chat.SystemEvent) {
	var f struct {
		Attempt     int    `json:"attempt"`
		MaxRetries  int    `json:"max_retries"`
		ErrorStatus any    `json:"error_status"`
		Error       any    `json:"error"`
		ToolName    string `json:"tool_name"`
		Message     string `json:"message"`
		// background_tasks_changed: the tasks running now (CLI 2.1.331).
		Tasks []struct {
			TaskID       string `json:"task_id"`
			TaskType     string `json:"task_type"`
			Description  string `json:"description"`
			SubagentType string `json:"subagent_type"`
		} `json:"tasks"`
		// task_notification: one task ended.
		Status          string `json:"status"`
		Summary         string `json:"summary"`
		SummaryIsReport bool   `json:"summary_is_report"`
		TaskID          string `json:"task_id"`
	}
	_ = json.Unmarshal(e.Raw, &f)
	switch e.Subtype {
	case "api_retry":
		ch.system("warn", fmt.Sprintf("API error (%v); retry %d of %d", f.ErrorStatus, f.Attempt, f.MaxRetries))
	case "permission_denied":
		ch.system("warn", fmt.Sprintf("%s was denied: %s", f.ToolName, f.Message))
	case "compact_boundary":
		ch.system("info", "Conversation compacted.")
	case "api_error":
		ch.system("error", fmt.Sprintf("API error: %v", f.Error))
	case "background_tasks_changed":
		// The progress CLI 2.1.331 reports (it has no TodoWrite in
		// stream-json mode): its background commands and agents, shown
		// in the to-do window while they run.
		todos := []map[string]any{}
		names := map[string]string{}
		for _, t := range f.Tasks {
			what := t.Description
			switch t.TaskType {
			case "local_bash":
				what = "background command: " + what
			case "local_agent":
				kind := t.SubagentType
				if kind == "" {
					kind = "agent"
				}
				what = kind + " agent: " + what
			}
			names[t.TaskID] = what
			todos = append(todos, map[string]any{"content": what, "status": "in_progress", "active_form": what})
		}
		ch.mu.Lock()
		for id, n := range names {
			ch.taskNames[id] = n
		}
		ch.mu.Unlock()
		ch.push("todos", map[string]any{"todos": todos, "source": "tasks"})
	case "task_notification":
		ch.mu.Lock()
		name := ch.taskNames[f.TaskID]
		delete(ch.taskNames, f.TaskID)
		ch.mu.Unlock()
		if name == "" {
			name = "a background task"
		}
		text := fmt.Sprintf("%s: %s", name, f.Status)
		if f.Summary != "" && !f.SummaryIsReport {
			text = f.Summary // "Background command "bg" completed (exit code 0)"
		}
		level := "info"
		if f.Status != "completed" {
			level = "warn"
		}
		ch.system(level, text)
	}
}

// noteInterrupted tells the user the turn was interrupted, once a turn.
func (ch *chatProc) noteInterrupted() {
	ch.mu.Lock()
	said := ch.interrupted
	ch.interrupted = true
	ch.mu.Unlock()
	if !said {
		ch.system("info", "Interrupted.")
	}
}

// wasInterrupted reports whether this turn was interrupted (forgotten
// when the next turn starts).
func (ch *chatProc) wasInterrupted() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.interrupted
}

// toolUse is what a tool result needs to know of its call.
type toolUse struct {
	name, path, turn string // path: the file an edit tool changes
	// todos: a TodoWrite's list, shown once the CLI ran the call (it
	// answers "No such tool available" when it has no TodoWrite, as
	// 2.1.331 in stream-json mode).
	todos []map[string]any
}

func rawOrEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("{}")
	}
	return r
}

// resultSummary is a one-line summary of a tool result.
func resultSummary(e chat.ToolResultEvent) string {
	t := strings.TrimSpace(e.Text)
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[:i] + " …"
	}
	if r := []rune(t); len(r) > 100 {
		t = string(r[:100]) + "…"
	}
	if e.IsError {
		t = "error: " + t
	}
	return display.Line(t, 120)
}

// shown is text from outside (tool output, the CLI's messages) as lines
// a buffer can show: control characters made visible, runs of blank
// lines collapsed (saying so).
func shown(text string) string {
	if text == "" {
		return ""
	}
	return strings.Join(display.Lines(text, 0, 0), "\n")
}
