package nvimbridge

import (
	"context"
	"time"
)

// LSPQuery is one LSP-backed editor tool call (see lua/lsp.lua). Lines and
// columns are 1-based; columns count characters (code points).
type LSPQuery struct {
	// Op is definition, references, implementations, type_definition,
	// hover, document_symbols, workspace_symbols, call_hierarchy,
	// rename_preview, code_actions or code_action_edit (the proposed file
	// texts of one code action: see LSPResult.Edits).
	Op string `json:"op"`
	// File is absolute ("" only for workspace_symbols); Rel is how messages
	// name it.
	File string `json:"file,omitempty"`
	Rel  string `json:"rel,omitempty"`
	// A position is Line (with Col, or the line's first word), or Symbol,
	// found by name in File.
	Line      int    `json:"line,omitempty"`
	Col       int    `json:"col,omitempty"`
	Symbol    string `json:"symbol,omitempty"`
	Query     string `json:"query,omitempty"`     // workspace_symbols
	NewName   string `json:"new_name,omitempty"`  // rename_preview
	Direction string `json:"direction,omitempty"` // call_hierarchy: incoming|outgoing
	EndLine   int    `json:"end_line,omitempty"`  // code_actions, code_action_edit
	// Action names the code action of code_action_edit: its 1-based number
	// in the code_actions listing, or its title.
	Action string `json:"action,omitempty"`
	// Limit bounds the items returned (Total still counts them all).
	Limit int `json:"limit,omitempty"`
	// Timeout bounds the waits in Neovim (for a server to start, and for
	// its answers).
	Timeout time.Duration `json:"-"`
	// TimeoutMS is Timeout as Lua gets it.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// LSPLocation is a place in a file; Text is its line, trimmed.
type LSPLocation struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	EndLine int    `json:"end_line,omitempty"`
	EndCol  int    `json:"end_col,omitempty"`
	Text    string `json:"text"`
	// How a {symbol} argument was resolved ("document symbol" or "text
	// search"); empty for a given position.
	How string `json:"how,omitempty"`
	// Word is the identifier at the position, for messages.
	Word string `json:"word,omitempty"`
}

