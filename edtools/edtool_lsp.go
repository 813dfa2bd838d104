package edtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Bounds of every editor tool call.
const (
	// edtoolTimeout bounds a call as the model sees it; Neovim gets a bit
	// less, so that its own "timed out" message wins the race.
	edtoolTimeout     = 5 * time.Second
	edtoolNvimTimeout = 4 * time.Second
	// edtoolMaxItems bounds the locations, symbols, calls and actions listed.
	edtoolMaxItems = 100
	// edtoolMaxOutput bounds a result's text.
	edtoolMaxOutput = 48 << 10
)

// Input schemas.
const (
	schemaFile   = `"file":{"type":"string","description":"Path of the file, relative to the workspace or absolute"}`
	schemaLine   = `"line":{"type":"integer","minimum":1,"description":"1-based line"}`
	schemaCol    = `"col":{"type":"integer","minimum":1,"description":"1-based column in characters (default: the line's first word)"}`
	schemaSymbol = `"symbol":{"type":"string","description":"Instead of line/col: the symbol's name in file (e.g. \"Add\" or \"Server.Start\"); found among the file's symbols, else as the first whole word"}`
	// code_actions and apply_code_action: a point, a line or a range.
	schemaActionCol = `"col":{"type":"integer","minimum":1,"description":"1-based column: the actions at that point (as at the cursor); without col (and end_line) the whole line"}`
	schemaEndLine   = `"end_line":{"type":"integer","minimum":1,"description":"Last line of a range from line (and col) to this line's end"}`
	schemaPos       = `{"type":"object","properties":{` + schemaFile + `,` + schemaLine + `,` + schemaCol + `,` + schemaSymbol + `},"required":["file"],"additionalProperties":false}`
)

// allTools is every editor tool, enabled or not.
func (e *Tools) allTools() []mcp.Tool {
	tools := []mcp.Tool{
		e.lspTool("definition", "Where the symbol at a position (or named symbol) is defined, from the language server. Returns path:line:col: line text.", "", lspDefinition),
		e.lspTool("references", "Every reference to a symbol, from the language server (declaration included). Returns path:line:col: line text, one per line.", "", lspReferences),
		e.lspTool("implementations", "Implementations of an interface or abstract method (or the interfaces a type implements, per the server).", "", lspImplementations),
		e.lspTool("type_definition", "Where the type of the symbol at a position is defined.", "", lspTypeDefinition),
		e.lspTool("hover", "Type, signature and documentation of a symbol, as the language server shows it on hover.", "", lspHover),
		e.lspTool("document_symbols", "Outline of a file: its symbols (functions, types, methods, fields …) with kinds and line ranges.",
			`{"type":"object","properties":{`+schemaFile+`},"required":["file"],"additionalProperties":false}`, lspDocumentSymbols),
		e.lspTool("workspace_symbols", "Find symbols by name across the project (fuzzy, as the language server matches).",
			`{"type":"object","properties":{"query":{"type":"string","description":"Symbol name or part of it"},"file":{"type":"string","description":"Optional: a file whose language server to ask (default: any running server that can)"}},"required":["query"],"additionalProperties":false}`, lspWorkspaceSymbols),
		e.lspTool("call_hierarchy", "Callers (incoming) or callees (outgoing) of a function or method, with the call sites.",
			`{"type":"object","properties":{`+schemaFile+`,`+schemaLine+`,`+schemaCol+`,`+schemaSymbol+`,"direction":{"type":"string","enum":["incoming","outgoing"],"description":"incoming: who calls it (default); outgoing: what it calls"}},"required":["file"],"additionalProperties":false}`, lspCallHierarchy),
		e.lspTool("rename_preview", "What renaming a symbol would change, as a unified diff per file. Nothing is applied.",
			`{"type":"object","properties":{`+schemaFile+`,`+schemaLine+`,`+schemaCol+`,`+schemaSymbol+`,"new_name":{"type":"string","description":"The new name"}},"required":["file","new_name"],"additionalProperties":false}`, lspRenamePreview),
		e.lspTool("code_actions", "Code actions (quick fixes, refactorings) the language server offers at a line or range: numbered titles and kinds. Nothing is applied here: apply_code_action applies one (by number or title) after the user reviews its diff.",
			`{"type":"object","properties":{`+schemaFile+`,`+schemaLine+`,`+schemaActionCol+`,`+schemaSymbol+`,`+schemaEndLine+`},"required":["file"],"additionalProperties":false}`, lspCodeActions),
		e.applyCodeActionTool(),
		e.treesitterTool(),
		e.openBuffersTool(),
		e.openFileAtTool(),
	}
	if e.peers.IDETools != nil {
		tools = append(tools, e.peers.IDETools()...)
	}
	return tools
}

