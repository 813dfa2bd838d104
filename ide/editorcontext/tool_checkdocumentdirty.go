package editorcontext

import (
	"context"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
)

// checkDocumentDirty {filePath} → JSON {success:true, filePath, isDirty,
// isUntitled} or {success:false, message:"Document not open: <path>"}
// (PROTOCOL.md §6). A document is open when a loaded or listed buffer holds
// the file (found by name, or by the file a symlinked name resolves to).
// Neovim's unnamed buffers have no path to ask about, so isUntitled is
// always false.

func (c *Context) CheckDocumentDirtyTool() mcp.Tool {
	return c.documentTool("checkDocumentDirty", "Check if a document has unsaved changes (is dirty)", "Path to the file to check",
		func(ectx context.Context, path string) (*mcp.ToolResult, error) {
			doc, err := c.ed.Document(ectx, path)
			if err != nil {
				return nil, host.EditorError("checkDocumentDirty", err)
			}
			if !doc.Open {
				return mcp.JSONResult(failure{Message: "Document not open: " + path})
			}
			return mcp.JSONResult(struct {
				Success    bool   `json:"success"`
				FilePath   string `json:"filePath"`
				IsDirty    bool   `json:"isDirty"`
				IsUntitled bool   `json:"isUntitled"`
			}{true, path, doc.Modified, false})
		})
}

// failure is the {success:false, message} answer of the VS Code tools.
type failure struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}
