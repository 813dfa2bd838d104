package nvimbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file is the Go side of lua/context.lua: the editor facts and actions
// behind diagnostics, the editor tools (openFile, getOpenEditors …) and the
// workspace methods. Paths going in are absolute; the Lua side finds a
// buffer by name, else by the file a buffer's name resolves to.

// Buffer is a listed buffer that holds a file.
type Buffer struct {
	Bufnr     int    `json:"bufnr"`
	Path      string `json:"path"`
	Filetype  string `json:"filetype"`
	Modified  bool   `json:"modified"`
	Active    bool   `json:"active"` // shown in the window the user edits in
	Loaded    bool   `json:"loaded"`
	LineCount int    `json:"line_count"`
}

// CurrentFile is the file in the window the user edits in (the current
// window, or the last one used while the Claude terminal has the focus).
type CurrentFile struct {
	Path      string `json:"path"`
	Filetype  string `json:"filetype"`
	Modified  bool   `json:"modified"`
	LineCount int    `json:"line_count"`
	Line      int    `json:"line"`      // 0-based
	Character int    `json:"character"` // 0-based, UTF-16 code units
}

// Editors is the state of the editor's buffers.
type Editors struct {
	Buffers []Buffer     `json:"buffers"`
	Current *CurrentFile `json:"current"` // nil when no file is in an editing window
}

