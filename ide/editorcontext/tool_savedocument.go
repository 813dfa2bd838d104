package editorcontext

import (
	"context"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// saveDocument {filePath} → JSON {success:true, filePath, saved:true,
// message:"Document saved successfully"} (PROTOCOL.md §6). A buffer without
// unsaved changes is not written again. Failures are isError results with
// {success:false, filePath, saved:false, message}: the document is not open,
// it is read-only, :write failed (with Neovim's error), or the file changed
// on disk since the buffer read it — then nothing is written and the user
// is told, rather than the change on disk being overwritten.

func (c *Context) saveDocumentTool() mcp.Tool {
	return c.documentTool("saveDocument", "Save a document with unsaved changes", "Path to the file to save",
		func(ectx context.Context, path string) (*mcp.ToolResult, error) {
			res, err := c.ed.SaveDocument(ectx, path)
			if err != nil {
				return nil, host.EditorError("saveDocument", err)
			}
			type answer struct {
				Success  bool   `json:"success"`
				FilePath string `json:"filePath"`
				Saved    bool   `json:"saved"`
				Message  string `json:"message"`
			}
			if res.OK {
				msg := "Document saved successfully"
				if res.Unchanged {
					msg = "Document saved successfully (it had no unsaved changes)"
				}
				return mcp.JSONResult(answer{true, path, true, msg})
			}
			msg := res.Message
			if res.Reason == nvimbridge.ReasonNotOpen {
				msg = "Document not open: " + path
			}
			out, err := mcp.JSONResult(answer{false, path, false, msg})
			if err != nil {
				return nil, err
			}
			out.IsError = true
			return out, nil
		})
}
