package editorcontext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// open_files {file_paths} → JSON {opened_files:[…]} (JetBrains set,
// PROTOCOL.md §6): each file becomes a listed buffer, the last one is shown
// in the editing window, and the focus stays where it is. Paths that could
// not be opened (missing, directories) are left out of opened_files and
// listed with the reason in not_opened.

type notOpened struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

func (c *Context) openFilesTool() mcp.Tool {
	return mcp.Tool{
		Name:        "open_files",
		Description: "Open files in the editor",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"file_paths":{"type":"array","items":{"type":"string"},"description":"Paths of the files to open (absolute, or relative to the workspace root)"}},"required":["file_paths"]}`),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			var args struct {
				FilePaths []string `json:"file_paths"`
			}
			if err := mcp.DecodeArgs(req.Arguments, &args); err != nil {
				return nil, err
			}
			if args.FilePaths == nil {
				return nil, errors.New("invalid arguments: file_paths is required")
			}
			opened := []string{}
			var failed []notOpened
			var paths []string
			for _, p := range args.FilePaths {
				wp, err := c.CheckPath(ctx, p, workspace.Show)
				if err != nil {
					failed = append(failed, notOpened{p, err.Error()})
					continue
				}
				abs := wp.Abs
				if why := notOpenable(abs, abs); why != "" {
					failed = append(failed, notOpened{abs, why})
					continue
				}
				paths = append(paths, abs)
			}
			if len(paths) > 0 {
				ectx, cancel := host.EditorCtx(ctx)
				defer cancel()
				outcomes, err := c.ed.OpenFiles(ectx, paths)
				if err != nil {
					return nil, fmt.Errorf("open_files: %w", err)
				}
				for _, o := range outcomes {
					if o.OK {
						opened = append(opened, o.Path)
					} else {
						failed = append(failed, notOpened{o.Path, o.Message})
					}
				}
			}
			return mcp.JSONResult(struct {
				OpenedFiles []string    `json:"opened_files"`
				NotOpened   []notOpened `json:"not_opened,omitempty"`
			}{opened, failed})
		},
	}
}
