package chatpanel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/display"
	"github.com/nvim-claude/nvim-claude/verdict"
)

// chatPerm is one open can_use_tool request of a chat.
type chatPerm struct {
	req  chat.PermissionRequestEvent
	kind string // edit, bash, plan, question, other

	// diff-backed edits
	diff     bool
	path     string // the local file
	told     string // the path as the CLI named it (the far one when Claude runs elsewhere)
	tabName  string
	current  string // the file's text when the proposal was made
	proposal string
	cancel   context.CancelFunc // ends the review

	mu      sync.Mutex
	scope   string // set by chat_permission before it decides the diff
	denyMsg string
	byUser  bool
}

func (p *chatPerm) stop() {
	if p.cancel != nil {
		p.cancel()
	}
}

// planBlocked reports whether plan mode refuses tool.
func planBlocked(tool string) bool { return chat.IsEditTool(tool) || tool == "Bash" }

const planModeRefusal = "Plan mode is on: the user has not approved any changes yet, so %s is not allowed. " +
	"Do not edit files or run commands. Finish researching, then present the plan with ExitPlanMode first; " +
	"once the user approves it you can make the changes."

func permKind(tool string) string {
	switch tool {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return "edit"
	case "Bash":
		return "bash"
	case "ExitPlanMode":
		return "plan"
	case "AskUserQuestion":
		return "question"
	}
	return "other"
}

func (ch *chatProc) onPermission(e chat.PermissionRequestEvent) {
	sess := ch.session()
	ch.mu.Lock()
	mode := ch.mode
	ch.mu.Unlock()
	if mode == "plan" && planBlocked(e.ToolName) {
		msg := fmt.Sprintf(planModeRefusal, e.ToolName)
		if err := sess.Deny(e.RequestID, msg); err != nil {
			ch.c.log.Warn("chat: plan-mode deny", "err", err)
		}
		ch.system("warn", "Plan mode: refused "+summaryOf(e.ToolName, e.Input, ch.params.Cwd)+".")
		ch.push("permission_done", map[string]any{"request_id": e.RequestID, "behavior": "deny", "by": "plan_mode"})
		return
	}
	p := &chatPerm{req: e, kind: permKind(e.ToolName)}
	v := viewOf(e, p.kind, ch.params.Cwd)
	// Every name and text is displayable on the way out; "body" is the
	// input as the prompt shows it, and "fits" says whether that is all
	// of it (the sessions panel and :ClaudeAnswer can show the same).
	data := map[string]any{
		"request_id": e.RequestID, "tool": display.Line(e.ToolName, 120), "display_name": display.Line(e.DisplayName, 120),
		"kind": p.kind, "summary": v.summary, "body": v.body, "fits": v.fits, "lines": v.lines,
		"input": rawOrEmpty(e.Input), "diff": false,
	}
	if v.body == nil {
		data["body"] = []string{}
	}
	if data["display_name"] == "" {
		data["display_name"] = data["tool"]
	}
	if e.Description != "" {
		data["description"] = display.Line(e.Description, permLineMax)
	}
	if len(e.Suggestions) > 0 {
		data["suggestions"] = e.Suggestions
	}
	var in struct {
		Plan      string `json:"plan"`
		Questions []struct {
			Question    string `json:"question"`
			Header      string `json:"header"`
			MultiSelect bool   `json:"multiSelect"`
			Options     []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
		} `json:"questions"`
	}
	_ = json.Unmarshal(e.Input, &in)
	switch p.kind {
	case "plan":
		data["plan"] = in.Plan
	case "question":
		qs := []map[string]any{}
		for _, q := range in.Questions {
			opts := []map[string]any{}
			for _, o := range q.Options {
				opts = append(opts, map[string]any{"label": o.Label, "description": o.Description})
			}
			qs = append(qs, map[string]any{"question": q.Question, "header": q.Header, "options": opts, "multi_select": q.MultiSelect})
		}
		data["questions"] = qs
	case "edit":
		ch.prepareDiff(p)
		data["diff"] = p.diff
		if p.diff {
			// Lua answers an accept from the chat with the proposal as
			// the user left it in the diff named so (permParams.Proposal).
			data["tab_name"] = p.tabName
		}
	}
	ch.mu.Lock()
	ch.perms[e.RequestID] = p
	ch.mu.Unlock()
	if p.diff {
		// Registered before Lua hears of the prompt: an answer from the
		// chat, however quick, finds the review.
		ch.startReview(p)
	}
	ch.push("permission", data)
}

