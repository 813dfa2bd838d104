package diff

import (
	"context"

	"github.com/nvim-claude/nvim-claude/verdict"
)

// decideOwned ends the pending diff that owner opened under tabName as if
// the user had decided in Neovim: its review gets a, and its windows close.
// It reports whether such a diff was pending. The chat panel uses it when
// the user answers a diff-backed permission prompt from the chat.
func (c *Reviews) DecideOwned(ctx context.Context, owner, tabName string, a verdict.Verdict) bool {
	got := c.take(func(s *diffSession) bool { return s.client == owner && s.tabName == tabName })
	if len(got) == 0 {
		return false
	}
	ids := make([]string, len(got))
	for i, s := range got {
		s.resolve(a)
		ids[i] = s.id
	}
	outcome := "rejected"
	if a.Text == verdict.Accepted {
		outcome = "accepted"
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), diffCloseTimeout)
	defer cancel()
	if _, err := c.ed.CloseDiffs(ctx, ids, outcome); err != nil {
		c.log.Warn("close chat diff windows", "ids", ids, "err", err)
	}
	return true
}
