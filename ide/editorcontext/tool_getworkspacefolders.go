package editorcontext

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// getWorkspaceFolders {} → JSON {success:true, folders:[{name, uri, path}],
// rootPath} (PROTOCOL.md §6): the global cwd, then the workspace folders of
// the running language servers that are not inside it — the list the lock
// file carries.
//
// Lua pushes that list (workspace_folders) whenever it may have changed:
// on DirChanged, and on LspAttach/LspDetach from Neovim 0.8 (on 0.7, which
// has neither, on BufEnter). Where the pushes follow the language servers
// (0.8+), the call is answered from the last push without a round trip
// into Neovim's main loop (pushedFoldersAnswer), as long as the push is for the cwd
// the host knows. Otherwise — no push yet, Neovim 0.7, a cwd change whose
// list has not arrived — the call asks Neovim, and what it finds also goes
// into the lock file: on 0.7 that is one more chance to put a language
// server's folder there.

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
		out = append(out, workspaceFolder{Name: name, URI: workspace.FileURI(f), Path: f})
	}
	return out
}

// foldersResult is the tool's answer for a folder list.
func foldersResult(folders []string) (*mcp.ToolResult, error) {
	return mcp.JSONResult(struct {
		Success  bool              `json:"success"`
		Folders  []workspaceFolder `json:"folders"`
		RootPath string            `json:"rootPath"`
	}{true, folderViews(folders), folders[0]})
}

func (c *Context) WorkspaceFoldersTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getWorkspaceFolders",
		Description: "Get all workspace folders currently open in the IDE",
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			if res, ok := c.pushedFoldersAnswer(); ok {
				return res, nil // no round trip to Neovim
			}
			ectx, cancel := host.EditorCtx(ctx)
			defer cancel()
			pushes := c.ws.PushCount()
			ws, err := c.ed.Workspace(ectx)
			if err != nil {
				return nil, host.EditorError("getWorkspaceFolders", err)
			}
			folders := workspace.CleanFolders(ws.Folders)
			if len(folders) == 0 {
				folders = []string{c.ws.Root()}
			}
			if hasLspEvents(ws.Version) {
				c.mu.Lock()
				c.lspEvents = true
				c.mu.Unlock()
			}
			c.ws.SetQueriedFolders(folders, pushes)
			return foldersResult(folders)
		},
	}
}

// pushedFoldersAnswer is the answer built from the folders Lua pushed,
// when they can be trusted to be current (see above). It is built once per
// list and shared: the server only reads a result.
func (c *Context) pushedFoldersAnswer() (*mcp.ToolResult, bool) {
	root := c.ws.Root()
	folders, pushed, gen := c.ws.Reported()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !pushed || !c.lspEvents || len(folders) == 0 || folders[0] != root {
		return nil, false
	}
	if c.answer == nil || c.answerGen != gen {
		res, err := foldersResult(folders)
		if err != nil {
			return nil, false
		}
		c.answer, c.answerGen = res, gen
	}
	return c.answer, true
}

// hasLspEvents reports whether a Neovim version ("0.10.4") has the
// LspAttach and LspDetach events (0.8 and later).
func hasLspEvents(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major > 0 || minor >= 8)
}
