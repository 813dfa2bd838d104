package diff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/verdict"
)

var closeTabSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"tab_name":{"type":"string","description":"The tab_name openDiff was given"}},"required":["tab_name"]}`)

func (c *Reviews) closeTabTool() mcp.Tool {
	return mcp.Tool{
		Name: "close_tab",
		Description: "Close the diff openDiff opened under tab_name; a diff still waiting for the user " +
			"is answered TAB_CLOSED (the CLI decided). Answers TAB_CLOSED, also when nothing was open.",
		InputSchema: closeTabSchema,
		Handler:     c.closeTab,
	}
}

// closeTab ends the caller's diffs named tab_name. The CLI sends it after
// every decision (usually twice) and when the user answered in its terminal
// first: then the pending openDiff gets TAB_CLOSED and the terminal's answer
// stands.
func (c *Reviews) closeTab(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	var a struct {
		TabName *string `json:"tab_name"`
	}
	if err := mcp.DecodeArgs(req.Arguments, &a); err != nil {
		return nil, fmt.Errorf("close_tab: %w", err)
	}
	if a.TabName == nil || *a.TabName == "" {
		return nil, errors.New("close_tab: tab_name is required")
	}
	closing := c.take(func(s *diffSession) bool { return s.client == req.Client.ID && s.tabName == *a.TabName })
	for _, s := range closing {
		s.resolve(verdict.Verdict{Text: verdict.Closed})
	}
	c.closeWindows(ctx, closing)
	return mcp.TextResult(verdict.Closed), nil
}
