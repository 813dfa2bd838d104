package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/nvim-claude/nvim-claude/mcp"
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

// maxReadBytes bounds readFile (a frame carries the whole file).
const maxReadBytes = 16 << 20

// decodeMethodParams decodes a method's params (absent means {}); a
// mismatch is -32602.
func decodeMethodParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return mcp.InvalidParams("Invalid params: %s must be %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return mcp.InvalidParams("Invalid params: %v", err)
	}
	return nil
}

func (c *editorContext) resolve(p string) (wsPath, error) {
	return resolveWorkspacePath(c.workspaceFolders(), p)
}

// relPath is how answers name a file: from the root when inside it.
func (c *editorContext) relPath(abs string) string {
	root := c.root()
	if inside(abs, root) {
		if r, err := filepath.Rel(root, abs); err == nil {
			return r
		}
	}
	return abs
}

func (c *editorContext) readFile(ctx context.Context, req *mcp.MethodRequest) (any, error) {
	var p struct {
		Path string `json:"path"`
	}
	if err := decodeMethodParams(req.Params, &p); err != nil {
		return nil, err
	}
	wp, err := c.resolve(p.Path)
	if err != nil {
		return nil, err
	}
	ectx, cancel := editorCtx(ctx)
	defer cancel()
	buf, err := c.app.ed.ReadDocument(ectx, wp.abs, wp.real)
	if err != nil {
		return nil, editorError("readFile", err)
	}
	if buf.Denied {
		return nil, mcp.InvalidParams("Invalid params: %s matches the selection.deny list: its contents never leave Neovim", wp.rel)
	}
	type answer struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Unsaved bool   `json:"unsaved"` // the text of a buffer with unsaved changes
	}
	if buf.Modified {
		return answer{wp.rel, buf.Text, true}, nil
	}
	content, err := readText(wp.real)
	if err != nil {
		return nil, mcp.InvalidParams("Invalid params: %s: %v", wp.rel, err)
	}
	return answer{wp.rel, content, false}, nil
}

// readText reads a UTF-8 text file of at most maxReadBytes.
func readText(path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errors.New("no such file")
	case err != nil:
		return "", err
	case fi.IsDir():
		return "", errors.New("is a directory")
	case fi.Size() > maxReadBytes:
		return "", fmt.Errorf("too large to read (%d bytes; the limit is %d)", fi.Size(), maxReadBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxReadBytes {
		return "", fmt.Errorf("too large to read (the limit is %d bytes)", maxReadBytes)
	}
	if !utf8.Valid(data) {
		return "", errors.New("not a text file (binary, or not UTF-8)")
	}
	return string(data), nil
}

func (c *editorContext) writeFile(ctx context.Context, req *mcp.MethodRequest) (any, error) {
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
	wp, err := c.resolve(p.Path)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(wp.real); err == nil && !fi.Mode().IsRegular() {
		return nil, mcp.InvalidParams("Invalid params: %s is not a regular file", wp.rel)
	}
	type answer struct {
		Success       bool   `json:"success"`
		Path          string `json:"path"`
		ThroughBuffer bool   `json:"throughBuffer"` // written by the open buffer (undo restores)
	}
	ectx, cancel := editorCtx(ctx)
	defer cancel()
	res, err := c.app.ed.WriteDocument(ectx, wp.abs, *p.Content)
	if err != nil {
		return nil, editorError("writeFile", err)
	}
	if res.Loaded {
		if !res.OK {
			return nil, errors.New(res.Message)
		}
		return answer{true, wp.rel, true}, nil
	}
	if err := writeFileAtomic(wp.real, []byte(*p.Content)); err != nil {
		return nil, fmt.Errorf("could not write %s: %w", wp.rel, err)
	}
	return answer{true, wp.rel, false}, nil
}

func (c *editorContext) listFiles(ctx context.Context, req *mcp.MethodRequest) (any, error) {
	var p struct {
		Pattern string `json:"pattern"`
	}
	if err := decodeMethodParams(req.Params, &p); err != nil {
		return nil, err
	}
	match, err := globMatcher(p.Pattern)
	if err != nil {
		return nil, mcp.InvalidParams("Invalid params: pattern: %v", err)
	}
	files := []string{}
	truncated := false
	for i, folder := range c.workspaceFolders() {
		list, trunc, err := listWorkspaceFiles(ctx, folder, match, maxListedFiles-len(files))
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

func (c *editorContext) getWorkspaceInfo(ctx context.Context, _ *mcp.MethodRequest) (any, error) {
	ectx, cancel := editorCtx(ctx)
	defer cancel()
	ws, err := c.app.ed.Workspace(ectx)
	if err != nil {
		return nil, editorError("getWorkspaceInfo", err)
	}
	folders := cleanFolders(ws.Folders)
	if len(folders) == 0 {
		folders = []string{c.root()}
	}
	views := folderViews(folders)
	return struct {
		Name          string            `json:"name"`
		Path          string            `json:"path"`
		Folders       []workspaceFolder `json:"folders"`
		Editor        string            `json:"editor"`
		EditorVersion string            `json:"editorVersion"`
		PluginVersion string            `json:"pluginVersion"`
	}{views[0].Name, views[0].Path, views, "Neovim", ws.Version, Version}, nil
}

type openFileView struct {
	Path         string `json:"path"`
	AbsolutePath string `json:"absolutePath"`
	URI          string `json:"uri"`
	LanguageID   string `json:"languageId"`
	IsActive     bool   `json:"isActive"`
	IsDirty      bool   `json:"isDirty"`
}

func (c *editorContext) getOpenFiles(ctx context.Context, _ *mcp.MethodRequest) (any, error) {
	ectx, cancel := editorCtx(ctx)
	defer cancel()
	eds, err := c.app.ed.Editors(ectx)
	if err != nil {
		return nil, editorError("getOpenFiles", err)
	}
	files := make([]openFileView, 0, len(eds.Buffers))
	for _, b := range eds.Buffers {
		files = append(files, openFileView{
			Path:         c.relPath(b.Path),
			AbsolutePath: b.Path,
			URI:          fileURI(b.Path),
			LanguageID:   languageID(b.Filetype),
			IsActive:     b.Active,
			IsDirty:      b.Modified,
		})
	}
	return struct {
		Files []openFileView `json:"files"`
	}{files}, nil
}

func (c *editorContext) getCurrentFile(ctx context.Context, _ *mcp.MethodRequest) (any, error) {
	ectx, cancel := editorCtx(ctx)
	defer cancel()
	eds, err := c.app.ed.Editors(ectx)
	if err != nil {
		return nil, editorError("getCurrentFile", err)
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
	}{c.relPath(cur.Path), cur.Path, fileURI(cur.Path), languageID(cur.Filetype), cur.Modified, cur.LineCount,
		diagPosition{Line: cur.Line, Character: cur.Character}}, nil
}
