package editorcontext

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Editor is what diagnostics, the editor tools (openFile,
// getOpenEditors …) and the workspace methods need from Neovim. Each method
// is one round trip (see nvimbridge/context.go).
type Editor interface {
	Editors(ctx context.Context) (nvimbridge.Editors, error)
	Workspace(ctx context.Context) (nvimbridge.Workspace, error)
	OpenFile(ctx context.Context, o nvimbridge.OpenFileOptions) (nvimbridge.OpenedFile, error)
	OpenFiles(ctx context.Context, paths []string) ([]nvimbridge.OpenOutcome, error)
	Document(ctx context.Context, path string) (nvimbridge.Document, error)
	SaveDocument(ctx context.Context, path string) (nvimbridge.SaveResult, error)
	FormatDocument(ctx context.Context, path string, timeout time.Duration) (nvimbridge.FormatResult, error)
	ReadDocument(ctx context.Context, path, real string) (nvimbridge.BufferText, error)
	WriteDocument(ctx context.Context, path, content string) (nvimbridge.WriteResult, error)
	SyncDiagnostics(ctx context.Context) (nvimbridge.DiagnosticsSync, error)
}

// Context is the feature for diagnostics, the editor tools and the
// workspace methods.
type Context struct {
	h       host.Host
	ed      Editor
	log     *slog.Logger
	ws      Folders
	version string // the host's version, for getWorkspaceInfo
	diags   *diagCache

	mu sync.Mutex
	// lspEvents: Neovim has LspAttach/LspDetach (0.8+), on which Lua
	// pushes the folders; on 0.7 a language server starting goes unnoticed
	// until the next BufEnter. Learnt from the first Workspace answer.
	lspEvents bool
	answer    *mcp.ToolResult // getWorkspaceFolders' answer for the folders of generation answerGen
	answerGen uint64
	settle    time.Duration // diagnostics.settle_ms (0 until Lua sent the options)
}

// Folders is the workspace with the one change this feature makes: the
// folders Lua reports (LSP roots, the cwd) and the ones the CLI was told.
// The wiring hands it the application's workspace; every other feature
// sees it read-only (host.Host.Workspace).
type Folders interface {
	workspace.View
	SetFolders(folders []string) bool
	SetQueriedFolders(folders []string, pushes uint64)
}

// New makes the editor-context feature; version is the host's, which
// getWorkspaceInfo reports.
func New(h host.Host, ed Editor, ws Folders, version string) *Context {
	return &Context{h: h, ed: ed, log: h.Logger().With("feature", "context"), ws: ws,
		version: version, diags: newDiagCache(ws.Far)}
}

// Name names the feature.
func (c *Context) Name() string { return "context" }

// Hooks are the feature's tools, methods and Lua handlers.
func (c *Context) Hooks() host.Hooks {
	return host.Hooks{
		Tools:   c.tools,
		Methods: c.methods,
		Options: c.setOptions,
		LuaNotifications: map[string]host.LuaNotification{
			"diagnostics_changed": host.Notification(c.log, "diagnostics_changed", c.handleDiagnosticsChanged),
			"workspace_folders":   host.Notification(c.log, "workspace_folders", c.handleWorkspaceFolders),
		},
	}
}

func (c *Context) tools() []mcp.Tool {
	return []mcp.Tool{
		c.getDiagnosticsTool(),
		c.openFileTool(),
		c.OpenEditorsTool(),
		c.WorkspaceFoldersTool(),
		c.CheckDocumentDirtyTool(),
		c.saveDocumentTool(),
		c.openFilesTool(),
		c.getAllOpenedFilePathsTool(),
		c.reformatFileTool(),
	}
}

func (c *Context) methods() map[string]mcp.MethodHandler {
	return map[string]mcp.MethodHandler{
		"readFile":         c.readFile,
		"writeFile":        c.writeFile,
		"listFiles":        c.listFiles,
		"getWorkspaceInfo": c.getWorkspaceInfo,
		"getOpenFiles":     c.getOpenFiles,
		"getCurrentFile":   c.getCurrentFile,
	}
}

// setOptions takes the user's options (whenever Lua sends them).
func (c *Context) setOptions(o host.Options) error {
	var d DiagnosticsOptions
	if err := o.Decode("diagnostics", &d); err != nil {
		return err
	}
	c.mu.Lock()
	c.settle = time.Duration(max(d.SettleMS, 0) * float64(time.Millisecond))
	c.mu.Unlock()
	return nil
}

// DiagnosticsOptions are setup()'s diagnostics table.
type DiagnosticsOptions struct {
	// SettleMS bounds getDiagnostics' wait for a language server's report
	// on a file the CLI just changed.
	SettleMS float64 `json:"settle_ms"`
}

// settleFor is how long getDiagnostics waits for a fresh report.
func (c *Context) settleFor() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settle
}

// foldersParams are workspace_folders' parameters.
type foldersParams struct {
	Folders []string `json:"folders"`
}

// handleWorkspaceFolders takes the folder list Lua sends when the cwd or the
// running language servers change, and puts it in the lock file.
func (c *Context) handleWorkspaceFolders(p foldersParams) {
	if !c.ws.SetFolders(p.Folders) {
		c.log.Warn("workspace_folders: no absolute folder", "folders", p.Folders)
	}
}

