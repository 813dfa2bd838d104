package editorcontext

import (
	"context"
	"path/filepath"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
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

func (c *Context) OpenEditorsTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getOpenEditors",
		Description: "Get information about currently open editors",
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			ectx, cancel := host.EditorCtx(ctx)
			defer cancel()
			eds, err := c.editors(ectx)
			if err != nil {
				return nil, host.EditorError("getOpenEditors", err)
			}
			tabs := make([]editorTab, 0, len(eds.Buffers))
			for _, b := range eds.Buffers {
				tabs = append(tabs, editorTab{
					URI:        workspace.FileURI(b.Path),
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
