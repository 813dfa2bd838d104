package editorcontext

import (
	"context"
	"strings"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
)

// get_all_opened_file_paths {} → the absolute paths of the listed file
// buffers, one a line (JetBrains set, PROTOCOL.md §6).

func (c *Context) getAllOpenedFilePathsTool() mcp.Tool {
	return mcp.Tool{
		Name:        "get_all_opened_file_paths",
		Description: "Get the paths of all files open in the editor, one per line",
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			ectx, cancel := host.EditorCtx(ctx)
			defer cancel()
			eds, err := c.editors(ectx)
			if err != nil {
				return nil, host.EditorError("get_all_opened_file_paths", err)
			}
			paths := make([]string, 0, len(eds.Buffers))
			for _, b := range eds.Buffers {
				paths = append(paths, b.Path)
			}
			return mcp.TextResult(strings.Join(paths, "\n")), nil
		},
	}
}