// rel shows a path relative to the workspace root when inside it.
func (e *Tools) rel(p string) string {
	return e.h.Workspace().Rel(p)
}

// posArgs are the position arguments shared by the LSP tools.
type posArgs struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Col       int    `json:"col"`
	Symbol    string `json:"symbol"`
	Query     string `json:"query"`
	NewName   string `json:"new_name"`
	Direction string `json:"direction"`
	EndLine   int    `json:"end_line"`
}

type lspFormatter func(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string

// lspTool builds one LSP-backed tool. schema "" means the position schema.
func (e *Tools) lspTool(op, desc, schema string, format lspFormatter) mcp.Tool {
	if schema == "" {
		schema = schemaPos
	}
	return mcp.Tool{
		Name:        op,
		Description: desc,
		InputSchema: json.RawMessage(schema),
		Handler: func(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
			var a posArgs
			if err := mcp.DecodeArgs(req.Arguments, &a); err != nil {
				return nil, err
			}
			q, err := e.query(ctx, op, a)
			if err != nil {
				return nil, err
			}
			ed := e.editor
			ctx, cancel := context.WithTimeout(ctx, edtoolTimeout)
			defer cancel()
			r, err := ed.LSP(ctx, q)
			if err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("%s: Neovim did not answer within %s", op, edtoolTimeout)
				}
				return nil, host.EditorError(op, err)
			}
			if r.Error != "" {
				return mcp.ErrorResult("%s", r.Error), nil
			}
			withheld := withhold(&r, e.h.Workspace().Files().Denied)
			text := format(e, q, r)
			if withheld > 0 {
				text += fmt.Sprintf("\n(%s in deny-listed files withheld: security.deny)", plural(withheld, "result", "results"))
			}
			return mcp.TextResult(clip(text)), nil
		},
	}
}

// query validates a call's arguments into the query Lua runs; its file
// goes through the boundary.
func (e *Tools) query(ctx context.Context, op string, a posArgs) (nvimbridge.LSPQuery, error) {
	q := nvimbridge.LSPQuery{Op: op, Line: a.Line, Col: a.Col, Symbol: strings.TrimSpace(a.Symbol), Query: a.Query,
		NewName: a.NewName, Direction: a.Direction, EndLine: a.EndLine, Limit: edtoolMaxItems, Timeout: edtoolNvimTimeout}
	if a.File != "" {
		wp, err := e.peers.Paths.CheckPath(ctx, a.File, workspace.Show)
		if err != nil {
			return q, err
		}
		q.File, q.Rel = wp.Abs, e.rel(wp.Abs)
	}
	needsPos := op != "document_symbols" && op != "workspace_symbols"
	switch {
	case a.Line < 0 || a.Col < 0 || a.EndLine < 0:
		return q, errors.New("invalid arguments: line, col and end_line are 1-based")
	case op == "workspace_symbols":
		if strings.TrimSpace(a.Query) == "" {
			return q, errors.New("invalid arguments: query is required")
		}
	case a.File == "":
		return q, errors.New("invalid arguments: file is required")
	case needsPos && q.Symbol == "" && a.Line == 0:
		return q, errors.New("invalid arguments: give line (and col) or symbol")
	case op == "rename_preview" && strings.TrimSpace(a.NewName) == "":
		return q, errors.New("invalid arguments: new_name is required")
	case op == "call_hierarchy" && a.Direction != "" && a.Direction != "incoming" && a.Direction != "outgoing":
		return q, errors.New(`invalid arguments: direction must be "incoming" or "outgoing"`)
	}
	return q, nil
}

