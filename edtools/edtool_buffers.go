package edtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// treesitterTool: treesitter_node {file, line, col} → the node at the
// position, its ancestors and enclosing scopes (function, class …).
func (e *Tools) treesitterTool() mcp.Tool {
	return mcp.Tool{
		Name:        "treesitter_node",
		Description: "The syntax node at a position (Neovim's tree-sitter): its type and text, its ancestors, and the enclosing function/class/… with name and line range.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + schemaFile + `,` + schemaLine + `,` + schemaCol + `},"required":["file","line"],"additionalProperties":false}`),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			a, ed, file, err := e.fileAt(ctx, req, true)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(ctx, edtoolTimeout)
			defer cancel()
			n, err := ed.TreesitterNode(ctx, file, e.rel(file), a.Line, a.Col)
			if err != nil {
				return nil, host.EditorError("treesitter_node", err)
			}
			if n.Error != "" {
				return mcp.ErrorResult("%s", n.Error), nil
			}
			rel := e.rel(file)
			var b strings.Builder
			fmt.Fprintf(&b, "%s node %s at %s:%d:%d-%d:%d: %s\n", n.Lang, n.Type, rel, n.Line, n.Col, n.EndLine, n.EndCol, firstLine(n.Text))
			if len(n.Ancestors) > 0 {
				b.WriteString("ancestors: " + strings.Join(n.Ancestors, " < ") + "\n")
			}
			for _, s := range n.Scopes {
				name := ""
				if s.Name != "" {
					name = " " + s.Name
				}
				fmt.Fprintf(&b, "inside %s%s — %s:%d-%d: %s\n", s.Type, name, rel, s.Line, s.EndLine, s.FirstLine)
			}
			return mcp.TextResult(clip(strings.TrimRight(b.String(), "\n"))), nil
		},
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// openBuffersTool: open_buffers {} → the listed file buffers, with their
// state and language servers.
func (e *Tools) openBuffersTool() mcp.Tool {
	return mcp.Tool{
		Name:        "open_buffers",
		Description: "The files open in Neovim: path, filetype, line count, unsaved changes, whether shown, and the language servers attached.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Handler: func(ctx context.Context, _ *mcp.ToolRequest) (*mcp.ToolResult, error) {
			ed := e.editor
			ctx, cancel := context.WithTimeout(ctx, edtoolTimeout)
			defer cancel()
			bufs, err := ed.LSPBuffers(ctx)
			if err != nil {
				return nil, host.EditorError("open_buffers", err)
			}
			if len(bufs) == 0 {
				return mcp.TextResult("no files are open"), nil
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s open:\n", plural(len(bufs), "file", "files"))
			for i, buf := range bufs {
				if i == edtoolMaxItems {
					fmt.Fprintf(&b, "… and %d more\n", len(bufs)-i)
					break
				}
				b.WriteString(e.rel(buf.Path))
				if buf.Filetype != "" {
					b.WriteString(" (" + buf.Filetype + ")")
				}
				if buf.Loaded {
					fmt.Fprintf(&b, " %d lines", buf.Lines)
				} else {
					b.WriteString(" not loaded")
				}
				var flags []string
				if buf.Modified {
					flags = append(flags, "unsaved changes")
				}
				if buf.Current {
					flags = append(flags, "current")
				} else if buf.Visible {
					flags = append(flags, "visible")
				}
				if len(buf.Clients) > 0 {
					flags = append(flags, "lsp: "+strings.Join(buf.Clients, ", "))
				}
				if len(flags) > 0 {
					b.WriteString(" [" + strings.Join(flags, "; ") + "]")
				}
				b.WriteByte('\n')
			}
			return mcp.TextResult(clip(strings.TrimRight(b.String(), "\n"))), nil
		},
	}
}

// openFileAtTool: open_file_at {file, line, col?} shows a file to the user
// (the one tool that changes what the editor shows).
func (e *Tools) openFileAtTool() mcp.Tool {
	return mcp.Tool{
		Name:        "open_file_at",
		Description: "Show a file to the user in Neovim with the cursor at a line (the user's focus stays where it is). Use it to point the user at code.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + schemaFile + `,` + schemaLine + `,` + schemaCol + `},"required":["file"],"additionalProperties":false}`),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			a, ed, file, err := e.fileAt(ctx, req, false)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(ctx, edtoolTimeout)
			defer cancel()
			o, err := ed.OpenFileAt(ctx, file, e.rel(file), a.Line, a.Col)
			if err != nil {
				return nil, host.EditorError("open_file_at", err)
			}
			if o.Error != "" {
				return mcp.ErrorResult("%s", o.Error), nil
			}
			return mcp.TextResult(fmt.Sprintf("showing %s:%d:%d to the user (%d lines): %s", e.rel(o.Path), o.Line, o.Col, o.Lines, o.Text)), nil
		},
	}
}

// fileAt decodes a {file, line, col} call (line required when needLine)
// and returns its arguments, the editor and the file made absolute and
// put through the boundary (these tools return the file's text).
func (e *Tools) fileAt(ctx context.Context, req *mcp.ToolRequest, needLine bool) (posArgs, Editor, string, error) {
	var a posArgs
	if err := mcp.DecodeArgs(req.Arguments, &a); err != nil {
		return a, nil, "", err
	}
	switch {
	case needLine && (a.File == "" || a.Line < 1 || a.Col < 0):
		return a, nil, "", errors.New("invalid arguments: file and line (1-based) are required; col is 1-based")
	case !needLine && (a.File == "" || a.Line < 0 || a.Col < 0):
		return a, nil, "", errors.New("invalid arguments: file is required; line and col are 1-based")
	}
	ed := e.editor
	wp, err := e.peers.Paths.CheckPath(ctx, a.File, workspace.Show)
	if err != nil {
		return a, nil, "", err
	}
	return a, ed, wp.Abs, nil
}
