package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/display"
)

// Answering a terminal's permission prompt from Neovim.
//
// The CLI runs a PermissionRequest hook while it shows its own prompt in
// the terminal (checked against the real CLI): whichever answers first
// wins, and the CLI ignores the other. With answering on, our hook
// (`nvim-claude hook PermissionRequest <id> wait`) holds its call open
// until the user answers in Neovim; the call waits here, in the table of
// pending answers, and its reply carries the decision the hook prints for
// the CLI. An entry leaves the table exactly once: answered in Neovim
// (sessions.answer), or dropped because the prompt was answered elsewhere
// — the call the entry is for ran (PostToolUse), the next call began
// (PreToolUse: the CLI asks before one call at a time), the turn ended or
// a new one began (Stop, StopFailure, UserPromptSubmit), the CLI killed the hook
// (a prompt dismissed with Esc: the hook cancels its call), the session
// exited, or the host closes. A dropped entry's hook gets no decision and
// prints nothing.

// AnswerTimeout is the CLI hook timeout (seconds) of the waiting
// PermissionRequest hook: the CLI shows its own prompt meanwhile, so a
// long wait holds nothing up; when it runs out the CLI kills the hook and
// the prompt can only be answered in the terminal.
const AnswerTimeout = 24 * 60 * 60

// MaxPlan bounds the plan a hook sends: a longer one is cut, shown so,
// and cannot be approved from Neovim (only sent back).
const MaxPlan = 128 << 10

// PlanTool is the tool whose permission is a plan's approval.
const PlanTool = "ExitPlanMode"

// Decision is the user's answer to a terminal's permission prompt, as the
// waiting hook gets it (HookOutput turns it into the CLI's words).
type Decision struct {
	Behavior string `json:"behavior"`          // "allow" or "deny"
	Scope    string `json:"scope,omitempty"`   // allow: "once" (the default) or "session"
	Message  string `json:"message,omitempty"` // deny: what the model is told
	Mode     string `json:"mode,omitempty"`    // a plan's approval: the mode to go on in (wire name)
}

// pendingAnswer is a prompt whose hook waits for Neovim's answer.
type pendingAnswer struct {
	id      string
	session string
	seq     int
	tool    string
	key     string // the call's input digest, to match its PostToolUse
	req     *Request
	plan    string
	planCut bool
	// result gets the decision, or nil when the entry is dropped; once,
	// by whoever removes the entry from the table (buffered: never
	// blocks).
	result chan *Decision
}

// The ways an entry leaves the table, as Lua hears them
// (sessions.answered).
const (
	ByNeovim   = "neovim"   // answered here
	ByTerminal = "terminal" // the prompt was answered in the terminal
	ByGone     = "gone"     // the hook went away (the CLI dismissed the prompt or exited)
)

// addAnswerLocked registers the waiting prompt of session x; s.mu is held.
func (s *Sessions) addAnswerLocked(x *Session, c HookCall) *pendingAnswer {
	s.answerSeq++
	p := &pendingAnswer{id: x.ID + "/" + strconv.Itoa(s.answerSeq), session: x.ID, seq: s.answerSeq,
		tool: c.Tool, key: c.InputKey, req: x.Request, plan: c.Plan, planCut: c.PlanCut != "",
		result: make(chan *Decision, 1)}
	p.req.RequestID = p.id
	if c.Tool == PlanTool {
		p.req.Kind = "plan"
	}
	s.answers[p.id] = p
	return p
}

// takeLocked removes the entry id from the table and hands its hook d
// (nil: no decision); it reports whether the entry was there. s.mu is held.
func (s *Sessions) takeLocked(id string, d *Decision) *pendingAnswer {
	p := s.answers[id]
	if p == nil {
		return nil
	}
	delete(s.answers, id)
	p.result <- d
	return p
}

