package diff

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/verdict"
)

// review shows r as a diff and blocks until the user decides, close_tab or
// closeAllDiffTabs ends it, or ctx ends (the caller cancelled or left; the
// windows then close). It serves openDiff and any other caller that wants
// the user's verdict on a proposed file (the chat's permission prompts,
// code actions).
func (c *Reviews) Review(ctx context.Context, r verdict.Request) (verdict.Verdict, error) {
	return c.Begin(r).Wait(ctx)
}

// A proposal of a MiB or more leaves garbage (the request that carried it,
// its decoded text) that is collected once Neovim has it, while the user
// reads the diff, so that the accept does not pay for that collection.
// From largeProposal on, the memory also goes back to the system (the
// host's peak stays bounded); below it the memory stays with the process:
// memory given back is memory the accept's answer must touch afresh, which
// cost a 1 MB accept more than its own work.
const (
	collectProposal = 1 << 20
	largeProposal   = 8 << 20
)

// pendingReview is a registered review whose diff Wait shows.
type pendingReview struct {
	c          *Reviews
	s          *diffSession
	superseded []*diffSession
	r          verdict.Request
}

// Begin registers r at once, without blocking (DecideOwned finds it from
// now on), and returns what shows it and waits for the verdict. Wait must
// be called.
func (c *Reviews) Begin(r verdict.Request) verdict.Pending {
	// The same name again from the same owner replaces the older diff; its
	// caller gets a "no", never a silent yes.
	superseded := c.take(func(s *diffSession) bool { return s.client == r.Owner && s.tabName == r.TabName })
	for _, s := range superseded {
		s.resolve(verdict.Verdict{Text: verdict.Rejected})
	}
	return &pendingReview{c: c, s: c.add(r.Owner, r.TabName, r.NewPath), superseded: superseded, r: r}
}

// Wait closes the windows of the diffs this one replaced, shows this one
// and blocks until the user decides, close_tab or closeAllDiffTabs ends it,
// or ctx ends.
func (p *pendingReview) Wait(ctx context.Context) (verdict.Verdict, error) {
	c, s, r := p.c, p.s, p.r
	p.r.Contents = ""
	c.closeWindows(ctx, p.superseded)
	openCtx, cancel := context.WithTimeout(ctx, diffOpenTimeout)
	size := len(r.Contents)
	view, err := c.ed.OpenDiff(openCtx, nvimbridge.DiffRequest{
		ID:       s.id,
		TabName:  r.TabName,
		OldPath:  r.OldPath,
		NewPath:  r.NewPath,
		Contents: r.Contents,
		Owner:    r.Owner,
		Session:  c.sessionOf(r.Owner),
	})
	cancel()
	r.Contents = "" // Neovim has it; the wait for the user may be long
	switch {
	case size >= largeProposal:
		// The request that carried the proposal and its decoded text are
		// garbage now: without this, the answer's buffers would pile on
		// top of them and the host's peak would be twice what it needs.
		debug.FreeOSMemory()
	case size >= collectProposal:
		runtime.GC()
	}
	if err != nil {
		if c.takeID(s.id) != nil {
			c.closeLater(s) // whatever Neovim managed to open
		}
		if ctx.Err() != nil {
			return verdict.Verdict{}, ctx.Err()
		}
		return verdict.Verdict{}, fmt.Errorf("openDiff: Neovim could not show the diff for %s: %w", r.NewPath, err)
	}
	c.log.Info("diff opened", "id", s.id, "tab", r.TabName, "file", r.NewPath,
		"proposal_buf", view.ProposalBuf, "modified", view.Modified, "new_file", view.NewFile)
	if !c.markShown(s) {
		// close_tab or closeAllDiffTabs ended the session while Neovim was
		// still opening its windows: their close found nothing to close,
		// so these windows are ours to close (closing twice is harmless).
		c.closeWindows(ctx, []*diffSession{s})
	}

	select {
	case ans := <-s.answer:
		return ans, nil
	case <-ctx.Done():
		// The caller cancelled or left: nobody reads the answer now.
		if c.takeID(s.id) != nil {
			c.closeLater(s)
		}
		return verdict.Verdict{}, ctx.Err()
	}
}
