package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

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

// absPath makes p absolute by the one rule of every tool (a relative path
// is from the workspace root, a file:// URI is its path); the CLI sends
// absolute paths. openDiff only shows a proposal the CLI already holds, and
// the CLI asks its own permission for files outside its directory, so the
// path is not put through the boundary's refusals.
func (c *diffs) absPath(p string) (string, error) {
	root := c.app.ctx.root()
	if strings.HasPrefix(p, "file://") {
		if path, ok := uriPath(p, root); ok {
			return path, nil
		}
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("openDiff: the path %q contains a NUL byte", p)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	return filepath.Clean(p), nil
}