// pendingOfLocked are session id's waiting prompts, oldest first.
func (s *Sessions) pendingOfLocked(id string) []*pendingAnswer {
	var out []*pendingAnswer
	for _, p := range s.answers {
		if p.session == id {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// dropLocked drops the waiting prompts of session id that match (all when
// match is nil) and returns their ids. s.mu is held.
func (s *Sessions) dropLocked(id string, match func(*pendingAnswer) bool) []string {
	var gone []string
	for _, p := range s.pendingOfLocked(id) {
		if match == nil || match(p) {
			s.takeLocked(p.id, nil)
			gone = append(gone, p.id)
		}
	}
	return gone
}

// ranLocked drops the waiting prompt of the call that PostToolUse c says
// ran: the one with its input, else the only one of its tool.
func (s *Sessions) ranLocked(id string, c HookCall) []string {
	var same, tool []*pendingAnswer
	for _, p := range s.pendingOfLocked(id) {
		if p.tool != c.Tool {
			continue
		}
		tool = append(tool, p)
		if c.InputKey != "" && p.key == c.InputKey {
			same = append(same, p)
		}
	}
	switch {
	case len(same) > 0:
		tool = same[:1]
	case len(tool) != 1:
		return nil
	}
	s.takeLocked(tool[0].id, nil)
	return []string{tool[0].id}
}

// answered tells Lua the prompts ids left the table, and how.
func (s *Sessions) answered(session string, ids []string, by string) {
	for _, id := range ids {
		s.h.Emit("sessions.answered", map[string]any{"id": session, "request_id": id, "by": by})
	}
}

// afterAnswerLocked shows what session x asks now that a prompt of its
// left: the oldest one still waiting, or, with none, it works on (the
// CLI goes on with the answer; its next hook says more). s.mu is held; it
// unlocks it.
func (s *Sessions) afterAnswerLocked(x *Session) {
	if left := s.pendingOfLocked(x.ID); len(left) > 0 {
		x.prompt = true
		x.Request = left[0].req
		if x.State == NeedsInput {
			x.Waiting = x.waitingFor(x.Request.waiting())
			snap := *x
			s.mu.Unlock()
			s.emit(snap, snap.State)
			return
		}
		s.setLocked(x, NeedsInput, x.waitingFor(x.Request.waiting()))
		return
	}
	x.prompt = false
	if x.State != NeedsInput || x.diffs > 0 {
		s.mu.Unlock()
		return
	}
	s.setLocked(x, Working, "")
}

// Decide applies the waiting PermissionRequest hook call c and waits for
// the user's answer in Neovim until its entry leaves the table — nil then
// when the prompt was answered elsewhere, or dropped — or ctx ends (the
// hook is gone: the CLI killed it, or the host closes), which drops the
// entry. It knows nothing of how the hook reached the host: the caller's
// transport gives ctx and writes the CLI's output (DecisionOutput).
func (s *Sessions) Decide(ctx context.Context, c HookCall) (*Decision, error) {
	c.Wait = "1"
	p, err := s.hook(c)
	if err != nil || p == nil {
		return nil, err
	}
	return s.await(ctx, p)
}

// await holds a waiting hook's call until its entry leaves the table, or
// ctx ends, which drops the entry.
func (s *Sessions) await(ctx context.Context, p *pendingAnswer) (*Decision, error) {
	select {
	case d := <-p.result:
		return d, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if s.takeLocked(p.id, nil) == nil {
		s.mu.Unlock()
		// settled meanwhile: the decision is lost with the hook
		return nil, fmt.Errorf("the hook's call ended: %w", ctx.Err())
	}
	x := s.byID[p.session]
	if x == nil {
		s.mu.Unlock()
	} else {
		s.afterAnswerLocked(x)
	}
	s.answered(p.session, []string{p.id}, ByGone)
	return nil, fmt.Errorf("the hook's call ended: %w", ctx.Err())
}

// dropAll drops every waiting prompt (the host closes): each hook prints
// nothing and the CLIs keep their own prompts.
func (s *Sessions) dropAll() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.answers))
	for id := range s.answers {
		ids = append(ids, id)
	}
	for _, id := range ids {
		s.takeLocked(id, nil)
	}
	s.mu.Unlock()
}

// answerParams are Lua's answer to a terminal's prompt.
type answerParams struct {
	RequestID string `json:"request_id"`
	Behavior  string `json:"behavior"`
	Scope     string `json:"scope"`
	Message   string `json:"message"`
	// Mode: a plan's approval, the mode to go on in ("manual",
	// "acceptEdits" …; default "manual").
	Mode string `json:"mode"`
}

// ErrNotPending: the prompt is no longer open.
var ErrNotPending = errors.New("this prompt is no longer open (answered in the terminal, or the CLI withdrew it)")

// Answer answers the waiting prompt p.RequestID from Neovim.
func (s *Sessions) Answer(p answerParams) error {
	d := &Decision{Behavior: p.Behavior}
	s.mu.Lock()
	e := s.answers[p.RequestID]
	if e == nil {
		s.mu.Unlock()
		return fmt.Errorf("sessions.answer: %w", ErrNotPending)
	}
	switch p.Behavior {
	case "deny":
		d.Message = p.Message
		switch {
		case e.tool == PlanTool && d.Message != "":
			d.Message = "The user wants changes to the plan before approving it:\n" + d.Message
		case d.Message == "":
			d.Message = "The user denied this " + e.tool + " call."
		}
	case "allow":
		switch {
		case e.tool == PlanTool:
			if e.planCut {
				s.mu.Unlock()
				return errors.New("sessions.answer: this plan is too long to show in Neovim in full: approve it in the terminal, or send it back")
			}
			m := p.Mode
			if m == "" {
				m = "manual"
			}
			if d.Mode = chat.WireMode(m); d.Mode == "" || d.Mode == "plan" {
				s.mu.Unlock()
				return fmt.Errorf("sessions.answer: mode must be one of %s but plan (got %q)", strings.Join(chat.Modes(), ", "), display.Line(m, 40))
			}
		case p.Scope == "" || p.Scope == "once":
		case p.Scope == "session":
			d.Scope = "session"
		default:
			s.mu.Unlock()
			return fmt.Errorf("sessions.answer: scope must be once or session, got %q", display.Line(p.Scope, 40))
		}
	default:
		s.mu.Unlock()
		return fmt.Errorf("sessions.answer: behavior must be allow or deny, got %q", display.Line(p.Behavior, 40))
	}
	s.takeLocked(e.id, d)
	x := s.byID[e.session]
	if x == nil {
		s.mu.Unlock()
	} else {
		s.afterAnswerLocked(x)
	}
	s.answered(e.session, []string{e.id}, ByNeovim)
	return nil
}

func (s *Sessions) handleAnswer(_ context.Context, p answerParams) (any, error) {
	if err := s.Answer(p); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

type planParams struct {
	RequestID string `json:"request_id"`
}

// handlePlan gives Lua the plan a waiting ExitPlanMode prompt presents,
// for its Markdown buffer (displayable lines; cut: not all of it).
func (s *Sessions) handlePlan(_ context.Context, p planParams) (any, error) {
	s.mu.Lock()
	e := s.answers[p.RequestID]
	s.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("sessions.plan: %w", ErrNotPending)
	}
	if e.tool != PlanTool {
		return nil, fmt.Errorf("sessions.plan: %s is a %s prompt, not a plan", display.Line(p.RequestID, 40), e.tool)
	}
	return map[string]any{"lines": display.Lines(strings.TrimRight(e.plan, "\n"), 0, 0), "cut": e.planCut, "session": e.session}, nil
}

// hookAnswer is the host's reply to a waiting hook.
type hookAnswer struct {
	Decision *Decision `json:"decision"`
}

// HookOutput is what the waiting hook prints for the CLI given the host's
// reply to its call ({"decision": …}, or {}: nothing, the CLI keeps its
// own prompt): DecisionOutput of the decision.
func HookOutput(reply []byte, tool string, input, suggestions json.RawMessage) ([]byte, error) {
	var a hookAnswer
	if err := json.Unmarshal(reply, &a); err != nil {
		return nil, fmt.Errorf("the host's answer: %w", err)
	}
	return DecisionOutput(a.Decision, tool, input, suggestions)
}

// DecisionOutput is the PermissionRequest hook's output for the CLI that
// carries decision d (nil: none) for the call of tool with input and the
// CLI's permission suggestions. A plan's approval carries its input (the
// CLI does not take an allow without it for a tool that asks the user)
// and the mode to go on in; an allow for the session, the rule the CLI
// itself would add (chat.AlwaysAllow).
func DecisionOutput(d *Decision, tool string, input, suggestions json.RawMessage) ([]byte, error) {
	if d == nil {
		return nil, nil
	}
	out := map[string]any{"behavior": d.Behavior}
	switch d.Behavior {
	case "deny":
		out["message"] = d.Message
		out["interrupt"] = false
	case "allow":
		if tool == PlanTool {
			if len(input) == 0 || input[0] != '{' {
				return nil, errors.New("a plan's approval needs the plan's input")
			}
			out["updatedInput"] = input
			if d.Mode != "" {
				out["updatedPermissions"] = []chat.PermissionUpdate{{Type: "setMode", Mode: d.Mode, Destination: "session"}}
			}
			break
		}
		if d.Scope == "session" {
			perms, err := chat.AlwaysAllow(tool, input, suggestions, "session")
			if err != nil {
				return nil, err
			}
			out["updatedPermissions"] = perms
		}
	default:
		return nil, fmt.Errorf("the host's answer: unknown behavior %q", display.Line(d.Behavior, 40))
	}
	return json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PermissionRequest", "decision": out}})
}
