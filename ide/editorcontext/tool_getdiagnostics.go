package editorcontext

import (
	"context"
	"encoding/json"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// getDiagnostics {uri?} → JSON [{uri, diagnostics:[{message, severity,
// range, source, code}]}] (PROTOCOL.md §6). With a uri: that file's entry,
// its list empty when it has no diagnostics or is not open; the CLI asks so
// just before it edits a file, with a 500 ms budget, and is answered from
// the cache without asking Neovim. Without: every file with diagnostics,
// after bringing the cache up to date (the CLI asks so after edits, to find
// the diagnostics they introduced).

const diagnosticsDescription = "Get language diagnostics (errors, warnings, hints) from Neovim: from language servers and any other source of vim.diagnostic. Ranges are 0-based, characters in UTF-16 code units."

func (c *Context) getDiagnosticsTool() mcp.Tool {
	return mcp.Tool{
		Name:        "getDiagnostics",
		Description: diagnosticsDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","description":"Optional file URI to get diagnostics for. If not provided, gets diagnostics for all files."}}}`),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			var args struct {
				URI *string `json:"uri"`
			}
			if err := mcp.DecodeArgs(req.Arguments, &args); err != nil {
				return nil, err
			}
			if args.URI != nil && *args.URI != "" {
				path, ok := c.ws.Abs(*args.URI) // the one rule: a far URI maps to the local path
				if !ok {
					return mcp.TextResult("[]"), nil
				}
				return mcp.TextResult(c.diags.forPath(path)), nil
			}
			c.syncDiagnostics(ctx)
			return mcp.EscapedTextResult(c.diags.allEscaped()), nil
		},
	}
}
