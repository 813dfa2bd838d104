package nvimbridge

import (
	"context"
	"fmt"
)

// Kinds of SelectionState.
const (
	// SelectionKindSelection: a file's selection (possibly empty: the cursor).
	SelectionKindSelection = "selection"
	// SelectionKindSkip: the current window shows no file (terminal, help,
	// quickfix …); nothing to report.
	SelectionKindSkip = "skip"
	// SelectionKindKeep: the selection last reported still stands (the
	// cursor has not moved since visual mode ended).
	SelectionKindKeep = "keep"
	// SelectionKindWait: the cursor is still moving; ask again after
	// SelectionState.WaitMS.
	SelectionKindWait = "wait"
	// SelectionKindDenied: the file is on the deny-list; its contents and
	// selection must not be shared.
	SelectionKindDenied = "denied"
	// SelectionKindNone: no window shows a file.
	SelectionKindNone = "none"
)

// SelectionPos is a position in a file: 0-based line and UTF-16 code unit
// offset in it, as LSP and VS Code count.
type SelectionPos struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// SelectionState is one observation of the editor's selection, gathered by
// lua/claude/selection.lua.
type SelectionState struct {
	// Seq orders observations: a higher one is newer. Only "selection" and
	// "denied" observations carry a meaningful one.
	Seq    int64        `json:"seq"`
	Kind   string       `json:"kind"`
	WaitMS int          `json:"wait,omitempty"`
	Path   string       `json:"path,omitempty"`
	Text   string       `json:"text"`
	Start  SelectionPos `json:"start"`
	End    SelectionPos `json:"end"`
	Empty  bool         `json:"empty"`
}

// PullSelection asks for the current window's selection once the cursor has
// come to rest; unless force is set, the answer is SelectionKindWait while
// the cursor is still moving (within the debounce).
func (b *Bridge) PullSelection(ctx context.Context, force bool) (SelectionState, error) {
	var st SelectionState
	if err := b.Call(ctx, "selection_pull", map[string]bool{"force": force}, &st); err != nil {
		return SelectionState{}, fmt.Errorf("pull the selection: %w", err)
	}
	return st, nil
}

// CurrentSelection is the active editor's selection: the current window's
// if it shows a file, else the file window used last (the Claude terminal
// usually has the focus when a tool asks).
func (b *Bridge) CurrentSelection(ctx context.Context) (SelectionState, error) {
	var st SelectionState
	if err := b.Call(ctx, "selection_current", nil, &st); err != nil {
		return SelectionState{}, fmt.Errorf("read the current selection: %w", err)
	}
	return st, nil
}
