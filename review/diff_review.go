package review

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// reviewRequest is one proposal to put before the user as a diff.
type reviewRequest struct {
	owner    string // who asked: a CLI's client id, or a chat's owner key
	tabName  string // the diff's name; the same owner and name replace an older diff
	oldPath  string // the file as it is now
	newPath  string // the file the proposal is for (may not exist yet)
	contents string // the proposed text
}

// review shows r as a diff and blocks until the user decides, close_tab or
// closeAllDiffTabs ends it, or ctx ends (the caller cancelled or left; the
// windows then close). It serves openDiff and any other caller that wants
// the user's verdict on a proposed file (the chat's permission prompts,
// code actions).
func (c *diffs) review(ctx context.Context, r reviewRequest) (diffAnswer, error) {
	// The same name again from the same owner replaces the older diff; its
	// caller gets a "no", never a silent yes.
	superseded := c.take(func(s *diffSession) bool { return s.client == r.owner && s.tabName == r.tabName })
	for _, s := range superseded {
		s.resolve(diffAnswer{text: answerRejected})
	}
	c.closeWindows(ctx, superseded)

	s := c.add(r.owner, r.tabName, r.newPath)
	openCtx, cancel := context.WithTimeout(ctx, diffOpenTimeout)
	large := len(r.contents) >= 1<<20
	view, err := c.app.ed.OpenDiff(openCtx, nvimbridge.DiffRequest{
		ID:       s.id,
		TabName:  r.tabName,
		OldPath:  r.oldPath,
		NewPath:  r.newPath,
		Contents: r.contents,
	})
	cancel()
	r.contents = "" // Neovim has it; the wait for the user may be long
	if large {
		// The request that carried the proposal and its decoded text are
		// garbage now: without this, the answer's buffers would pile on
		// top of them and the host's peak would be twice what it needs.
		debug.FreeOSMemory()
	}
	if err != nil {
		if c.takeID(s.id) != nil {
			c.closeLater(s) // whatever Neovim managed to open
		}
		if ctx.Err() != nil {
			return diffAnswer{}, ctx.Err()
		}
		return diffAnswer{}, fmt.Errorf("openDiff: Neovim could not show the diff for %s: %w", r.newPath, err)
	}
	c.app.log.Info("diff opened", "id", s.id, "tab", r.tabName, "file", r.newPath,
		"proposal_buf", view.ProposalBuf, "modified", view.Modified, "new_file", view.NewFile)
	if !c.pending(s.id) {
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
		return diffAnswer{}, ctx.Err()
	}
}
