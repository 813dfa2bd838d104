// Package verdict is the vocabulary of a diff review that several features
// share: a proposed file to show (Request), how its review ended (Verdict
// and the answers openDiff gives the CLI), and a review whose answer can be
// waited for (Pending). The diff review offers it; the chat panel and the
// editor tools use it.
//
// It knows words, not features: it must never import anything of the
// module, and never Neovim.
package verdict

import "context"

// The verdicts of a diff review: the answers openDiff gives the CLI
// (PROTOCOL.md §4). Closed tells the CLI to apply its own proposal
// unchanged: it is only ever the answer when the CLI itself decided
// (close_tab, closeAllDiffTabs), never for a "no".
const (
	Accepted = "FILE_SAVED"
	Rejected = "DIFF_REJECTED"
	Closed   = "TAB_CLOSED"
)

// Request is a proposed file to show as a diff for the user's verdict.
type Request struct {
	Owner    string // who asked: a CLI's client id, or a feature's owner key
	TabName  string // the diff's name; the same owner and name replace an older diff
	OldPath  string // the file as it is now
	NewPath  string // the file the proposal is for (may not exist yet)
	Contents string // the proposed text
}

// Verdict is how a review ended.
type Verdict struct {
	Text     string // Accepted, Rejected or Closed
	Contents string // the accepted text (as the user left it), with Accepted
}

// Pending is a review registered with the diff review (so that a decision
// made from elsewhere, like the chat's prompt, finds it at once) whose diff
// Wait shows; Wait blocks until the verdict or ctx ends.
type Pending interface {
	Wait(ctx context.Context) (Verdict, error)
}
