package edtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/verdict"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// apply_code_action: one code action of the code_actions listing, applied
// only as far as the user accepts it. Its workspace edit (resolved with
// codeAction/resolve when the server sends it lazily; or the edits its
// server command asks for, held back from Neovim's LSP client while the
// command runs) becomes one proposed text per file; each goes through the
// diff review openDiff uses, one after the other, and only the files the
// user accepts are changed — in their Neovim buffers, then written.
// Nothing is applied before every file has its answer, and nothing at all
// when a file changed meanwhile.

// Bounds of apply_code_action's steps besides the user's review (which
// waits as long as the user takes, like openDiff).
const (
	// codeActionTimeout bounds finding, resolving and running the action.
	codeActionTimeout     = 20 * time.Second
	codeActionNvimTimeout = 18 * time.Second
	// codeActionApplyTimeout bounds writing the accepted files, including
	// waiting for Neovim to leave the autocommand (the :w) that accepted.
	codeActionApplyTimeout = 30 * time.Second
	codeActionBusyPoll     = 20 * time.Millisecond
)

// codeActionArgs are apply_code_action's arguments: a position like
// code_actions, and the action by number or title.
type codeActionArgs struct {
	posArgs
	Action json.RawMessage `json:"action"`
}

func (e *Tools) applyCodeActionTool() mcp.Tool {
	return mcp.Tool{
		Name: "apply_code_action",
		Description: "Apply one code action of the code_actions listing (same file and line/range; action: its number " +
			"there or its exact title). Its edits are shown to the user as a diff per file, and only what the user " +
			"accepts is applied and saved; the result says per file what was accepted or rejected. A server command " +
			"behind an action runs with its edits held for that review.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + schemaFile + `,` + schemaLine + `,` + schemaActionCol + `,` + schemaSymbol + `,` + schemaEndLine +
			`,"action":{"type":["integer","string"],"description":"The action's number in the code_actions listing (1-based), or its title"}},` +
			`"required":["file","action"],"additionalProperties":false}`),
		Handler: e.applyCodeAction,
	}
}