// prepareDiff computes an Edit/Write/MultiEdit's proposed file; p.diff
// tells whether it applies cleanly (and a diff review is possible).
func (ch *chatProc) prepareDiff(p *chatPerm) {
	tool := p.req.ToolName
	if tool == "NotebookEdit" || ch.c.peers.Review == nil || ch.c.ed == nil {
		return
	}
	told := chat.EditPath(tool, p.req.Input)
	if told == "" || !filepath.IsAbs(told) {
		return
	}
	// A far CLI names the far path: the review is of the local file it
	// maps to; one outside the mapping gets no diff (answered in the chat).
	path, ok := ch.c.h.Workspace().Abs(told)
	if !ok {
		return
	}
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	proposal, err := chat.ProposedText(tool, p.req.Input, string(cur))
	if err != nil {
		return
	}
	rel := path
	if r, err := filepath.Rel(ch.params.Cwd, path); err == nil && !strings.HasPrefix(r, "..") {
		rel = r
	}
	p.diff, p.path, p.told, p.current, p.proposal = true, path, told, string(cur), proposal
	p.tabName = "[Claude chat] " + rel
}

func (ch *chatProc) owner() string { return "chat:" + ch.id }

// startReview opens our diff review for p and answers the CLI with the
// user's decision.
func (ch *chatProc) startReview(p *chatPerm) {
	ctx, cancel := context.WithCancel(ch.ctx)
	p.cancel = cancel
	pending := ch.c.peers.Review.Begin(verdict.Request{Owner: ch.owner(), TabName: p.tabName, OldPath: p.path,
		NewPath: p.path, Contents: p.proposal})
	ch.wg.Add(1)
	go func() {
		defer ch.wg.Done()
		defer cancel()
		ans, err := pending.Wait(ctx)
		if err != nil {
			if ctx.Err() == nil {
				ch.system("warn", "Could not open the diff for "+p.path+": "+err.Error()+"; answer in the chat.")
				p.mu.Lock()
				p.diff = false
				p.mu.Unlock()
			}
			return
		}
		p.mu.Lock()
		by := "diff"
		if p.byUser {
			by = "user"
		}
		scope, msg := p.scope, p.denyMsg
		p.mu.Unlock()
		if ans.Text == verdict.Accepted {
			if err := ch.allowEdit(p, ans.Contents, scope, by); err != nil {
				ch.system("error", "Answering the CLI failed: "+err.Error())
			}
			return
		}
		if msg == "" {
			msg = "The user rejected this change to " + p.told + " in the diff review."
		}
		ch.finish(p, "deny", by, func(s *chat.Session) error { return s.Deny(p.req.RequestID, msg) })
	}()
}

// take removes the open request; nil if it is not open (answered,
// cancelled).
func (ch *chatProc) take(requestID string) *chatPerm {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	p := ch.perms[requestID]
	delete(ch.perms, requestID)
	return p
}

// finish answers the CLI once and reports permission_done.
func (ch *chatProc) finish(p *chatPerm, behavior, by string, answer func(*chat.Session) error) error {
	if ch.take(p.req.RequestID) == nil {
		return fmt.Errorf("permission request %s is no longer open", p.req.RequestID)
	}
	if err := answer(ch.session()); err != nil {
		return err
	}
	ch.push("permission_done", map[string]any{"request_id": p.req.RequestID, "behavior": behavior, "by": by})
	return nil
}

