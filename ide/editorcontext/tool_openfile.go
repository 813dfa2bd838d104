package editorcontext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// openFile {filePath, preview=false, startText?, endText?,
// selectToEndOfLine=false, makeFrontmost=true} (PROTOCOL.md §6).
//
// makeFrontmost: the file is shown in an editing window — never the Claude
// terminal, a diff, a sidebar, quickfix or a float; a split is made when
// there is none — the focus moves there, and the text from startText to
// endText is selected in Visual mode; the answer is "Opened file: <path>".
// Without makeFrontmost the file is only loaded as a listed buffer (the
// selection becomes its '<,'> marks) and the answer is JSON {success,
// filePath, languageId, lineCount}. preview keeps a newly opened buffer
// unlisted until it is edited.

const openFileSchema = `{"type":"object","properties":{` +
	`"filePath":{"type":"string","description":"Path to the file to open (absolute, or relative to the workspace root)"},` +
	`"preview":{"type":"boolean","description":"Whether to open the file in preview mode (Neovim: the buffer stays unlisted until edited)","default":false},` +
	`"startText":{"type":"string","description":"Text pattern to find the start of the selection range. Selects from the beginning of this match."},` +
	`"endText":{"type":"string","description":"Text pattern to find the end of the selection range. Selects up to the end of this match. If not provided, only the startText match will be selected."},` +
	`"selectToEndOfLine":{"type":"boolean","description":"If true, selection will extend to the end of the line containing the endText match.","default":false},` +
	`"makeFrontmost":{"type":"boolean","description":"Whether to make the file the active editor tab. If false, the file will be opened in the background without changing focus.","default":true}` +
	`},"required":["filePath"]}`

func (c *Context) openFileTool() mcp.Tool {
	return mcp.Tool{
		Name:        "openFile",
		Description: "Open a file in the editor and optionally select a range of text",
		InputSchema: json.RawMessage(openFileSchema),
		Handler:     c.openFile,
	}
}

func (c *Context) openFile(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	var args struct {
		FilePath          string `json:"filePath"`
		Preview           bool   `json:"preview"`
		StartText         string `json:"startText"`
		EndText           string `json:"endText"`
		SelectToEndOfLine bool   `json:"selectToEndOfLine"`
		MakeFrontmost     *bool  `json:"makeFrontmost"`
	}
	if err := mcp.DecodeArgs(req.Arguments, &args); err != nil {
		return nil, err
	}
	if args.FilePath == "" {
		return nil, errors.New("invalid arguments: filePath is required")
	}
	wp, err := c.CheckPath(ctx, args.FilePath, workspace.Show)
	if err != nil {
		return mcp.ErrorResult("%s", err.Error()), nil
	}
	path := wp.Abs
	// What the answer names is spelled as the client spells it: the far
	// path when Claude runs on an SSH host or in a container.
	tell := func(abs string) string {
		if p, err := c.ws.Far(abs); err == nil {
			return p
		}
		return args.FilePath
	}
	if why := notOpenable(path, tell(path)); why != "" {
		return mcp.ErrorResult("%s", why), nil
	}
	front := args.MakeFrontmost == nil || *args.MakeFrontmost
	ectx, cancel := host.EditorCtx(ctx)
	defer cancel()
	opened, err := c.ed.OpenFile(ectx, nvimbridge.OpenFileOptions{
		Path:              path,
		Preview:           args.Preview,
		StartText:         args.StartText,
		EndText:           args.EndText,
		SelectToEndOfLine: args.SelectToEndOfLine,
		Focus:             front,
	})
	if err != nil {
		return nil, fmt.Errorf("could not open %s: %w", tell(path), err)
	}
	if front {
		return mcp.TextResult("Opened file: " + tell(opened.Path)), nil
	}
	return mcp.JSONResult(struct {
		Success    bool   `json:"success"`
		FilePath   string `json:"filePath"`
		LanguageID string `json:"languageId"`
		LineCount  int    `json:"lineCount"`
	}{true, tell(opened.Path), languageID(opened.Filetype), opened.LineCount})
}

// notOpenable says why path is not a file that can be opened, in words a
// person can act on ("File not found: …", as VS Code says), or "". name
// is the path as the client knows it.
func notOpenable(path, name string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "File not found: " + name
	case err != nil:
		return fmt.Sprintf("cannot open %s: %v", name, err)
	case fi.IsDir():
		return name + " is a directory, not a file"
	}
	return ""
}
