package plugin

import (
	"context"
	"path/filepath"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// getWorkspaceFolders {} → JSON {success:true, folders:[{name, uri, path}],
// rootPath} (PROTOCOL.md §6): the global cwd, then the workspace folders of
// the running language servers that are not inside it — the list the lock
// file carries, which this call also refreshes.

type workspaceFolder struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	Path string `json:"path"`
}

func folderViews(folders []string) []workspaceFolder {
	out := make([]workspaceFolder, 0, len(folders))
	for _, f := range folders {
		name := filepath.Base(f)
		if name == "/" || name == "." {
			name = f
		}
		out = append(out, workspaceFolder{Name: name, URI: fileURI(f), Path: f})
	}
	return out
}

func (c *editorContext) getWorkspaceFoldersTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getWorkspaceFolders",
		Description: "Get all workspace folders currently open in the IDE",
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			ectx, cancel := editorCtx(ctx)
			defer cancel()
			ws, err := c.app.ed.Workspace(ectx)
			if err != nil {
				return nil, editorError("getWorkspaceFolders", err)
			}
			folders := cleanFolders(ws.Folders)
			if len(folders) == 0 {
				folders = []string{c.root()}
			}
			// Neovim 0.7 has no event for a language server starting: this
			// call is one more chance to put its folder in the lock file.
			c.setFolders(folders, false)
			return mcp.JSONResult(struct {
				Success  bool              `json:"success"`
				Folders  []workspaceFolder `json:"folders"`
				RootPath string            `json:"rootPath"`
			}{true, folderViews(folders), folders[0]})
		},
	}
}
