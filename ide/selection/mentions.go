package selection

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
)

// mentionDefaultTimeout is how long a mention waits for a CLI to connect
// before the user is told it was not delivered.
const mentionDefaultTimeout = 30 * time.Second

// mention is at_mentioned's params: the CLI inserts
// "@<path relative to its cwd>#L<start+1>-<end+1> " into its prompt box.
// Lines are 0-based; both or neither are present.
type mention struct {
	FilePath  string `json:"filePath"`
	LineStart *int   `json:"lineStart,omitempty"`
	LineEnd   *int   `json:"lineEnd,omitempty"`
}

// queuedMention waits for a CLI until deadline.
type queuedMention struct {
	m        mention
	deadline time.Time
	timeout  time.Duration // how long it was given
}

// mentionRequest is what Lua's :ClaudeSend / :ClaudeAdd send.
type mentionRequest struct {
	Mentions []mention `json:"mentions"`
	// TimeoutMS overrides mentionDefaultTimeout (tests use a short one).
	TimeoutMS *float64 `json:"timeout_ms"`
}

// mentionReply tells Lua what became of the mentions.
type mentionReply struct {
	Delivered int `json:"delivered"` // CLIs that received them now
	Queued    int `json:"queued"`    // mentions now waiting for a CLI
}

func (m mention) validate() error {
	if m.FilePath == "" {
		return errors.New("a mention needs a filePath")
	}
	if !filepath.IsAbs(m.FilePath) {
		return fmt.Errorf("mention path %q is not absolute", m.FilePath)
	}
	if (m.LineStart == nil) != (m.LineEnd == nil) {
		return fmt.Errorf("mention of %s: give both lineStart and lineEnd, or neither", m.FilePath)
	}
	if m.LineStart != nil && (*m.LineStart < 0 || *m.LineEnd < *m.LineStart) {
		return fmt.Errorf("mention of %s: bad line range %d-%d", m.FilePath, *m.LineStart, *m.LineEnd)
	}
	return nil
}

// handleMention delivers mentions to the connected CLIs, or queues them
// until one connects.
func (c *Tracker) handleMention(_ context.Context, req mentionRequest) (any, error) {
	if len(req.Mentions) == 0 {
		return nil, errors.New("mention: nothing to send")
	}
	for _, m := range req.Mentions {
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("mention: %w", err)
		}
		if c.h.Workspace().Denied(m.FilePath) {
			return nil, fmt.Errorf("%s matches security.deny: files on the deny-list are not sent to Claude", filepath.Base(m.FilePath))
		}
	}
	// A Claude elsewhere names files its own way; one outside the
	// far↔local mapping is refused, naming it.
	for i := range req.Mentions {
		far, err := c.h.Workspace().Far(req.Mentions[i].FilePath)
		if err != nil {
			return nil, fmt.Errorf("mention: %w", err)
		}
		req.Mentions[i].FilePath = far
	}
	timeout := mentionDefaultTimeout
	if req.TimeoutMS != nil && *req.TimeoutMS > 0 {
		timeout = time.Duration(*req.TimeoutMS * float64(time.Millisecond))
	}
	if !c.h.Running() {
		return nil, host.ErrNotRunning
	}

	c.mu.Lock()
	if len(c.ready) == 0 {
		// No CLI can take it yet (none connected, or one connected but
		// not yet greeted). Checked and queued under c.mu, as greet marks
		// a CLI ready and takes the queue under it.
		n := c.enqueue(req.Mentions, timeout)
		c.mu.Unlock()
		c.post(selEvent{kind: selMentions})
		return mentionReply{Queued: n}, nil
	}
	c.mu.Unlock()

	delivered := 0
	for _, m := range req.Mentions {
		if n := c.sendMention(m); n > delivered {
			delivered = n
		}
	}
	if delivered == 0 {
		// The CLI left between the check and the send.
		c.mu.Lock()
		n := c.enqueue(req.Mentions, timeout)
		c.mu.Unlock()
		c.post(selEvent{kind: selMentions})
		return mentionReply{Queued: n}, nil
	}
	c.h.Emit("mentions.sent", map[string]any{"mentions": req.Mentions})
	return mentionReply{Delivered: delivered}, nil
}

// enqueue must be called with c.mu held; it returns the queue's length.
func (c *Tracker) enqueue(ms []mention, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for _, m := range ms {
		c.queue = append(c.queue, queuedMention{m: m, deadline: deadline, timeout: timeout})
	}
	return len(c.queue)
}

// takeQueue must be called with c.mu held.
func (c *Tracker) takeQueue() []mention {
	if len(c.queue) == 0 {
		return nil
	}
	out := make([]mention, len(c.queue))
	for i, q := range c.queue {
		out[i] = q.m
	}
	c.queue = nil
	return out
}

// deliverQueued sends the queued mentions to a CLI that just connected.
// Any it could not take go back to the user as undelivered.
func (c *Tracker) deliverQueued(clientID string, ms []mention) {
	if len(ms) == 0 {
		return
	}
	var sent, lost []mention
	for _, m := range ms {
		if c.notifyClient(clientID, "at_mentioned", m) {
			sent = append(sent, m)
		} else {
			lost = append(lost, m)
		}
	}
	if len(sent) > 0 {
		c.h.Emit("mentions.sent", map[string]any{"mentions": sent})
	}
	c.reportUndelivered(lost, undeliveredFailed, 0)
}

// armExpiry points t at the earliest deadline in the queue (run's timer).
func (c *Tracker) armExpiry(t *time.Timer) {
	c.mu.Lock()
	var next time.Time
	for _, q := range c.queue {
		if next.IsZero() || q.deadline.Before(next) {
			next = q.deadline
		}
	}
	c.mu.Unlock()
	selStopTimer(t)
	if !next.IsZero() {
		t.Reset(time.Until(next))
	}
}

// expireMentions gives up on mentions whose deadline has passed, and on
// those due within a moment (a :ClaudeSend right after another), so the
// user gets one message for them.
func (c *Tracker) expireMentions(now time.Time) {
	c.mu.Lock()
	var lost []mention
	var timeout time.Duration
	kept := c.queue[:0]
	for _, q := range c.queue {
		slack := q.timeout / 4
		if slack > time.Second {
			slack = time.Second
		}
		if q.deadline.After(now.Add(slack)) {
			kept = append(kept, q)
		} else {
			lost = append(lost, q.m)
			timeout = q.timeout
		}
	}
	c.queue = kept
	c.mu.Unlock()
	c.reportUndelivered(lost, undeliveredTimeout, timeout)
}

// Why mentions were not delivered (mentions.undelivered's reason).
const (
	undeliveredTimeout = "timeout" // no CLI connected in time
	undeliveredStopped = "stopped" // the IDE server stopped
	undeliveredFailed  = "failed"  // the CLI that connected could not take them
)

// reportUndelivered tells the user (Lua's mentions module words the
// message) which mentions no CLI received.
func (c *Tracker) reportUndelivered(ms []mention, reason string, timeout time.Duration) {
	if len(ms) == 0 {
		return
	}
	c.h.Emit("mentions.undelivered", map[string]any{"mentions": ms, "reason": reason, "timeout_ms": timeout.Milliseconds()})
}
