package diff

import (
	"context"
	"fmt"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/verdict"
)

func (c *Reviews) closeAllDiffTabsTool() mcp.Tool {
	return mcp.Tool{
		Name: "closeAllDiffTabs",
		Description: "Close every diff this client opened with openDiff (never the user's own diff windows). " +
			"Answers CLOSED_<n>_DIFF_TABS.",
		Handler: c.closeAllDiffTabs,
	}
}

// closeAllDiffTabs closes the caller's diffs. The CLI calls it at the start
// of every turn; a diff it still had pending then was abandoned, and gets a
// "no". Diffs of other connected CLIs are theirs to close.
func (c *Reviews) closeAllDiffTabs(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	closing := c.take(func(s *diffSession) bool { return s.client == req.Client.ID })
	for _, s := range closing {
		s.resolve(verdict.Verdict{Text: verdict.Rejected})
	}
	n := c.closeWindows(ctx, closing)
	return mcp.TextResult(fmt.Sprintf("CLOSED_%d_DIFF_TABS", n)), nil
}
