package nvimbridge

import "context"

// ChatProposalText returns the current text of the pending diff proposal
// named tabName, as writing its buffer would put it in the file (line
// endings, final newline). ok is false when no pending diff has that name.
// The chat panel uses it to accept a diff from its own prompt with the
// user's edits.
func (b *Bridge) ChatProposalText(ctx context.Context, tabName string) (text string, ok bool, err error) {
	var res struct {
		Found    bool   `json:"found"`
		Contents string `json:"contents"`
	}
	if err := b.Call(ctx, "chat_proposal_text", map[string]any{"tab_name": tabName}, &res); err != nil {
		return "", false, err
	}
	return res.Contents, res.Found, nil
}