// allowEdit allows an edit with the text the user accepted; an accepted
// text other than the proposal becomes the tool's input, and the model
// hears about it with the next message.
func (ch *chatProc) allowEdit(p *chatPerm, accepted, scope, by string) error {
	if refused, err := ch.refuseInPlan(p); refused {
		return err
	}
	input := p.req.Input
	edited := accepted != p.proposal
	if edited {
		cur, err := os.ReadFile(p.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read %s: %w", p.path, err)
		}
		in, err := chat.EditedInput(p.req.ToolName, p.req.Input, string(cur), accepted)
		if err != nil {
			return err
		}
		input = in
	}
	perms, err := scopePerms(p.req, scope)
	if err != nil {
		return err
	}
	ch.checkpoint(p.path)
	if err := ch.finish(p, "allow", by, func(s *chat.Session) error { return s.Allow(p.req.RequestID, input, perms) }); err != nil {
		return err
	}
	if edited {
		note := editedNote(p.told, p.proposal, accepted)
		ch.mu.Lock()
		if ch.note != "" {
			ch.note += "\n\n"
		}
		ch.note += note
		ch.mu.Unlock()
	}
	return nil
}

// refuseInPlan denies p with the plan-mode refusal when plan mode is on
// now and refuses its tool: the user may have switched to plan while the
// prompt or its diff was open, and an allow must then not write.
func (ch *chatProc) refuseInPlan(p *chatPerm) (bool, error) {
	if !planBlocked(p.req.ToolName) {
		return false, nil
	}
	ch.mu.Lock()
	mode := ch.mode
	ch.mu.Unlock()
	if mode != "plan" {
		return false, nil
	}
	msg := fmt.Sprintf(planModeRefusal, p.req.ToolName)
	err := ch.finish(p, "deny", "plan_mode", func(s *chat.Session) error { return s.Deny(p.req.RequestID, msg) })
	if err == nil {
		ch.system("warn", "Plan mode: refused "+summaryOf(p.req.ToolName, p.req.Input, ch.params.Cwd)+".")
	}
	return true, err
}

func scopePerms(req chat.PermissionRequestEvent, scope string) ([]chat.PermissionUpdate, error) {
	if scope == "" || scope == "once" {
		return nil, nil
	}
	return chat.AlwaysAllow(req.ToolName, req.Input, req.Suggestions, scope)
}

// permParams are chat_permission's parameters.
type permParams struct {
	idParams
	RequestID      string            `json:"request_id"`
	Behavior       string            `json:"behavior"`
	Scope          string            `json:"scope"`
	Message        string            `json:"message"`
	Answers        map[string]string `json:"answers"`
	AcceptPlanMode string            `json:"accept_plan_mode"`
	// Proposal is the text of a diff-backed request's proposal buffer as
	// the user left it, which Lua sends with an allow from the chat (nil:
	// the proposal unchanged).
	Proposal *string `json:"proposal"`
}

func (ch *chatProc) handlePermission(ctx context.Context, a permParams) (any, error) {
	if a.Behavior != "allow" && a.Behavior != "deny" {
		return nil, fmt.Errorf("chat_permission: behavior must be allow or deny, got %q", a.Behavior)
	}
	if a.Behavior == "allow" {
		if _, err := scopePerms(chat.PermissionRequestEvent{}, a.Scope); err != nil {
			return nil, fmt.Errorf("chat_permission: %w", err)
		}
	}
	ch.mu.Lock()
	p := ch.perms[a.RequestID]
	ch.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("chat_permission: request %s is not open (answered or withdrawn)", a.RequestID)
	}
	p.mu.Lock()
	diff := p.diff
	p.mu.Unlock()
	if diff {
		return ch.decideDiff(ctx, p, a)
	}
	var err error
	switch {
	case a.Behavior == "deny":
		msg := a.Message
		if msg == "" {
			msg = "The user denied this " + p.req.ToolName + " call."
		}
		if p.kind == "plan" && a.Message != "" {
			msg = "The user wants changes to the plan before approving it:\n" + a.Message
		}
		err = ch.finish(p, "deny", "user", func(s *chat.Session) error { return s.Deny(p.req.RequestID, msg) })
	case p.kind == "plan":
		// The approval sets the mode the user chose, as the CLI's own
		// plan dialog does ("Yes, manually approve edits", "Yes,
		// auto-accept edits" …): on a plain allow the CLI would go back to
		// the mode it had before plan (acceptEdits, say), which is not what
		// ga (manual) says. The header then shows the mode the CLI reports.
		m := a.AcceptPlanMode
		if m == "" {
			m = "manual"
		}
		wire := chat.WireMode(m)
		if wire == "" || wire == "plan" {
			return nil, fmt.Errorf("chat_permission: accept_plan_mode must be one of %s but plan (got %q)", modeList(), m)
		}
		perms := []chat.PermissionUpdate{{Type: "setMode", Mode: wire, Destination: "session"}}
		err = ch.finish(p, "allow", "user", func(s *chat.Session) error { return s.Allow(p.req.RequestID, rawOrEmpty(p.req.Input), perms) })
	case p.kind == "question":
		var m map[string]any
		if json.Unmarshal(p.req.Input, &m) != nil || m == nil {
			m = map[string]any{}
		}
		m["answers"] = a.Answers
		in, _ := json.Marshal(m)
		err = ch.finish(p, "allow", "user", func(s *chat.Session) error { return s.Allow(p.req.RequestID, in, nil) })
	default:
		if refused, rerr := ch.refuseInPlan(p); refused {
			err = rerr
			break
		}
		perms, perr := scopePerms(p.req, a.Scope)
		if perr != nil {
			return nil, fmt.Errorf("chat_permission: %w", perr)
		}
		if path := chat.EditPath(p.req.ToolName, p.req.Input); path != "" {
			ch.checkpoint(path)
		}
		err = ch.finish(p, "allow", "user", func(s *chat.Session) error { return s.Allow(p.req.RequestID, rawOrEmpty(p.req.Input), perms) })
	}
	if err != nil {
		return nil, fmt.Errorf("chat_permission: %w", err)
	}
	return map[string]any{}, nil
}

