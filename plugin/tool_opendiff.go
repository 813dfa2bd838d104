package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/nvim-claude/nvim-claude/mcp"
)

var openDiffSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"old_file_path":{"type":"string","description":"Path of the file as it is now (absolute)"},` +
	`"new_file_path":{"type":"string","description":"Path the proposed contents are for (absolute; may not exist yet)"},` +
	`"new_file_contents":{"type":"string","description":"The proposed contents of the file"},` +
	`"tab_name":{"type":"string","description":"Name of the diff; close_tab takes it"}},` +
	`"required":["new_file_path","new_file_contents"]}`)

func (c *diffs) openDiffTool() mcp.Tool {
	return mcp.Tool{
		Name: "openDiff",
		Description: "Show a proposed edit as a diff in Neovim and wait for the user: " +
			"FILE_SAVED followed by the final contents (the user may have edited them) when accepted, " +
			"DIFF_REJECTED when rejected, TAB_CLOSED when close_tab ended it.",
		InputSchema: openDiffSchema,
		Handler:     c.openDiff,
	}
}

type openDiffArgs struct {
	OldFilePath     string  `json:"old_file_path"`
	NewFilePath     string  `json:"new_file_path"`
	NewFileContents *string `json:"new_file_contents"`
	TabName         string  `json:"tab_name"`
}

// openDiff blocks until the user decides, close_tab or closeAllDiffTabs
// ends the diff, or the request ends (the CLI cancelled it or left).
func (c *diffs) openDiff(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	var a openDiffArgs
	if err := decodeArgs(req.Arguments, &a); err != nil {
		return nil, fmt.Errorf("openDiff: %w", err)
	}
	if a.NewFilePath == "" {
		return nil, errors.New("openDiff: new_file_path is required")
	}
	if a.NewFileContents == nil {
		return nil, errors.New("openDiff: new_file_contents is required")
	}
	newPath, err := c.absPath(a.NewFilePath)
	if err != nil {
		return nil, err
	}
	oldPath := newPath
	if a.OldFilePath != "" {
		if oldPath, err = c.absPath(a.OldFilePath); err != nil {
			return nil, err
		}
	}
	tabName := a.TabName
	if tabName == "" {
		tabName = "[Claude Code] " + filepath.Base(newPath)
	}
	ans, err := c.review(ctx, reviewRequest{
		owner: req.Client.ID, tabName: tabName,
		oldPath: oldPath, newPath: newPath, contents: *a.NewFileContents,
	})
	if err != nil {
		return nil, err
	}
	return ans.result(), nil
}

// absPath makes p absolute; a relative path is taken from the workspace.
func (c *diffs) absPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	root := c.app.workspaceDir()
	if root == "" {
		return "", fmt.Errorf("openDiff: %q is not an absolute path", p)
	}
	return filepath.Join(root, p), nil
}
