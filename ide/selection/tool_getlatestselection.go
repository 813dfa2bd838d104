package selection

import (
	"context"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// getLatestSelectionTool is the VS Code extension's getLatestSelection: the
// selection last shared, even from a file that is no longer active. A
// debounced update still pending is made first, so the answer matches what
// the CLIs are sent.
func (c *Tracker) getLatestSelectionTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getLatestSelection",
		Description: "Get the most recent text selection (or cursor position) shared by Neovim, even if it is in a file that is no longer active",
		InputSchema: []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			if !c.isSharing() {
				return mcp.JSONResult(selFailure(selSharingOffMessage))
			}
			c.flush(ctx)
			p, ok := c.latest()
			if !ok {
				return mcp.JSONResult(selFailure("No selection available"))
			}
			return mcp.JSONResult(selSuccess(p))
		},
	}
}