// decideDiff answers a diff-backed request from the chat: allow accepts
// the diff with the proposal buffer as Lua sent it (the proposal unchanged
// when it sent none); deny rejects it. The review goroutine then answers
// the CLI.
func (ch *chatProc) decideDiff(ctx context.Context, p *chatPerm, a permParams) (any, error) {
	ans := verdict.Verdict{Text: verdict.Rejected}
	if a.Behavior == "allow" {
		text := p.proposal
		if a.Proposal != nil {
			text = *a.Proposal
		}
		ans = verdict.Verdict{Text: verdict.Accepted, Contents: text}
	}
	p.mu.Lock()
	p.scope, p.denyMsg, p.byUser = a.Scope, a.Message, true
	p.mu.Unlock()
	if !ch.c.peers.Review.DecideOwned(ctx, ch.owner(), p.tabName, ans) {
		return nil, fmt.Errorf("chat_permission: the diff for %s is no longer open", p.path)
	}
	return map[string]any{}, nil
}

func (ch *chatProc) onPermissionCancel(e chat.PermissionCancelEvent) {
	p := ch.take(e.RequestID)
	if p == nil {
		return
	}
	p.stop()
	ch.push("permission_done", map[string]any{"request_id": e.RequestID, "behavior": "deny", "by": "cli_cancelled"})
}

// editedNote tells the model that the user changed its proposal before
// accepting it (the CLI does not: STREAM-JSON.md §10.4).
func editedNote(path, proposal, accepted string) string {
	return "Note: I edited your proposed change to " + path + " before accepting it, so the file does not hold " +
		"exactly what you proposed. It now holds my version. Changes from your proposal to what was written:\n" +
		"```diff\n" + unifiedDiff(proposal, accepted, 60) + "```\n" +
		"Work from the file as it is now (re-read it before editing it again)."
}

