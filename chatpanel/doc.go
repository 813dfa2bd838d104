// Package chatpanel is the native chat panel feature: one Claude CLI in
// stream-json mode per chat (package chat), its events delivered to
// require("claude.chat") in order, permission prompts (with the diff
// review for edits), checkpoints and rewinds.
//
// The files follow its jobs: chat.go the panel and its Lua handlers,
// chat_proc.go a chat's process (start, close, exit), chat_stream.go the
// translation of the CLI's stream into chat.* events, chat_rewind.go
// checkpoints, rewinds, forks and history, chat_mode.go the mode, model and
// plan, chat_perm.go and chat_dialog.go the CLI's permission prompts and
// dialogs, chat_attach.go a message's attachments, chat_outbox.go the
// ordered delivery to Lua.
//
// What it needs of other features (the diff review, the editor tools'
// relay) is declared in Peers. It must never import another feature, the
// IDE server's lifecycle or go-client.
package chatpanel
