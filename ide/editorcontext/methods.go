package editorcontext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// The workspace methods: direct JSON-RPC methods (not tools) of the
// vault-style IDE servers, which let a client read and write the files of
// the workspace through the editor.
//
//	readFile {path}            → {path, content, unsaved}
//	writeFile {path, content}  → {success: true, path, throughBuffer}
//	listFiles {pattern?}       → {files: [path …], truncated}
//	getWorkspaceInfo {}        → {name, path, folders: [{name, uri, path}], editor, editorVersion, pluginVersion}
//	getOpenFiles {}            → {files: [{path, absolutePath, uri, languageId, isActive, isDirty}]}
//	getCurrentFile {}          → {path, absolutePath, uri, languageId, isDirty, lineCount, cursor: {line, character}}
//	                             or {path: null, message}
//
// Paths in params are relative to the workspace root (the cwd) or absolute,
// and confined to the workspace folders (workspace.go): anything else is
// refused with -32602 and a message. Paths in answers are relative to the
// root for files inside it, absolute otherwise.

// Limits: readFile's (a frame carries the whole file) and listFiles'.
const (
	maxReadBytes   = 16 << 20
	maxListedFiles = 20000
)

// decodeMethodParams decodes a method's params (absent means {}); a
// mismatch is -32602.
func decodeMethodParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return mcp.InvalidParams("Invalid params: %s must be %s", te.Field, mcp.JSONKind(te.Type.Kind().String()))
		}
		return mcp.InvalidParams("Invalid params: %v", err)
	}
	return nil
}

// resolve puts a method's path through the boundary; a refusal is -32602
// with the boundary's message.
func (c *Context) resolve(ctx context.Context, p string, acc workspace.Access) (workspace.Path, error) {
	if p == "" {
		return workspace.Path{}, mcp.InvalidParams("Invalid params: path is required")
	}
	wp, err := c.CheckPath(ctx, p, acc)
	if err != nil {
		return wp, mcp.InvalidParams("Invalid params: %v", err)
	}
	return wp, nil
}

func (c *Context) readFile(ctx context.Context, req *mcp.MethodRequest) (any, error) {
	var p struct {
		Path string `json:"path"`
	}
	if err := decodeMethodParams(req.Params, &p); err != nil {
		return nil, err
	}
	wp, err := c.resolve(ctx, p.Path, workspace.Read)
	if err != nil {
		return nil, err
	}
	ectx, cancel := host.EditorCtx(ctx)
	defer cancel()
	buf, err := c.ed.ReadDocument(ectx, wp.Abs, wp.Real)
	if err != nil {
		return nil, host.EditorError("readFile", err)
	}
	if buf.Denied {
		return nil, mcp.InvalidParams("Invalid params: %s matches the deny-list (security.deny): its contents never leave Neovim", wp.Rel)
	}
	type answer struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Unsaved bool   `json:"unsaved"` // the text of a buffer with unsaved changes
	}
	if buf.Modified {
		return answer{wp.Rel, buf.Text, true}, nil
	}
	data, err := c.ws.Files().ReadFile(wp, maxReadBytes)
	if err == nil && !utf8.Valid(data) {
		err = errors.New("not a text file (binary, or not UTF-8)")
	}
	if err != nil {
		return nil, mcp.InvalidParams("Invalid params: %s: %v", wp.Rel, err)
	}
	return answer{wp.Rel, string(data), false}, nil
}

func (c *Context) writeFile(ctx context.Context, req *mcp.MethodRequest) (any, error) {
	var p struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeMethodParams(req.Params, &p); err != nil {
		return nil, err
	}
	if p.Content == nil {
		return nil, mcp.InvalidParams("Invalid params: content is required")
	}
	wp, err := c.resolve(ctx, p.Path, workspace.Write)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(wp.Real); err == nil && !fi.Mode().IsRegular() {
		return nil, mcp.InvalidParams("Invalid params: %s is not a regular file", wp.Rel)
	}
	type answer struct {
		Success       bool   `json:"success"`
		Path          string `json:"path"`
		ThroughBuffer bool   `json:"throughBuffer"` // written by the open buffer (undo restores)
	}
	ectx, cancel := host.EditorCtx(ctx)
	defer cancel()
	res, err := c.ed.WriteDocument(ectx, wp.Abs, *p.Content)
	if err != nil {
		return nil, host.EditorError("writeFile", err)
	}
	if res.Loaded {
		if !res.OK {
			return nil, errors.New(res.Message)
		}
		return answer{true, wp.Rel, true}, nil
	}
	if err := c.ws.Files().WriteFile(wp, []byte(*p.Content)); err != nil {
		return nil, fmt.Errorf("could not write %s: %w", wp.Rel, err)
	}
	return answer{true, wp.Rel, false}, nil
}