// clip bounds a result's text.
func clip(s string) string {
	if len(s) <= edtoolMaxOutput {
		return s
	}
	cut := strings.LastIndexByte(s[:edtoolMaxOutput], '\n')
	if cut < 0 {
		cut = edtoolMaxOutput
	}
	return s[:cut] + "\n… (output truncated)"
}

// subject names what a query was about: "Add (calc.go:3:6)".
func (e *Tools) subject(q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	if r.Resolved == nil {
		return q.Rel
	}
	name := q.Symbol
	if name == "" {
		name = r.Resolved.Word
	}
	where := fmt.Sprintf("%s:%d:%d", e.rel(r.Resolved.Path), r.Resolved.Line, r.Resolved.Col)
	if name == "" {
		return where
	}
	return fmt.Sprintf("%s (%s)", name, where)
}

func (e *Tools) locLine(l nvimbridge.LSPLocation) string {
	return fmt.Sprintf("%s:%d:%d: %s", e.rel(l.Path), l.Line, l.Col, l.Text)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func more(total, shown int) string {
	if total > shown {
		return fmt.Sprintf("\n… and %d more", total-shown)
	}
	return ""
}

func locationFormatter(what, none string) lspFormatter {
	return func(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
		subj := e.subject(q, r)
		if len(r.Locations) == 0 {
			return fmt.Sprintf("%s %s", none, subj)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s of %s:\n", plural(r.Total, what, what+"s"), subj)
		for _, l := range r.Locations {
			b.WriteString(e.locLine(l))
			b.WriteByte('\n')
		}
		return strings.TrimRight(b.String(), "\n") + more(r.Total, len(r.Locations))
	}
}

var (
	lspDefinition      = locationFormatter("definition", "no definition found for")
	lspReferences      = locationFormatter("reference", "no references found to")
	lspImplementations = locationFormatter("implementation", "no implementations found for")
	lspTypeDefinition  = locationFormatter("type definition", "no type definition found for")
)

func lspHover(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	if strings.TrimSpace(r.Hover) == "" {
		return "no hover information for " + e.subject(q, r)
	}
	return fmt.Sprintf("hover for %s:\n%s", e.subject(q, r), r.Hover)
}

func lspDocumentSymbols(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	if len(r.Symbols) == 0 {
		return "no symbols in " + q.Rel
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s (kind name detail — lines):\n", plural(r.Total, "symbol", "symbols"), q.Rel)
	for _, s := range r.Symbols {
		b.WriteString(strings.Repeat("  ", s.Depth))
		b.WriteString(s.Kind + " " + s.Name)
		if s.Detail != "" {
			b.WriteString(" " + s.Detail)
		}
		if s.Line > 0 {
			if s.EndLine > s.Line {
				fmt.Fprintf(&b, " — %d-%d", s.Line, s.EndLine)
			} else {
				fmt.Fprintf(&b, " — %d", s.Line)
			}
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + more(r.Total, len(r.Symbols))
}

func lspWorkspaceSymbols(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	if len(r.Symbols) == 0 {
		return fmt.Sprintf("no symbols match %q", q.Query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s match %q:\n", plural(r.Total, "symbol", "symbols"), q.Query)
	for _, s := range r.Symbols {
		fmt.Fprintf(&b, "%s %s", s.Kind, s.Name)
		if s.Container != "" {
			fmt.Fprintf(&b, " (in %s)", s.Container)
		}
		if s.Path != "" {
			fmt.Fprintf(&b, " — %s:%d:%d", e.rel(s.Path), s.Line, s.Col)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + more(r.Total, len(r.Symbols))
}

func lspCallHierarchy(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	incoming := q.Direction != "outgoing"
	subj := e.subject(q, r)
	if r.Item != nil {
		subj = fmt.Sprintf("%s %s (%s:%d)", r.Item.Kind, r.Item.Name, e.rel(r.Item.Path), r.Item.Line)
	}
	if len(r.Calls) == 0 {
		if incoming {
			return "no callers of " + subj
		}
		return subj + " calls nothing the server knows of"
	}
	var b strings.Builder
	if incoming {
		fmt.Fprintf(&b, "%s of %s:\n", plural(r.Total, "caller", "callers"), subj)
	} else {
		fmt.Fprintf(&b, "%s calls %s:\n", subj, plural(r.Total, "function", "functions"))
	}
	for _, c := range r.Calls {
		fmt.Fprintf(&b, "%s %s — %s:%d:%d\n", c.Kind, c.Name, e.rel(c.Path), c.Line, c.Col)
		for _, s := range c.Sites {
			b.WriteString("  call at " + e.locLine(s) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n") + more(r.Total, len(r.Calls))
}

func lspRenamePreview(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	subj := e.subject(q, r)
	if len(r.Files) == 0 && len(r.Other) == 0 {
		return fmt.Sprintf("renaming %s to %s changes nothing", subj, q.NewName)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "renaming %s to %s would make %s in %s (preview only, nothing applied):\n",
		subj, q.NewName, plural(r.Total, "edit", "edits"), plural(len(r.Files), "file", "files"))
	for _, f := range r.Files {
		rel := e.rel(f.Path)
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n%s", rel, rel, f.Diff)
		if !strings.HasSuffix(f.Diff, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, o := range r.Other {
		b.WriteString("also: " + o + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func lspCodeActions(e *Tools, q nvimbridge.LSPQuery, r nvimbridge.LSPResult) string {
	where := q.Rel
	if r.Resolved != nil {
		where = fmt.Sprintf("%s:%d", e.rel(r.Resolved.Path), r.Resolved.Line)
		if q.EndLine > r.Resolved.Line {
			where += fmt.Sprintf("-%d", q.EndLine)
		}
	}
	if len(r.Actions) == 0 {
		return "no code actions at " + where
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s (%s considered; not applied — apply_code_action applies one by number):\n", plural(r.Total, "code action", "code actions"), where,
		plural(r.Diagnostics, "diagnostic", "diagnostics"))
	for i, a := range r.Actions {
		fmt.Fprintf(&b, "%d. %s", i+1, a.Title)
		if a.Kind != "" {
			b.WriteString(" [" + a.Kind + "]")
		}
		if a.Preferred {
			b.WriteString(" (preferred)")
		}
		if a.Command != "" {
			b.WriteString(" (command " + a.Command + ")")
		}
		if a.Disabled != "" {
			b.WriteString(" (disabled: " + a.Disabled + ")")
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + more(r.Total, len(r.Actions))
}

// withhold drops from an LSP result everything in a file denied says is
// deny-listed — locations with their line text, symbols, call sites, rename
// diffs, code-action edits — and returns how many it dropped. A deny-listed
// file's text never leaves in any form.
func withhold(r *nvimbridge.LSPResult, denied func(abs string) bool) int {
	n := 0
	keep := func(path string) bool {
		if path != "" && denied(path) {
			n++
			return false
		}
		return true
	}
	if r.Resolved != nil && !keep(r.Resolved.Path) {
		r.Resolved = nil
	}
	if r.Item != nil && !keep(r.Item.Path) {
		r.Item = nil
	}
	r.Locations = kept(r.Locations, func(l nvimbridge.LSPLocation) bool { return keep(l.Path) })
	r.Symbols = kept(r.Symbols, func(s nvimbridge.LSPSymbol) bool { return keep(s.Path) })
	r.Calls = kept(r.Calls, func(c nvimbridge.LSPCall) bool { return keep(c.Path) })
	for i := range r.Calls {
		r.Calls[i].Sites = kept(r.Calls[i].Sites, func(l nvimbridge.LSPLocation) bool { return keep(l.Path) })
	}
	r.Files = kept(r.Files, func(f nvimbridge.LSPFileDiff) bool { return keep(f.Path) })
	r.Edits = kept(r.Edits, func(f nvimbridge.LSPFileEdit) bool { return keep(f.Path) })
	if n > 0 && r.Total >= n {
		r.Total -= n
	}
	return n
}

// kept is xs without the items ok refuses, in place.
func kept[T any](xs []T, ok func(T) bool) []T {
	out := xs[:0]
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
