package editorcontext

import (
	"context"
	"path/filepath"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// getOpenEditors {} → JSON {tabs:[{uri, isActive, label, languageId,
// isDirty}]} (PROTOCOL.md §6): Neovim's listed file buffers, in buffer
// order. isActive marks the buffer of the window the user edits in (the
// last one used while the Claude terminal has the focus); label is the file
// name; languageId the VS Code id of the filetype.

type editorTab struct {
	URI        string `json:"uri"`
	IsActive   bool   `json:"isActive"`
	Label      string `json:"label"`
	LanguageID string `json:"languageId"`
	IsDirty    bool   `json:"isDirty"`
}

func (c *editorContext) getOpenEditorsTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getOpenEditors",
		Description: "Get information about currently open editors",
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			ectx, cancel := editorCtx(ctx)
			defer cancel()
			eds, err := c.app.ed.Editors(ectx)
			if err != nil {
				return nil, editorError("getOpenEditors", err)
			}
			tabs := make([]editorTab, 0, len(eds.Buffers))
			for _, b := range eds.Buffers {
				tabs = append(tabs, editorTab{
					URI:        fileURI(b.Path),
					IsActive:   b.Active,
					Label:      filepath.Base(b.Path),
					LanguageID: languageID(b.Filetype),
					IsDirty:    b.Modified,
				})
			}
			return mcp.JSONResult(struct {
				Tabs []editorTab `json:"tabs"`
			}{tabs})
		},
	}
}
