package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/verdict"
	"github.com/nvim-claude/nvim-claude/workspace"
)

var openDiffSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"old_file_path":{"type":"string","description":"Path of the file as it is now (absolute)"},` +
	`"new_file_path":{"type":"string","description":"Path the proposed contents are for (absolute; may not exist yet)"},` +
	`"new_file_contents":{"type":"string","description":"The proposed contents of the file"},` +
	`"tab_name":{"type":"string","description":"Name of the diff; close_tab takes it"}},` +
	`"required":["new_file_path","new_file_contents"]}`)

func (c *Reviews) openDiffTool() mcp.Tool {
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
func (c *Reviews) openDiff(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	a, err := decodeOpenDiffArgs(req)
	if err != nil {
		return nil, fmt.Errorf("openDiff: %w", err)
	}
	newPath, err := c.diffPath(ctx, a.NewFilePath)
	if err != nil {
		return mcp.ErrorResult("openDiff: %v", err), nil
	}
	oldPath := newPath
	if a.OldFilePath != "" {
		if oldPath, err = c.diffPath(ctx, a.OldFilePath); err != nil {
			return mcp.ErrorResult("openDiff: %v", err), nil
		}
	}
	tabName := a.TabName
	if tabName == "" {
		tabName = "[Claude Code] " + filepath.Base(newPath)
	}
	ans, err := c.Review(ctx, verdict.Request{
		Owner: req.Client.ID, TabName: tabName,
		OldPath: oldPath, NewPath: newPath, Contents: a.NewFileContents,
	})
	if err != nil {
		return nil, err
	}
	return verdictResult(ans), nil
}

// diffPath makes p absolute by the one rule of every tool (a relative path
// is from the workspace root, a file:// URI is its path; the CLI sends
// absolute paths) and puts it through the boundary to be shown. A file
// outside the workspace folders is shown: the CLI edits those too, with its
// own consent, and the diff holds only its proposal. A deny-listed file is
// not (its text would sit in diff buffers whose names no deny-list
// matches, where the selection and the tools read), nor any file of a
// home-directory workspace. The real CLI answers such a refusal by keeping
// its own permission dialog in the terminal, so the user still decides
// there (internal/e2e/diff_boundary_cli_test.go).
func (c *Reviews) diffPath(ctx context.Context, p string) (string, error) {
	anyFile := func(context.Context, string) bool { return true } // outside: shown, as said above
	wp, err := c.h.Workspace().Check(ctx, p, workspace.Show, anyFile)
	if err != nil {
		return "", err
	}
	return wp.Abs, nil
}
