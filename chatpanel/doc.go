// Package chatpanel is the native chat panel feature: one Claude CLI in
// stream-json mode per chat (package chat), its events delivered to
// require("claude.chat") in order, permission prompts (with the diff
// review for edits), checkpoints and rewinds.
//
// What it needs of other features (the diff review, the editor tools'
// relay) is declared in Peers. It must never import another feature, the
// IDE server's lifecycle or go-client.
package chatpanel