// CheckPath is the one rule for a path a client names, in every tool and
// method (workspace.Workspace.Check), with Neovim asked which buffers are
// open only for a path outside the workspace folders.
func (c *Context) CheckPath(ctx context.Context, p string, acc workspace.Access) (workspace.Path, error) {
	return c.ws.Check(ctx, p, acc, c.isOpen())
}

// editors is the editor's open files as a client may see them: a
// deny-listed file (by the host's boundary, which also knows another hard
// link to one) is left out, name and all, and is no current file.
func (c *Context) editors(ctx context.Context) (nvimbridge.Editors, error) {
	eds, err := c.ed.Editors(ctx)
	if err != nil {
		return eds, err
	}
	paths := make([]string, len(eds.Buffers))
	for i, b := range eds.Buffers {
		paths[i] = b.Path
	}
	denied := c.ws.DeniedAll(paths)
	// A Claude elsewhere sees each file under its far path; a file
	// outside the far↔local mapping is left out like a denied one.
	kept := eds.Buffers[:0]
	for i, b := range eds.Buffers {
		if denied[i] {
			continue
		}
		far, err := c.ws.Far(b.Path)
		if err != nil {
			continue
		}
		b.Path = far
		kept = append(kept, b)
	}
	eds.Buffers = kept
	if eds.Current != nil {
		far, err := c.ws.Far(eds.Current.Path)
		if err != nil || c.ws.Denied(eds.Current.Path) {
			eds.Current = nil
		} else {
			cur := *eds.Current
			cur.Path = far
			eds.Current = &cur
		}
	}
	return eds, nil
}

// isOpen asks Neovim once, on the first question, which buffers it has.
func (c *Context) isOpen() func(ctx context.Context, abs string) bool {
	var open map[string]bool
	return func(ctx context.Context, abs string) bool {
		if open == nil {
			open = map[string]bool{}
			ectx, cancel := host.EditorCtx(ctx)
			defer cancel()
			if eds, err := c.ed.Editors(ectx); err == nil {
				for _, b := range eds.Buffers {
					open[b.Path] = true
				}
			}
		}
		return open[abs]
	}
}

// filePathSchema is the input schema of a tool whose one argument is
// filePath (checkDocumentDirty, saveDocument).
func filePathSchema(description string) json.RawMessage {
	d, _ := json.Marshal(description)
	return json.RawMessage(`{"type":"object","properties":{"filePath":{"type":"string","description":` +
		string(d) + `}},"required":["filePath"]}`)
}

// documentTool is a tool whose one argument is filePath
// (checkDocumentDirty, saveDocument): the path is decoded and checked
// (workspace.Show) before do runs with it and an editor call's context; a
// refused path answers {success:false, message} as these tools answer.
func (c *Context) documentTool(name, description, pathDescription string,
	do func(ectx context.Context, path string) (*mcp.ToolResult, error)) mcp.Tool {
	return mcp.Tool{
		Name:        name,
		Description: description,
		InputSchema: filePathSchema(pathDescription),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			path, err := c.filePathArg(ctx, req, workspace.Show)
			if workspace.Refused(err) {
				return mcp.JSONResult(failure{Message: err.Error()})
			}
			if err != nil {
				return nil, err
			}
			ectx, cancel := host.EditorCtx(ctx)
			defer cancel()
			return do(ectx, path)
		},
	}
}

// filePathArg decodes such a tool's arguments and returns the file path,
// made absolute and put through the boundary for access acc.
func (c *Context) filePathArg(ctx context.Context, req *mcp.ToolRequest, acc workspace.Access) (string, error) {
	var args struct {
		FilePath string `json:"filePath"`
	}
	if err := mcp.DecodeArgs(req.Arguments, &args); err != nil {
		return "", err
	}
	if args.FilePath == "" {
		return "", errors.New("invalid arguments: filePath is required")
	}
	wp, err := c.CheckPath(ctx, args.FilePath, acc)
	if err != nil {
		return "", err
	}
	return wp.Abs, nil
}

// languageID is the VS Code language identifier for a Neovim filetype (a
// compound filetype like "javascript.jsx" counts by its first part): the
// filetype itself, except where the two differ.
func languageID(filetype string) string {
	if i := strings.IndexByte(filetype, '.'); i > 0 {
		filetype = filetype[:i]
	}
	switch filetype {
	case "", "text", "help":
		return "plaintext"
	case "sh", "bash", "zsh", "ksh":
		return "shellscript"
	case "cs":
		return "csharp"
	case "make":
		return "makefile"
	case "objc":
		return "objective-c"
	case "objcpp":
		return "objective-cpp"
	case "tex":
		return "latex"
	case "plaintex":
		return "tex"
	case "gitcommit":
		return "git-commit"
	case "gitrebase":
		return "git-rebase"
	case "ps1":
		return "powershell"
	case "dosbatch":
		return "bat"
	case "cuda":
		return "cuda-cpp"
	case "coffee":
		return "coffeescript"
	case "gomod":
		return "go.mod"
	case "gosum":
		return "go.sum"
	case "gowork":
		return "go.work"
	case "vim":
		return "viml"
	}
	return filetype
}
