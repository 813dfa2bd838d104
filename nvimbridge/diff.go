package nvimbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// DiffRequest is a diff to open: Claude's proposal for a file, shown next to
// the file as the editor has it.
type DiffRequest struct {
	// ID is the host's handle for the diff; decisions and CloseDiffs use it.
	ID string `json:"id"`
	// TabName is the CLI's name for the diff; the proposal buffer is named
	// after it.
	TabName string `json:"tab_name"`
	// OldPath is the file shown as the current side (absolute).
	OldPath string `json:"old_path"`
	// NewPath is the file the proposal is for (absolute; may not exist yet).
	NewPath string `json:"new_path"`
	// Contents is the proposed file contents. They reach Neovim as a file
	// (see proposalFile), or, when none can be written, as a string
	// argument of their own beside the JSON.
	Contents string `json:"-"`
	// Owner is who asked: a CLI's client id, or a feature's owner key. A
	// new diff replaces an open one only of the same owner and name: two
	// sessions proposing a file of the same name (in two worktrees) each
	// keep theirs.
	Owner string `json:"owner,omitempty"`
	// Session is the Claude session the diff belongs to, when the host
	// knows it (diff.open_in_new_tab = "session" opens it in that
	// session's tab page).
	Session *DiffSession `json:"session,omitempty"`
}

// DiffSession names the Claude session of a diff.
type DiffSession struct {
	ID   string `json:"id"`   // the sessions dashboard's id
	Name string `json:"name"` // its name, displayable
}

// DiffView is what OpenDiff put on screen.
type DiffView struct {
	ProposalBuf int `json:"proposal_bufnr"`
	OriginalBuf int `json:"original_bufnr"`
	// Modified reports that the file's buffer had unsaved changes: the diff
	// compares the proposal with them, not with the file on disk.
	Modified bool `json:"modified"`
	// NewFile reports that the file does not exist: the current side is empty.
	NewFile bool `json:"new_file"`
	// Tab is the tab page number the diff is in.
	Tab int `json:"tab"`
}

// DiffDecisionMethod is the request Lua sends (rpcrequest on the channel
// OpenDiff names) when the user accepts or rejects a diff. Its JSON
// parameter is a DiffDecision; the answer is a DiffDecisionReply.
const DiffDecisionMethod = "diff_decision"

// DiffDecisionReply answers a DiffDecision.
type DiffDecisionReply struct {
	// Pending reports that the host was still waiting for this diff and
	// passed the decision on. When false (the CLI cancelled it, or
	// close_tab or closeAllDiffTabs ended it first) the decision went
	// nowhere: an accepted proposal will not be written.
	Pending bool `json:"pending"`
}

// DiffDecision is the user's answer to a diff.
type DiffDecision struct {
	ID string `json:"id"`
	// Decision is "accept" or "reject".
	Decision string `json:"decision"`
	// Contents is the proposal buffer's final text as the file would be
	// written (line endings, final newline), for "accept". Lua sends it
	// as the request's second argument (see RequestBlob), not in the JSON;
	// DecodeDiffDecision fills it in.
	Contents *string `json:"contents,omitempty"`
	// ContentsFile is where Lua wrote the accepted text instead (the
	// proposal's Accepted path, with Neovim's :write); DecodeDiffDecision
	// reads it into Contents.
	ContentsFile string `json:"contents_file,omitempty"`
}

// DecodeDiffDecision decodes a DiffDecisionMethod request: its JSON
// parameters and, for an accept, the contents Lua sent beside them.
func DecodeDiffDecision(ctx context.Context, raw json.RawMessage) (DiffDecision, error) {
	var d DiffDecision
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, err
	}
	if s, ok := RequestBlob(ctx); ok && d.Contents == nil {
		d.Contents = &s
	}
	if d.ContentsFile != "" && d.Contents == nil {
		s, err := readAccepted(d.ContentsFile)
		if err != nil {
			return d, fmt.Errorf("accepted text: %w", err)
		}
		d.Contents = &s
	}
	return d, nil
}

// OpenDiff opens the diff windows and returns at once; the user's decision
// arrives later as a DiffDecisionMethod request on this connection.
func (b *Bridge) OpenDiff(ctx context.Context, req DiffRequest) (DiffView, error) {
	ch, err := b.channelID(ctx)
	if err != nil {
		return DiffView{}, err
	}
	args := struct {
		DiffRequest
		Chan     int           `json:"chan"`
		Proposal *proposalFile `json:"proposal,omitempty"`
		Stage    string        `json:"stage"`
	}{DiffRequest: req, Chan: ch, Stage: "load"}
	var res struct {
		DiffView
		Error string `json:"error"`
	}
	var extra []any
	pf, err := b.proposals.write(req.Contents)
	if err != nil {
		b.log.Warn("proposal passed as a string", "err", err)
		extra = []any{req.Contents}
	}
	args.Proposal = pf
	if err := b.call(ctx, "diff_open", args, &res, extra...); err != nil {
		if pf != nil {
			_ = os.Remove(pf.File) // Lua may never have run: it is ours to remove
		}
		return DiffView{}, err
	}
	if res.Error != "" {
		return DiffView{}, errors.New(res.Error)
	}
	// Loading the texts, computing the diff and the first look at it are
	// three calls, so that Neovim takes keys between them: for a large
	// proposal each is seconds of work Neovim cannot interrupt, and one
	// call would hold it for their sum (lua/claude/diff.lua next_stage).
	view := res.DiffView
	for _, stage := range []string{"compare", "show"} {
		var next struct {
			DiffView
			Gone  bool   `json:"gone"`
			Error string `json:"error"`
		}
		err := b.call(ctx, "diff_open", map[string]string{"id": req.ID, "stage": stage}, &next)
		if err == nil && next.Error != "" {
			err = errors.New(next.Error)
		}
		if err != nil {
			// what is on screen goes: the caller answers the open as failed
			_, _ = b.CloseDiffs(context.WithoutCancel(ctx), []string{req.ID}, "closed")
			return DiffView{}, fmt.Errorf("%s: %w", stage, err)
		}
		if next.Gone {
			// answered or closed meanwhile: that decision is on its way
			return view, nil
		}
		view = next.DiffView
	}
	return view, nil
}

// CloseDiffs closes the diffs with these ids (windows, buffers; the layout
// is restored) and reports how many were still open. outcome is what the
// ClaudeDiffClosed event reports: "accepted", "rejected" or "closed".
func (b *Bridge) CloseDiffs(ctx context.Context, ids []string, outcome string) (int, error) {
	if ids == nil {
		ids = []string{}
	}
	var res struct {
		Closed int `json:"closed"`
	}
	err := b.Call(ctx, "diff_close", map[string]any{"ids": ids, "outcome": outcome}, &res)
	return res.Closed, err
}

// channelID is Neovim's id for this connection, where Lua sends decisions.
// go-client asks once and caches it; the first ask is bounded by ctx like
// any other call.
func (b *Bridge) channelID(ctx context.Context) (int, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	done := make(chan int, 1)
	go func() { done <- b.v.ChannelID() }()
	select {
	case id := <-done:
		if id <= 0 {
			return 0, errors.New("neovim did not tell its channel id")
		}
		return id, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, fmt.Errorf("channel id: %w", ErrTimeout)
		}
		return 0, ctx.Err()
	case <-b.ctx.Done():
		return 0, errors.New("neovim connection closed")
	}
}