// UnmarshalJSON decodes Editors from its JSON encoding, or from
// ctx_editors' answer, which packs the buffers in one string (see
// lua/context.lua): with 500 buffers, 500 JSON objects took three times as
// long to decode (make bench, scenario 7).
func (e *Editors) UnmarshalJSON(data []byte) error {
	var aux struct {
		Buffers []Buffer     `json:"buffers"`
		Packed  *string      `json:"packed"`
		Current *CurrentFile `json:"current"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	e.Buffers, e.Current = aux.Buffers, aux.Current
	if aux.Packed != nil {
		bufs, err := unpackBuffers(*aux.Packed)
		if err != nil {
			return err
		}
		e.Buffers = bufs
	}
	return nil
}

// Flags of a packed buffer.
const (
	packedModified = 1
	packedActive   = 2
	packedLoaded   = 4
)

// unpackBuffers decodes ctx_editors' packed buffers: per buffer
// "<bufnr> <line_count> <flags> <filetype>\x00<path>\x00".
func unpackBuffers(s string) ([]Buffer, error) {
	out := make([]Buffer, 0, strings.Count(s, "\x00")/2)
	for s != "" {
		head, rest, ok := strings.Cut(s, "\x00")
		if !ok {
			return nil, fmt.Errorf("packed buffers: no path after %q", head)
		}
		path, rest, ok := strings.Cut(rest, "\x00")
		if !ok {
			return nil, fmt.Errorf("packed buffers: unterminated path %q", path)
		}
		s = rest
		f := strings.SplitN(head, " ", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("packed buffers: bad record %q", head)
		}
		bufnr, err1 := strconv.Atoi(f[0])
		lines, err2 := strconv.Atoi(f[1])
		flags, err3 := strconv.Atoi(f[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("packed buffers: bad record %q: %w", head, err)
		}
		out = append(out, Buffer{
			Bufnr:     bufnr,
			Path:      path,
			Filetype:  f[3],
			Modified:  flags&packedModified != 0,
			Active:    flags&packedActive != 0,
			Loaded:    flags&packedLoaded != 0,
			LineCount: lines,
		})
	}
	return out, nil
}

// Editors returns the listed file buffers and the current file.
func (b *Bridge) Editors(ctx context.Context) (Editors, error) {
	var out Editors
	err := b.Call(ctx, "ctx_editors", nil, &out)
	return out, err
}

// Workspace is the editor's working directory, its workspace folders (the
// global cwd first, then the folders of running language servers that are
// not inside it) and Neovim's version.
type Workspace struct {
	Cwd     string   `json:"cwd"`
	Folders []string `json:"folders"`
	Version string   `json:"version"`
}

// Workspace returns the workspace folders.
func (b *Bridge) Workspace(ctx context.Context) (Workspace, error) {
	var out Workspace
	err := b.Call(ctx, "ctx_workspace", nil, &out)
	return out, err
}

// OpenFileOptions says how to open a file (the openFile tool's arguments).
type OpenFileOptions struct {
	Path string `json:"path"` // absolute; must exist
	// Preview keeps a buffer that was not listed unlisted until it is
	// edited (Neovim's stand-in for VS Code's preview tabs).
	Preview bool `json:"preview"`
	// StartText and EndText select from the first occurrence of StartText
	// to the end of the first EndText after it (StartText alone selects
	// itself); SelectToEndOfLine extends the end to its line's end.
	StartText         string `json:"start_text,omitempty"`
	EndText           string `json:"end_text,omitempty"`
	SelectToEndOfLine bool   `json:"select_to_eol"`
	// Focus shows the file in an editing window and moves the focus there
	// (the selection in Visual mode); without it the buffer is only loaded
	// and the selection becomes its '<,'> marks.
	Focus bool `json:"focus"`
}

// OpenedFile describes a file opened by OpenFile.
type OpenedFile struct {
	Path      string `json:"path"`
	Filetype  string `json:"filetype"`
	LineCount int    `json:"line_count"`
	Found     bool   `json:"found"` // StartText was found
}

// OpenFile opens a file in the editor.
func (b *Bridge) OpenFile(ctx context.Context, o OpenFileOptions) (OpenedFile, error) {
	var out OpenedFile
	err := b.Call(ctx, "ctx_open_file", o, &out)
	return out, err
}

// OpenOutcome is what happened to one file of OpenFiles.
type OpenOutcome struct {
	Path    string `json:"path"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// OpenFiles loads files as listed buffers and shows the last one in the
// editing window, leaving the focus where it is.
func (b *Bridge) OpenFiles(ctx context.Context, paths []string) ([]OpenOutcome, error) {
	var out []OpenOutcome
	err := b.Call(ctx, "ctx_open_files", map[string]any{"paths": paths}, &out)
	return out, err
}

// Document is whether a file is open in a buffer and has unsaved changes.
type Document struct {
	Open     bool   `json:"open"`
	Path     string `json:"path"`
	Modified bool   `json:"modified"`
}

// Document looks up the buffer of a file.
func (b *Bridge) Document(ctx context.Context, path string) (Document, error) {
	var out Document
	err := b.Call(ctx, "ctx_document", map[string]any{"path": path}, &out)
	return out, err
}

// Reasons a SaveDocument or FormatDocument fails.
const (
	ReasonNotOpen     = "not_open"     // no loaded buffer holds the file
	ReasonConflict    = "conflict"     // the file changed on disk since the buffer read it
	ReasonReadOnly    = "readonly"     // 'readonly' is set
	ReasonFailed      = "failed"       // :write or the formatter failed
	ReasonNoFormatter = "no_formatter" // no attached language server formats
)

// SaveResult is the outcome of SaveDocument.
type SaveResult struct {
	OK        bool   `json:"ok"`
	Path      string `json:"path"`
	Unchanged bool   `json:"unchanged"` // nothing to save: the buffer matched the file
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// SaveDocument writes a file's buffer if it has unsaved changes. It refuses
// (ReasonConflict) when the file changed on disk since the buffer read it,
// rather than overwrite that change or let Neovim ask.
func (b *Bridge) SaveDocument(ctx context.Context, path string) (SaveResult, error) {
	var out SaveResult
	err := b.Call(ctx, "ctx_save", map[string]any{"path": path}, &out)
	return out, err
}

// FormatResult is the outcome of FormatDocument.
type FormatResult struct {
	OK      bool   `json:"ok"`
	Client  string `json:"client"`  // the language server that formatted
	Saved   bool   `json:"saved"`   // the buffer was written after formatting
	Changed bool   `json:"changed"` // formatting changed the text
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// FormatDocument formats a file with an attached language server,
// synchronously, loading the file if needed. A buffer without unsaved
// changes is saved afterwards.
func (b *Bridge) FormatDocument(ctx context.Context, path string, timeout time.Duration) (FormatResult, error) {
	var out FormatResult
	err := b.Call(ctx, "ctx_format", map[string]any{"path": path, "timeout_ms": timeout.Milliseconds()}, &out)
	return out, err
}

// BufferText is a file's text as its buffer holds it.
type BufferText struct {
	// Denied: the file matches the user's selection.deny globs, and its
	// contents must not leave Neovim. Nothing else is set.
	Denied   bool `json:"denied"`
	Loaded   bool `json:"loaded"`
	Modified bool `json:"modified"`
	// Text is set only when Modified: what :write would put in the file.
	Text string `json:"text"`
}

// ReadDocument returns the unsaved text of a file's buffer, if it has any.
// real is the path with symlinks resolved (also checked against the
// deny-list); it may equal path.
func (b *Bridge) ReadDocument(ctx context.Context, path, real string) (BufferText, error) {
	var out BufferText
	err := b.Call(ctx, "ctx_read", map[string]any{"path": path, "real": real}, &out)
	return out, err
}

// WriteResult is the outcome of WriteDocument.
type WriteResult struct {
	// Loaded is false when no loaded buffer holds the file: nothing was
	// done, and the caller writes the file itself.
	Loaded  bool   `json:"loaded"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	// ReplacedUnsaved: the buffer had unsaved changes, now replaced (undo
	// brings them back).
	ReplacedUnsaved bool `json:"replaced_unsaved"`
}

// WriteDocument replaces the text of a file's loaded buffer (one undoable
// change) and writes it.
func (b *Bridge) WriteDocument(ctx context.Context, path, content string) (WriteResult, error) {
	var out WriteResult
	err := b.Call(ctx, "ctx_write", map[string]any{"path": path, "content": content}, &out)
	return out, err
}

// DiagnosticsSync is the outcome of SyncDiagnostics.
type DiagnosticsSync struct {
	// Seq is the number of the last diagnostics_changed notification sent
	// (all earlier changes are in it or before it); nil when the Lua side
	// is not attached.
	Seq *int64 `json:"seq"`
	// Reloaded counts buffers reloaded because their file changed on disk.
	Reloaded int `json:"reloaded"`
	// Wait lists reloaded files with a language server attached or with
	// diagnostics before the reload: new diagnostics for them are likely
	// on their way.
	Wait []string `json:"wait"`
}

// SyncDiagnostics reloads unmodified buffers whose file changed on disk and
// sends the diagnostics changes not yet sent.
func (b *Bridge) SyncDiagnostics(ctx context.Context) (DiagnosticsSync, error) {
	var out DiagnosticsSync
	err := b.Call(ctx, "ctx_diagnostics_sync", nil, &out)
	return out, err
}
