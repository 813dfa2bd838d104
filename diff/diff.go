package diff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/verdict"
)

// Editor is what diff review (openDiff, close_tab, closeAllDiffTabs)
// needs from Neovim.
type Editor interface {
	// OpenDiff puts a diff on screen and returns; the user's decision comes
	// back as a nvimbridge.DiffDecisionMethod request.
	OpenDiff(ctx context.Context, req nvimbridge.DiffRequest) (nvimbridge.DiffView, error)
	// CloseDiffs closes diffs by id and reports how many were open.
	CloseDiffs(ctx context.Context, ids []string, outcome string) (int, error)
}

// Sessions tells which Claude session a diff's owner (a CLI's client id,
// a chat's owner key) is. The sessions feature knows; app wires it.
type Sessions interface {
	SessionOf(owner string) (nvimbridge.DiffSession, bool)
}

// How long Neovim may take to open a diff (a 5 MB proposal is one string
// and one nvim_buf_set_lines, but the diff itself takes a moment) and to
// close some.
const (
	diffOpenTimeout  = 60 * time.Second
	diffCloseTimeout = 10 * time.Second
)

// outcomeClosed is how the ClaudeDiffClosed event reports a diff the CLI
// (close_tab, closeAllDiffTabs, a cancel or a disconnect) ended.
const outcomeClosed = "closed"

// verdictResult is openDiff's answer for a verdict (PROTOCOL.md §4).
func verdictResult(a verdict.Verdict) *mcp.ToolResult {
	if a.Text == verdict.Accepted {
		return &mcp.ToolResult{Content: []mcp.Content{
			{Type: "text", Text: verdict.Accepted},
			{Type: "text", Text: a.Contents},
		}}
	}
	return mcp.TextResult(a.Text)
}

// diffSession is one openDiff waiting for its answer. Its windows are open
// while it is in diffs.open.
type diffSession struct {
	id      string
	tabName string
	client  string // the connection that asked: it alone gets the answer
	file    string
	answer  chan verdict.Verdict // buffered 1: the first answer wins
	// shown: Neovim has opened its windows and the review, finding it
	// still pending, waits for its answer; whoever ends it from then on
	// closes them (guarded by Reviews.mu).
	shown bool
}

// resolve hands the session its answer unless it has one already.
func (s *diffSession) resolve(a verdict.Verdict) bool {
	select {
	case s.answer <- a:
		return true
	default:
		return false
	}
}

// Reviews is the diff review feature: openDiff, close_tab,
// closeAllDiffTabs, the decisions Lua reports, and Review for any other
// feature that wants the user's verdict on a proposed file.
type Reviews struct {
	h   host.Host
	ed  Editor
	log *slog.Logger
	// sessions names a diff's session; nil until SetSessions.
	sessions Sessions

	mu   sync.Mutex
	seq  uint64
	open map[string]*diffSession // by id
}

// New makes the diff review feature.
func New(h host.Host, ed Editor) *Reviews {
	return &Reviews{h: h, ed: ed, log: h.Logger().With("feature", "diff"), open: map[string]*diffSession{}}
}

// SetSessions gives the review what tells each diff's session (before the
// feature starts).
func (c *Reviews) SetSessions(s Sessions) { c.sessions = s }

// sessionOf is owner's session, or nil when unknown.
func (c *Reviews) sessionOf(owner string) *nvimbridge.DiffSession {
	if c.sessions == nil || owner == "" {
		return nil
	}
	if s, ok := c.sessions.SessionOf(owner); ok {
		return &s
	}
	return nil
}

// Name names the feature.
func (c *Reviews) Name() string { return "diff" }

// Hooks are the feature's tools and Lua handlers.
func (c *Reviews) Hooks() host.Hooks {
	return host.Hooks{
		Tools: c.tools,
		LuaRequests: map[string]host.LuaRequest{
			nvimbridge.DiffDecisionMethod: c.handleDecision,
		},
	}
}

func (c *Reviews) tools() []mcp.Tool {
	return []mcp.Tool{c.openDiffTool(), c.closeTabTool(), c.closeAllDiffTabsTool()}
}

// add registers a new session for client.
func (c *Reviews) add(client, tabName, file string) *diffSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	s := &diffSession{
		id:      fmt.Sprintf("diff-%d", c.seq),
		tabName: tabName,
		client:  client,
		file:    file,
		answer:  make(chan verdict.Verdict, 1),
	}
	c.open[s.id] = s
	return s
}

// take removes the sessions that match and returns them; whoever takes a
// session closes its windows.
func (c *Reviews) take(match func(*diffSession) bool) []*diffSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*diffSession
	for id, s := range c.open {
		if match(s) {
			out = append(out, s)
			delete(c.open, id)
		}
	}
	return out
}

func (c *Reviews) takeID(id string) *diffSession {
	if got := c.take(func(s *diffSession) bool { return s.id == id }); len(got) == 1 {
		return got[0]
	}
	return nil
}

// closeWindows closes the sessions' diffs in Neovim and reports how many
// were still open there.
func (c *Reviews) closeWindows(ctx context.Context, sessions []*diffSession) int {
	if len(sessions) == 0 {
		return 0
	}
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.id
	}
	// The caller's request may be ending; the windows must close anyway.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), diffCloseTimeout)
	defer cancel()
	n, err := c.ed.CloseDiffs(ctx, ids, outcomeClosed)
	if err != nil {
		c.log.Warn("close diff windows", "ids", ids, "err", err)
		return len(ids)
	}
	return n
}

// closeLater closes the session's windows without waiting: its request is
// ending (the CLI left or cancelled) and must not wait on Neovim.
func (c *Reviews) closeLater(s *diffSession) {
	c.h.Emit("diff.close", map[string]any{"ids": []string{s.id}, "outcome": outcomeClosed})
}

// handleDecision receives the user's accept or reject from Lua and tells
// it whether the diff was still pending: when it was not (the CLI
// cancelled it, or close_tab or closeAllDiffTabs ended it before Lua
// learned it), the user is told that nothing will be written.
func (c *Reviews) handleDecision(ctx context.Context, raw json.RawMessage) (any, error) {
	d, err := nvimbridge.DecodeDiffDecision(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("diff_decision: bad parameters: %w", err)
	}
	if d.ID == "" {
		return nil, errors.New("diff_decision: id is required")
	}
	var a verdict.Verdict
	switch d.Decision {
	case "accept":
		if d.Contents == nil {
			return nil, fmt.Errorf("diff_decision: accept of %s without contents", d.ID)
		}
		a = verdict.Verdict{Text: verdict.Accepted, Contents: *d.Contents}
	case "reject":
		a = verdict.Verdict{Text: verdict.Rejected}
	default:
		return nil, fmt.Errorf("diff_decision: unknown decision %q for %s", d.Decision, d.ID)
	}
	// Lua closes its own windows after a decision.
	s := c.takeID(d.ID)
	if s == nil {
		c.log.Info("diff_decision for a diff no longer pending", "id", d.ID, "decision", d.Decision)
		return nvimbridge.DiffDecisionReply{Pending: false}, nil
	}
	s.resolve(a)
	c.log.Info("diff decided", "id", s.id, "tab", s.tabName, "file", s.file, "answer", a.Text)
	return nvimbridge.DiffDecisionReply{Pending: true}, nil
}

// markShown records that s's windows are open and reports whether s still
// waits for its answer (nobody took it); if not, it was ended while its
// windows were opening and they are the caller's to close.
func (c *Reviews) markShown(s *diffSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[s.id] != s {
		return false
	}
	s.shown = true
	return true
}
