package selection

import (
	"context"
	"fmt"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// CurrentSelectionTool is the VS Code extension's getCurrentSelection:
// the selection (or cursor) in the active editor — the current window if it
// shows a file, else the file window used last, since the Claude terminal
// usually has the focus when a client asks.
func (c *Tracker) CurrentSelectionTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getCurrentSelection",
		Description: "Get the current text selection (or cursor position) in the active editor in Neovim",
		InputSchema: []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			if !c.isSharing() {
				return mcp.JSONResult(selFailure(selSharingOffMessage))
			}
			st, err := c.ed.CurrentSelection(ctx)
			if err != nil {
				return nil, fmt.Errorf("could not read the selection from Neovim: %w", err)
			}
			c.judge(&st)
			switch st.Kind {
			case nvimbridge.SelectionKindSelection:
				return mcp.JSONResult(selSuccess(selPayload{
					Text:      st.Text,
					FilePath:  st.Path,
					FileURL:   selFileURL(st.Path),
					Selection: selRange{Start: selPos(st.Start), End: selPos(st.End), IsEmpty: st.Empty},
				}))
			case nvimbridge.SelectionKindDenied:
				return mcp.JSONResult(selFailure(selDeniedMessage(st.Path)))
			}
			return mcp.JSONResult(selFailure("No active editor found"))
		},
	}
}
