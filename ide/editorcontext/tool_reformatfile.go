package editorcontext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// reformat_file {file_path} → "OK" or an error result (JetBrains set,
// PROTOCOL.md §6). The file is formatted by the first language server
// attached to its buffer that offers formatting, synchronously (the file is
// loaded, and its servers given a moment to attach, when it is not open).
// A buffer without unsaved changes is then written, so the file on disk is
// formatted; one with unsaved changes is formatted in the editor only, and
// the answer says so. No such server: an error result saying there is no
// formatter.

// formatTimeout bounds the language server's formatting request.
const formatTimeout = 3 * time.Second

func (c *Context) reformatFileTool() mcp.Tool {
	return mcp.Tool{
		Name:        "reformat_file",
		Description: "Reformat a file with the formatter of the language server attached to it",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file to reformat (absolute, or relative to the workspace root)"}},"required":["file_path"]}`),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			var args struct {
				FilePath string `json:"file_path"`
			}
			if err := mcp.DecodeArgs(req.Arguments, &args); err != nil {
				return nil, err
			}
			if args.FilePath == "" {
				return nil, errors.New("invalid arguments: file_path is required")
			}
			wp, err := c.CheckPath(ctx, args.FilePath, workspace.Show)
			if err != nil {
				return mcp.ErrorResult("%s", err.Error()), nil
			}
			path := wp.Abs
			if why := notOpenable(path, path); why != "" {
				return mcp.ErrorResult("%s", why), nil
			}
			// loading, attaching and formatting all happen in one call
			ectx, cancel := context.WithTimeout(ctx, formatTimeout+host.CallTimeout)
			defer cancel()
			res, err := c.ed.FormatDocument(ectx, path, formatTimeout)
			if err != nil {
				return nil, fmt.Errorf("reformat_file: %w", err)
			}
			if !res.OK {
				return mcp.ErrorResult("%s", res.Message), nil
			}
			if !res.Saved && res.Changed {
				return mcp.TextResult("OK (formatted in the editor; not written, since the buffer has unsaved changes)"), nil
			}
			return mcp.TextResult("OK"), nil
		},
	}
}
