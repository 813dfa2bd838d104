package selection

// Router picks the CLIs a selection goes to when several run: with a
// session per git worktree, a selection in one worktree's file is that
// session's business, not every CLI's. app wires it (the sessions feature
// knows where each terminal's CLI runs).
type Router interface {
	// Route returns the ids of the connected CLIs a selection in the file
	// at path goes to; ok false when no rule applies, and then every CLI
	// gets it (a single CLI, CLIs started elsewhere).
	Route(path string) (ids []string, ok bool)
}

// SetRouter makes r decide the recipients of each selection from now on
// (nil: every CLI). app calls it before the IDE server starts.
func (c *Tracker) SetRouter(r Router) {
	c.mu.Lock()
	c.router = r
	c.mu.Unlock()
}

// recipients are the CLIs p goes to: ok false means every one.
func (c *Tracker) recipients(p selPayload) (ids []string, ok bool) {
	c.mu.Lock()
	r := c.router
	c.mu.Unlock()
	if r == nil || p.FilePath == "" {
		return nil, false
	}
	return r.Route(p.FilePath)
}

// sendSelection sends p to the CLIs it is for. c.sendMu is held.
func (c *Tracker) sendSelection(p selPayload) {
	ids, ok := c.recipients(p)
	if !ok {
		c.h.Broadcast("selection_changed", p)
		return
	}
	for _, id := range ids {
		c.notifyClient(id, "selection_changed", p)
	}
}

// routedAway reports whether p is for other CLIs than clientID.
func (c *Tracker) routedAway(clientID string, p selPayload) bool {
	ids, ok := c.recipients(p)
	if !ok {
		return false
	}
	for _, id := range ids {
		if id == clientID {
			return false
		}
	}
	return true
}

// sendMention sends m to the CLIs its file is for (every CLI when no rule
// applies) and returns how many took it.
func (c *Tracker) sendMention(m mention) int {
	ids, ok := c.recipients(selPayload{FilePath: m.FilePath})
	if !ok {
		return c.h.Broadcast("at_mentioned", m)
	}
	n := 0
	for _, id := range ids {
		if c.notifyClient(id, "at_mentioned", m) {
			n++
		}
	}
	return n
}