// LSPSymbol is a document or workspace symbol; Depth is its nesting.
type LSPSymbol struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Detail    string `json:"detail,omitempty"`
	Container string `json:"container,omitempty"`
	Path      string `json:"path,omitempty"`
	Line      int    `json:"line,omitempty"`
	Col       int    `json:"col,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
	Depth     int    `json:"depth"`
}

// LSPCall is one caller (incoming) or callee (outgoing) with the call sites.
type LSPCall struct {
	Name   string        `json:"name"`
	Kind   string        `json:"kind"`
	Detail string        `json:"detail,omitempty"`
	Path   string        `json:"path"`
	Line   int           `json:"line"`
	Col    int           `json:"col"`
	Sites  []LSPLocation `json:"sites"`
}

// LSPFileDiff is one file of a rename preview: a unified diff body (hunks
// only, no header).
type LSPFileDiff struct {
	Path  string `json:"path"`
	Edits int    `json:"edits"`
	Diff  string `json:"diff"`
}

// LSPAction is a code action's title and kind.
type LSPAction struct {
	Title     string `json:"title"`
	Kind      string `json:"kind,omitempty"`
	Preferred bool   `json:"preferred,omitempty"`
	Disabled  string `json:"disabled,omitempty"`
	Client    string `json:"client,omitempty"`
	// Command is the server command the action runs, if it is one (or
	// carries one) before it is resolved.
	Command string `json:"command,omitempty"`
	// Index is the action's 1-based number in the listing
	// (code_action_edit).
	Index int `json:"index,omitempty"`
}

// LSPFileEdit is one file a code action would change: its text now (as
// writing its buffer would put it on disk; "" for a file to create) and
// after the edit.
type LSPFileEdit struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
	Exists bool   `json:"exists"`
	Edits  int    `json:"edits"`
}

// LSPItem is the call hierarchy's subject.
type LSPItem struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Path string `json:"path"`
	Line int    `json:"line"`
}

// LSPResult is what an LSP query found. Error is a failure the model should
// read (no server, no such symbol, a timeout); the other fields depend on
// the operation.
type LSPResult struct {
	Error       string        `json:"error,omitempty"`
	Client      string        `json:"client,omitempty"`
	Resolved    *LSPLocation  `json:"resolved,omitempty"`
	Total       int           `json:"total"`
	Locations   []LSPLocation `json:"locations,omitempty"`
	Hover       string        `json:"hover,omitempty"`
	Symbols     []LSPSymbol   `json:"symbols,omitempty"`
	Item        *LSPItem      `json:"item,omitempty"`
	Calls       []LSPCall     `json:"calls,omitempty"`
	Files       []LSPFileDiff `json:"files,omitempty"`
	Other       []string      `json:"other,omitempty"`
	Actions     []LSPAction   `json:"actions,omitempty"`
	Diagnostics int           `json:"diagnostics,omitempty"`
	// code_action_edit: the action chosen, the files it would change, the
	// server command it ran with its edits held for review (Command), or
	// the command it carries besides its edit, not run (SkippedCommand).
	Action         *LSPAction    `json:"action,omitempty"`
	Edits          []LSPFileEdit `json:"edits,omitempty"`
	Command        string        `json:"command,omitempty"`
	SkippedCommand string        `json:"skipped_command,omitempty"`
}

// LSP runs an LSP-backed editor tool in Neovim, in one round trip.
func (b *Bridge) LSP(ctx context.Context, q LSPQuery) (LSPResult, error) {
	if q.Timeout > 0 {
		q.TimeoutMS = int(q.Timeout / time.Millisecond)
	}
	var r LSPResult
	err := b.Call(ctx, "lsp_query", q, &r)
	return r, err
}

// LSPFileWrite is the outcome for one file of LSPApplyFiles.
type LSPFileWrite struct {
	Path    string `json:"path"`
	Written bool   `json:"written,omitempty"`
	Error   string `json:"error,omitempty"`
}

// LSPApplied is what LSPApplyFiles did. Error (nothing was applied: a file
// changed since the proposal) and Busy (Neovim was inside an autocommand,
// nothing was done: ask again) are set alone.
type LSPApplied struct {
	Error string         `json:"error,omitempty"`
	Busy  bool           `json:"busy,omitempty"`
	Files []LSPFileWrite `json:"files,omitempty"`
}

// LSPApplyFiles puts accepted texts (After) into the files' buffers and
// writes them. Each file must still read as Before (or not exist when
// !Exists), else nothing is applied; a failed write leaves its buffer as it
// was.
func (b *Bridge) LSPApplyFiles(ctx context.Context, files []LSPFileEdit) (LSPApplied, error) {
	var r LSPApplied
	err := b.Call(ctx, "lsp_apply_files", map[string]any{"files": files}, &r)
	return r, err
}

// TSScope is an enclosing syntax node worth naming (function, class …).
type TSScope struct {
	Type      string `json:"type"`
	Name      string `json:"name,omitempty"`
	Line      int    `json:"line"`
	Col       int    `json:"col"`
	EndLine   int    `json:"end_line"`
	EndCol    int    `json:"end_col"`
	FirstLine string `json:"first_line,omitempty"`
}

// TSNode is the tree-sitter node at a position.
type TSNode struct {
	Error     string    `json:"error,omitempty"`
	Lang      string    `json:"lang"`
	Type      string    `json:"type"`
	Text      string    `json:"text"`
	Line      int       `json:"line"`
	Col       int       `json:"col"`
	EndLine   int       `json:"end_line"`
	EndCol    int       `json:"end_col"`
	Ancestors []string  `json:"ancestors"`
	Scopes    []TSScope `json:"scopes"`
}

// TreesitterNode returns the node at line:col (1-based; col 0 means the
// line's first word) of file (absolute); rel names it in messages.
func (b *Bridge) TreesitterNode(ctx context.Context, file, rel string, line, col int) (TSNode, error) {
	var n TSNode
	err := b.Call(ctx, "ts_node", map[string]any{"file": file, "rel": rel, "line": line, "col": col}, &n)
	return n, err
}

// LSPBuffer is a listed file buffer and the language servers attached to it.
type LSPBuffer struct {
	Bufnr    int      `json:"bufnr"`
	Path     string   `json:"path"`
	Filetype string   `json:"filetype"`
	Modified bool     `json:"modified"`
	Loaded   bool     `json:"loaded"`
	Lines    int      `json:"lines,omitempty"`
	Current  bool     `json:"current,omitempty"`
	Visible  bool     `json:"visible,omitempty"`
	Clients  []string `json:"clients"`
}

// LSPBuffers lists the listed file buffers.
func (b *Bridge) LSPBuffers(ctx context.Context) ([]LSPBuffer, error) {
	var out []LSPBuffer
	err := b.Call(ctx, "lsp_buffers", nil, &out)
	return out, err
}

// OpenedAt is where open_file_at put the cursor.
type OpenedAt struct {
	Error string `json:"error,omitempty"`
	Path  string `json:"path"`
	Line  int    `json:"line"`
	Col   int    `json:"col"`
	Lines int    `json:"lines"`
	Text  string `json:"text"`
}

// OpenFileAt shows file (absolute) at line:col in a file window, leaving
// the focus where it is.
func (b *Bridge) OpenFileAt(ctx context.Context, file, rel string, line, col int) (OpenedAt, error) {
	var o OpenedAt
	err := b.Call(ctx, "open_file_at", map[string]any{"file": file, "rel": rel, "line": line, "col": col}, &o)
	return o, err
}