func (c *Context) listFiles(ctx context.Context, req *mcp.MethodRequest) (any, error) {
	var p struct {
		Pattern string `json:"pattern"`
	}
	if err := decodeMethodParams(req.Params, &p); err != nil {
		return nil, err
	}
	match, err := workspace.PathGlob(p.Pattern)
	if err != nil {
		return nil, mcp.InvalidParams("Invalid params: pattern: %v", err)
	}
	files := []string{}
	truncated := false
	for i, folder := range c.ws.Folders() {
		if err := c.ws.Files().CheckFolder(folder); err != nil {
			if i == 0 {
				return nil, mcp.InvalidParams("Invalid params: %v", err)
			}
			continue
		}
		list, trunc, err := workspace.ListFiles(ctx, folder, match, maxListedFiles-len(files))
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("listFiles: %w", err)
			}
			continue
		}
		for _, f := range list {
			if i == 0 {
				files = append(files, filepath.FromSlash(f))
			} else {
				files = append(files, filepath.Join(folder, filepath.FromSlash(f)))
			}
		}
		if trunc || len(files) >= maxListedFiles {
			truncated = true
			break
		}
	}
	return struct {
		Files     []string `json:"files"`
		Truncated bool     `json:"truncated"`
	}{files, truncated}, nil
}

func (c *Context) getWorkspaceInfo(ctx context.Context, _ *mcp.MethodRequest) (any, error) {
	ectx, cancel := host.EditorCtx(ctx)
	defer cancel()
	ws, err := c.ed.Workspace(ectx)
	if err != nil {
		return nil, host.EditorError("getWorkspaceInfo", err)
	}
	folders := workspace.CleanFolders(ws.Folders)
	if len(folders) == 0 {
		folders = []string{c.ws.Root()}
	}
	views := folderViews(folders)
	return struct {
		Name          string            `json:"name"`
		Path          string            `json:"path"`
		Folders       []workspaceFolder `json:"folders"`
		Editor        string            `json:"editor"`
		EditorVersion string            `json:"editorVersion"`
		PluginVersion string            `json:"pluginVersion"`
	}{views[0].Name, views[0].Path, views, "Neovim", ws.Version, c.version}, nil
}

type openFileView struct {
	Path         string `json:"path"`
	AbsolutePath string `json:"absolutePath"`
	URI          string `json:"uri"`
	LanguageID   string `json:"languageId"`
	IsActive     bool   `json:"isActive"`
	IsDirty      bool   `json:"isDirty"`
}

func (c *Context) getOpenFiles(ctx context.Context, _ *mcp.MethodRequest) (any, error) {
	ectx, cancel := host.EditorCtx(ctx)
	defer cancel()
	eds, err := c.editors(ectx)
	if err != nil {
		return nil, host.EditorError("getOpenFiles", err)
	}
	files := make([]openFileView, 0, len(eds.Buffers))
	for _, b := range eds.Buffers {
		files = append(files, openFileView{
			Path:         c.ws.Rel(b.Path),
			AbsolutePath: b.Path,
			URI:          workspace.FileURI(b.Path),
			LanguageID:   languageID(b.Filetype),
			IsActive:     b.Active,
			IsDirty:      b.Modified,
		})
	}
	return struct {
		Files []openFileView `json:"files"`
	}{files}, nil
}

func (c *Context) getCurrentFile(ctx context.Context, _ *mcp.MethodRequest) (any, error) {
	ectx, cancel := host.EditorCtx(ctx)
	defer cancel()
	eds, err := c.editors(ectx)
	if err != nil {
		return nil, host.EditorError("getCurrentFile", err)
	}
	cur := eds.Current
	if cur == nil {
		return struct {
			Path    *string `json:"path"`
			Message string  `json:"message"`
		}{nil, "No file is open in an editor window"}, nil
	}
	return struct {
		Path         string       `json:"path"`
		AbsolutePath string       `json:"absolutePath"`
		URI          string       `json:"uri"`
		LanguageID   string       `json:"languageId"`
		IsDirty      bool         `json:"isDirty"`
		LineCount    int          `json:"lineCount"`
		Cursor       diagPosition `json:"cursor"`
	}{c.ws.Rel(cur.Path), cur.Path, workspace.FileURI(cur.Path), languageID(cur.Filetype), cur.Modified, cur.LineCount,
		diagPosition{Line: cur.Line, Character: cur.Character}}, nil
}
