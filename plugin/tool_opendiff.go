package plugin

import (
	"context"
	"encoding/json"
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

// openDiffArgs are openDiff's arguments. They are read with
// ToolRequest.StringArg rather than decodeArgs: new_file_contents is a
// whole file, and this way the request is read once, not three times.
type openDiffArgs struct {
	OldFilePath     string
	NewFilePath     string
	NewFileContents string
	TabName         string
}

func decodeOpenDiffArgs(req *mcp.ToolRequest) (openDiffArgs, error) {
	var a openDiffArgs
	fields := []struct {
		name     string
		dst      *string
		required bool
	}{
		{"old_file_path", &a.OldFilePath, false},
		{"new_file_path", &a.NewFilePath, true},
		{"new_file_contents", &a.NewFileContents, true},
		{"tab_name", &a.TabName, false},
	}
	for _, f := range fields {
		s, ok, err := req.StringArg(f.name)
		if err != nil {
			return a, err
		}
		if f.required && (!ok || f.name == "new_file_path" && s == "") {
			return a, fmt.Errorf("%s is required", f.name)
		}
		*f.dst = s
	}
	return a, nil
}

// openDiff blocks until the user decides, close_tab or closeAllDiffTabs
// ends the diff, or the request ends (the CLI cancelled it or left).
func (c *diffs) openDiff(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	a, err := decodeOpenDiffArgs(req)
	if err != nil {
		return nil, fmt.Errorf("openDiff: %w", err)
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
		oldPath: oldPath, newPath: newPath, contents: a.NewFileContents,
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
