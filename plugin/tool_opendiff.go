package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

var openDiffSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"old_file_path":{"type":"string","description":"Path of the file as it is now (absolute)"},` +
	`"new_file_path":{"type":"string","description":"Path the proposed contents are for (absolute; may not exist yet)"},` +
	`"new_file_contents":{"type":"string","description":"The proposed contents of the file"},` +
	`"tab_name":{"type":"string","description":"Name of the diff; close_tab takes it"}},` +
	`"required":["old_file_path","new_file_path","new_file_contents","tab_name"]}`)

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
	if err := json.Unmarshal(req.Arguments, &a); err != nil {
		return nil, fmt.Errorf("openDiff: bad arguments: %w", err)
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

	// The same name again from the same CLI replaces the older diff; its
	// request gets a "no", never a silent yes.
	superseded := c.take(func(s *diffSession) bool { return s.client == req.Client.ID && s.tabName == tabName })
	for _, s := range superseded {
		s.resolve(diffAnswer{text: answerRejected})
	}
	c.closeWindows(ctx, superseded)

	s := c.add(req.Client.ID, tabName, newPath)
	openCtx, cancel := context.WithTimeout(ctx, diffOpenTimeout)
	view, err := c.app.ed.OpenDiff(openCtx, nvimbridge.DiffRequest{
		ID:       s.id,
		TabName:  tabName,
		OldPath:  oldPath,
		NewPath:  newPath,
		Contents: *a.NewFileContents,
	})
	cancel()
	if err != nil {
		if c.takeID(s.id) != nil {
			c.closeLater(s) // whatever Neovim managed to open
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("openDiff: Neovim could not show the diff for %s: %w", newPath, err)
	}
	c.app.log.Info("diff opened", "id", s.id, "tab", tabName, "file", newPath,
		"proposal_buf", view.ProposalBuf, "modified", view.Modified, "new_file", view.NewFile)
	if !c.pending(s.id) {
		// close_tab or closeAllDiffTabs ended the session while Neovim was
		// still opening its windows: their close found nothing to close,
		// so these windows are ours to close (closing twice is harmless).
		c.closeWindows(ctx, []*diffSession{s})
	}

	select {
	case ans := <-s.answer:
		return ans.result(), nil
	case <-ctx.Done():
		// The CLI cancelled or disconnected: nobody reads the answer now.
		if c.takeID(s.id) != nil {
			c.closeLater(s)
		}
		return nil, ctx.Err()
	}
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
