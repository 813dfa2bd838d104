package editorcontext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// contextEditor is what diagnostics, the editor tools (openFile,
// getOpenEditors …) and the workspace methods need from Neovim. Each method
// is one round trip (see nvimbridge/context.go).
type contextEditor interface {
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

// editorContext is the component for diagnostics, the editor tools and the
// workspace methods.
type editorContext struct {
	app   *App
	diags *diagCache

	lockMu sync.Mutex // one lock file write at a time (writeLock)

	mu      sync.Mutex
	folders []string // workspace folders as Lua last reported them
	// pushed: a workspace_folders push arrived since the server started,
	// so Lua's diagnostics module is attached and keeps c.folders current.
	pushed bool
	pushes uint64 // workspace_folders pushes received
	// lspEvents: Neovim has LspAttach/LspDetach (0.8+), on which Lua
	// pushes the folders; on 0.7 a language server starting goes unnoticed
	// until the next BufEnter. Learnt from the first Workspace answer.
	lspEvents bool
	answer    *mcp.ToolResult // getWorkspaceFolders' answer for folders, nil until built
}

func newContext(a *App) *editorContext {
	return &editorContext{app: a, diags: newDiagCache()}
}

func (c *editorContext) name() string { return "context" }

func (c *editorContext) tools() []mcp.Tool {
	return []mcp.Tool{
		c.getDiagnosticsTool(),
		c.openFileTool(),
		c.getOpenEditorsTool(),
		c.getWorkspaceFoldersTool(),
		c.checkDocumentDirtyTool(),
		c.saveDocumentTool(),
		c.openFilesTool(),
		c.getAllOpenedFilePathsTool(),
		c.reformatFileTool(),
	}
}

func (c *editorContext) methods() map[string]mcp.MethodHandler {
	return map[string]mcp.MethodHandler{
		"readFile":         c.readFile,
		"writeFile":        c.writeFile,
		"listFiles":        c.listFiles,
		"getWorkspaceInfo": c.getWorkspaceInfo,
		"getOpenFiles":     c.getOpenFiles,
		"getCurrentFile":   c.getCurrentFile,
	}
}

func (c *editorContext) luaRequests() map[string]func(context.Context, json.RawMessage) (any, error) {
	return nil
}

func (c *editorContext) luaNotifications() map[string]func(json.RawMessage) {
	return map[string]func(json.RawMessage){
		"diagnostics_changed": c.handleDiagnosticsChanged,
		"workspace_folders":   c.handleWorkspaceFolders,
	}
}

// handleWorkspaceFolders takes the folder list Lua sends when the cwd or the
// running language servers change, and puts it in the lock file.
func (c *editorContext) handleWorkspaceFolders(raw json.RawMessage) {
	var p struct {
		Folders []string `json:"folders"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		c.app.log.Warn("workspace_folders: bad parameters", "err", err)
		return
	}
	folders := cleanFolders(p.Folders)
	if len(folders) == 0 {
		c.app.log.Warn("workspace_folders: no absolute folder", "folders", p.Folders)
		return
	}
	c.setFolders(folders, true, true)
}

// serverStopped forgets the pushes: the next server's Lua attaches anew.
func (c *editorContext) serverStopped() {
	c.mu.Lock()
	c.pushed = false
	c.mu.Unlock()
}

func (c *editorContext) serverStarted() {}

// setFolders remembers the workspace folders and rewrites the lock file
// when they changed, or always (Lua sends a list only when it changed, or
// after the cwd changed, when App has just rewritten the lock with the cwd
// alone). pushed says the list is a workspace_folders push.
func (c *editorContext) setFolders(folders []string, always, pushed bool) {
	c.mu.Lock()
	same := equalStrings(c.folders, folders)
	if !same {
		c.folders = folders
		c.answer = nil
	}
	if pushed {
		c.pushed = true
		c.pushes++
	}
	c.mu.Unlock()
	if !same || always {
		c.writeLock()
	}
}

// setQueriedFolders is setFolders for a list getWorkspaceFolders asked
// Neovim for, unless a push arrived since the question (pushes counted
// then): the push may be the newer, and Lua pushes after every change, so
// the last push stands.
func (c *editorContext) setQueriedFolders(folders []string, pushes uint64) {
	c.mu.Lock()
	changed := c.pushes == pushes && !equalStrings(c.folders, folders)
	if changed {
		c.folders = folders
		c.answer = nil
	}
	c.mu.Unlock()
	if changed {
		c.writeLock()
	}
}

// writeLock writes the current folders to the lock file. Writes are one
// at a time and each takes the folders of its moment: the last write has
// the last list.
func (c *editorContext) writeLock() {
	srv := c.app.server()
	if srv == nil {
		return
	}
	c.lockMu.Lock()
	defer c.lockMu.Unlock()
	c.mu.Lock()
	folders := c.folders
	c.mu.Unlock()
	if err := srv.SetWorkspaceFolders(folders); err != nil {
		c.app.log.Error("rewrite lock file with workspace folders", "err", err)
	}
}

// pushCount is the number of workspace_folders pushes received so far.
func (c *editorContext) pushCount() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pushes
}

// workspaceFolders is the current cwd followed by the other folders Lua
// reported (language servers' roots), without duplicates.
func (c *editorContext) workspaceFolders() []string {
	root := c.root()
	c.mu.Lock()
	reported := append([]string(nil), c.folders...)
	c.mu.Unlock()
	out := []string{root}
	for _, f := range reported {
		if f != root && !containsString(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// root is the workspace root: the editor's global cwd.
func (c *editorContext) root() string {
	if d := c.app.workspaceDir(); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

// checkPath is the one rule for a path a client names, in every tool and
// method: a file:// URI becomes its path, a relative path is taken from the
// workspace root, and the result goes through the boundary
// (workspace.Boundary) for access acc. Neovim is asked which buffers are
// open only for a path outside the workspace folders.
func (c *editorContext) checkPath(ctx context.Context, p string, acc workspace.Access) (workspace.Path, error) {
	if strings.HasPrefix(p, "file://") {
		if path, ok := uriPath(p, c.root()); ok {
			p = path
		}
	}
	var open map[string]bool
	isOpen := func(abs string) bool {
		if open == nil {
			open = map[string]bool{}
			ectx, cancel := editorCtx(ctx)
			defer cancel()
			if eds, err := c.app.ed.Editors(ectx); err == nil {
				for _, b := range eds.Buffers {
					open[b.Path] = true
				}
			}
		}
		return open[abs]
	}
	return c.app.boundary.Resolve(c.workspaceFolders(), p, acc, isOpen)
}

// refused reports whether err is the boundary's refusal of a path.
func refused(err error) bool {
	for _, e := range []error{workspace.ErrInvalid, workspace.ErrOutside, workspace.ErrDenied, workspace.ErrHome, workspace.ErrGitDir} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// filePathSchema is the input schema of a tool whose one argument is
// filePath (checkDocumentDirty, saveDocument).
func filePathSchema(description string) json.RawMessage {
	d, _ := json.Marshal(description)
	return json.RawMessage(`{"type":"object","properties":{"filePath":{"type":"string","description":` +
		string(d) + `}},"required":["filePath"]}`)
}

// filePathArg decodes such a tool's arguments and returns the file path,
// made absolute and put through the boundary for access acc.
func (c *editorContext) filePathArg(ctx context.Context, req *mcp.ToolRequest, acc workspace.Access) (string, error) {
	var args struct {
		FilePath string `json:"filePath"`
	}
	if err := decodeArgs(req.Arguments, &args); err != nil {
		return "", err
	}
	if args.FilePath == "" {
		return "", errors.New("invalid arguments: filePath is required")
	}
	wp, err := c.checkPath(ctx, args.FilePath, acc)
	if err != nil {
		return "", err
	}
	return wp.Abs, nil
}

// callTimeout bounds one editor call made for a tool or method.
const callTimeout = 5 * time.Second

func editorCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// editorError is the tool error for a failed editor call.
func editorError(what string, err error) error {
	return fmt.Errorf("%s: Neovim did not answer: %w", what, err)
}

// decodeArgs decodes tool arguments; a mismatch is a failure result the
// model can act on.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("invalid arguments: %s must be %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// jsonKind names a Go kind the way a JSON schema would, with an article.
func jsonKind(k string) string {
	switch k {
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "int", "int64", "float64":
		return "a number"
	}
	return "a " + k
}

func cleanFolders(in []string) []string {
	var out []string
	for _, f := range in {
		if f == "" || !filepath.IsAbs(f) {
			continue
		}
		f = filepath.Clean(f)
		if !containsString(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fileURI is the file:// URI of an absolute path, as the Claude Code CLI
// builds and compares them: the path is not percent-encoded (the CLI strips
// "file://" and compares the rest with its own path, PROTOCOL.md §4).
func fileURI(path string) string { return "file://" + path }

// uriPath turns a file URI (or a plain path) into a clean absolute path;
// relative paths are taken from base. Other schemes give ok=false.
func uriPath(uri, base string) (path string, ok bool) {
	p := uri
	if len(p) >= 7 && strings.EqualFold(p[:7], "file://") {
		p = p[7:]
		if strings.HasPrefix(strings.ToLower(p), "localhost/") {
			p = p[len("localhost"):]
		}
		if !strings.HasPrefix(p, "/") {
			return "", false // file://host/path: not this machine
		}
	} else if i := strings.Index(p, ":"); i > 1 && !strings.ContainsAny(p[:i], "/\\") {
		return "", false // another scheme (untitled:, _claude_fs_right: …)
	}
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), true
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