// unifiedDiff is a short line diff of a → b with one line of context,
// cut after max lines.
func unifiedDiff(a, b string, max int) string {
	al, bl := splitLines(a), splitLines(b)
	if len(al)*len(bl) > 4_000_000 {
		return "(the file is too large for a diff here)\n"
	}
	// LCS table.
	n, m := len(al), len(bl)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max32(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		k    byte
		text string
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', al[i]})
			i++
		default:
			ops = append(ops, op{'+', bl[j]})
			j++
		}
	}
	var sb strings.Builder
	lines := 0
	gap := false
	for k, o := range ops {
		near := o.k != ' ' || (k > 0 && ops[k-1].k != ' ') || (k+1 < len(ops) && ops[k+1].k != ' ')
		if !near {
			gap = true
			continue
		}
		if gap && lines > 0 {
			sb.WriteString("@@\n")
		}
		gap = false
		if lines >= max {
			sb.WriteString("… (more changes)\n")
			break
		}
		sb.WriteByte(o.k)
		sb.WriteString(o.text)
		sb.WriteByte('\n')
		lines++
	}
	return sb.String()
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// What a permission prompt shows must be what a key press allows. The
// input is shown whole, each line made displayable, runs of blank lines
// collapsed into a line that says so; an input longer than these limits
// does not fit, is shown as its start and its end, and Lua refuses to
// allow it from the chat (fits false).
const (
	permLineMax  = 500 // characters of one line of the input
	permLinesMax = 150 // shown lines of the input
	permEndLines = 20  // of an input that does not fit: lines shown of each end
)

// permView is a permission request as the chat (and the sessions panel)
// shows it.
type permView struct {
	summary string   // one line: tool and input, e.g. "Bash: a … b (82 lines)"
	body    []string // the input, displayable lines
	lines   int      // lines of the input's main text (a command: its lines)
	fits    bool     // body shows all of the input
}

// viewOf is the view of a request of kind (edits, plans and questions
// show their input their own way: body empty, fits true).
func viewOf(e chat.PermissionRequestEvent, kind, cwd string) permView {
	v := permView{summary: summaryOf(e.ToolName, e.Input, cwd), fits: true}
	switch kind {
	case "bash":
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(e.Input, &in)
		cmd := strings.TrimRight(strings.ReplaceAll(in.Command, "\r\n", "\n"), "\n")
		v.lines = strings.Count(cmd, "\n") + 1
		shown, fits := textView(cmd)
		for i, l := range shown {
			if i == 0 {
				v.body = append(v.body, "$ "+l)
			} else {
				v.body = append(v.body, "  "+l)
			}
		}
		if v.lines > 1 {
			v.body = append([]string{fmt.Sprintf("(a command of %d lines)", v.lines)}, v.body...)
		}
		v.fits = fits
	case "other":
		var in map[string]json.RawMessage
		if json.Unmarshal(e.Input, &in) != nil {
			break
		}
		keys := make([]string, 0, len(in))
		for k := range in {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var s string
			if json.Unmarshal(in[k], &s) != nil {
				s = string(in[k])
			}
			shown, fits := textView(s)
			v.fits = v.fits && fits
			if len(shown) == 1 {
				v.body = append(v.body, display.Line(k, 80)+": "+shown[0])
				continue
			}
			v.body = append(v.body, display.Line(k, 80)+":")
			for _, l := range shown {
				v.body = append(v.body, "  "+l)
			}
		}
	}
	if e.Description != "" && kind != "plan" {
		// The model's own words about the call, beside (never instead
		// of) the call itself.
		for i, l := range display.Lines(e.Description, permLineMax, 10) {
			if i == 0 {
				l = "Claude says: " + l
			} else {
				l = "  " + l
			}
			v.body = append(v.body, l)
		}
	}
	if !v.fits {
		v.body = append(v.body, "(too long to show in full here: it cannot be allowed from the chat)")
	}
	return v
}

// textView is s as displayable lines (blank runs collapsed, visibly) and
// whether they show all of it; what does not fit is shown as its first
// and last lines around a line saying how many are left out.
func textView(s string) ([]string, bool) {
	fits := true
	for _, l := range strings.Split(s, "\n") {
		if utf8.RuneCountInString(l) > permLineMax {
			fits = false
			break
		}
	}
	lines := display.Lines(s, permLineMax, 0)
	if len(lines) > permLinesMax {
		fits = false
		left := len(lines) - 2*permEndLines
		cut := append([]string{}, lines[:permEndLines]...)
		cut = append(cut, fmt.Sprintf("⋮ %d lines not shown", left))
		lines = append(cut, lines[len(lines)-permEndLines:]...)
	}
	return lines, fits
}

// summaryOf is a tool call's one-line summary, displayable.
func summaryOf(tool string, input json.RawMessage, cwd string) string {
	return display.Line(chat.RelSummary(tool, input, cwd), 240)
}