func (e *Tools) applyCodeAction(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	var a codeActionArgs
	if err := mcp.DecodeArgs(req.Arguments, &a); err != nil {
		return nil, err
	}
	action, err := actionArg(a.Action)
	if err != nil {
		return nil, err
	}
	q, err := e.query(ctx, "code_actions", a.posArgs)
	if err != nil {
		return nil, err
	}
	q.Op, q.Action, q.Timeout = "code_action_edit", action, codeActionNvimTimeout
	ed := e.editor
	dc := e.peers.Review
	qctx, cancel := context.WithTimeout(ctx, codeActionTimeout)
	r, err := ed.LSP(qctx, q)
	cancel()
	if err != nil {
		if ctx.Err() == nil && qctx.Err() != nil {
			return nil, fmt.Errorf("apply_code_action: Neovim did not answer within %s", codeActionTimeout)
		}
		return nil, host.EditorError("apply_code_action", err)
	}
	if r.Error != "" {
		return mcp.ErrorResult("%s", r.Error), nil
	}
	if r.Action == nil {
		return nil, errors.New("apply_code_action: Neovim named no action")
	}
	name := fmt.Sprintf("code action %d %q", r.Action.Index, r.Action.Title)
	if r.Action.Kind != "" {
		name += " [" + r.Action.Kind + "]"
	}
	var b strings.Builder
	if len(r.Edits) == 0 {
		fmt.Fprintf(&b, "%s changes no file; nothing to review", name)
		if r.Command != "" {
			fmt.Fprintf(&b, " (it ran the server command %s, which asked for no edits)", r.Command)
		}
		return mcp.TextResult(b.String()), nil
	}

	// Every file the action changes goes through the boundary before any
	// of them is shown: nothing is applied unless all may be written.
	for _, f := range r.Edits {
		if _, err := e.peers.Paths.CheckPath(ctx, f.Path, workspace.Write); err != nil {
			return mcp.ErrorResult("apply_code_action: %s changes %s, which is not written through the editor tools: %v; nothing was applied",
				name, e.rel(f.Path), err), nil
		}
	}

	// The review: one diff per file, one after the other.
	n := e.seq.Add(1)
	type answer struct {
		accepted bool
		edited   bool // the user changed the proposal before accepting
		how      string
	}
	verdicts := make([]answer, len(r.Edits))
	var accepted []nvimbridge.LSPFileEdit
	for i, f := range r.Edits {
		rel := e.rel(f.Path)
		ans, err := dc.Review(ctx, verdict.Request{
			Owner:    "edtools:" + req.Client.ID,
			TabName:  fmt.Sprintf("[Claude Code] %s (%d/%d) %s #%d", filepath.Base(f.Path), i+1, len(r.Edits), r.Action.Title, n),
			OldPath:  f.Path,
			NewPath:  f.Path,
			Contents: f.After,
		})
		if err != nil {
			// Cancelled (or Neovim failed): nothing was applied.
			return nil, fmt.Errorf("apply_code_action: review of %s ended: %w; nothing was applied", rel, err)
		}
		switch ans.Text {
		case verdict.Accepted:
			f.After = ans.Contents
			verdicts[i] = answer{accepted: true, edited: !sameText(ans.Contents, r.Edits[i].After)}
			accepted = append(accepted, f)
		case verdict.Rejected:
			verdicts[i] = answer{how: "rejected"}
		default:
			verdicts[i] = answer{how: "closed without a decision"}
		}
	}

	// Apply what was accepted, all files or (one changed meanwhile) none.
	var applied nvimbridge.LSPApplied
	if len(accepted) > 0 {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), codeActionApplyTimeout)
		applied, err = applyFiles(actx, ed, accepted)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("apply_code_action: %w", err)
		}
		if applied.Error != "" {
			return mcp.ErrorResult("%s: the user accepted %s, but %s", name, plural(len(accepted), "file", "files"), applied.Error), nil
		}
	}
	written := map[string]nvimbridge.LSPFileWrite{}
	for _, w := range applied.Files {
		written[w.Path] = w
	}
	nAcc := len(accepted)
	switch {
	case nAcc == 0:
		fmt.Fprintf(&b, "the user rejected %s; nothing was changed:\n", name)
	case nAcc == len(r.Edits):
		fmt.Fprintf(&b, "applied %s; the user accepted every file:\n", name)
	default:
		fmt.Fprintf(&b, "applied %s in part; the user accepted %d of %d files:\n", name, nAcc, len(r.Edits))
	}
	failed := false
	for i, f := range r.Edits {
		rel := e.rel(f.Path)
		if !f.Exists {
			rel += " (new file)"
		}
		v := verdicts[i]
		switch {
		case !v.accepted:
			fmt.Fprintf(&b, "- %s: %s, unchanged\n", rel, v.how)
		case written[f.Path].Written && v.edited:
			fmt.Fprintf(&b, "- %s: accepted with the user's own changes, written\n", rel)
		case written[f.Path].Written:
			fmt.Fprintf(&b, "- %s: accepted, written\n", rel)
		default:
			failed = true
			fmt.Fprintf(&b, "- %s: accepted, but not applied: %s\n", rel, written[f.Path].Error)
		}
	}
	if r.Command != "" {
		fmt.Fprintf(&b, "(the edits came from the server command %s)\n", r.Command)
	}
	if r.SkippedCommand != "" {
		fmt.Fprintf(&b, "(the action's follow-up command %s was not run)\n", r.SkippedCommand)
	}
	text := strings.TrimRight(b.String(), "\n")
	if failed {
		return mcp.ErrorResult("%s", text), nil
	}
	return mcp.TextResult(clip(text)), nil
}

// applyFiles writes the accepted files, asking again while Neovim is busy
// in the autocommand (the user's :w) that accepted the last diff.
func applyFiles(ctx context.Context, ed Editor, files []nvimbridge.LSPFileEdit) (nvimbridge.LSPApplied, error) {
	for {
		r, err := ed.LSPApplyFiles(ctx, files)
		if err != nil {
			return r, fmt.Errorf("applying the accepted files: Neovim did not answer: %w", err)
		}
		if !r.Busy {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("the accepted files were not applied: Neovim stayed busy: %w", ctx.Err())
		case <-time.After(codeActionBusyPoll):
		}
	}
}

// actionArg reads the action argument: a number or a title.
func actionArg(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("invalid arguments: action is required (its number in the code_actions listing, or its title)")
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		i, err := strconv.Atoi(n.String())
		if err != nil || i < 1 {
			return "", errors.New("invalid arguments: action must be a 1-based number or a title")
		}
		return strconv.Itoa(i), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("invalid arguments: action must be a number or a string")
	}
	if strings.TrimSpace(s) == "" {
		return "", errors.New("invalid arguments: action is required (its number in the code_actions listing, or its title)")
	}
	return s, nil
}

// sameText compares file texts but for a final line ending.
func sameText(a, b string) bool {
	trim := func(s string) string { return strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r") }
	return a == b || trim(a) == trim(b)
}
