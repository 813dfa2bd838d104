// Package review is the review queue (its Lua side is claude.review and
// :ClaudeReview): every file Claude changed in a turn (and in the session), with the file's baseline — its text before the turn
// first changed it — kept here in the host, so that the user can look at
// each change against its baseline afterwards, revert a hunk or a file, and
// mark it reviewed (:ClaudeReview).
//
// It learns of Claude's writes from the CLI's own session transcript
// (<config dir>/projects/<project>/<session>.jsonl), which the terminal CLI
// and the chat's CLI both append to as they work: every Edit and Write
// result there carries the file's text before the write ("originalFile")
// and the prompt it belongs to ("promptId"), which is the turn. This sees
// the writes of every permission mode (acceptEdits and auto write without
// asking the IDE), of every session at once, and costs one directory scan
// per poll.
//
// Reverting is three-way (baseline, Claude's result, the text now): only
// Claude's hunks are put back, and a hunk the user changed since is refused.
//
// It must never know another feature, go-client or the IDE server; Lua
// only displays what it answers.
package review
