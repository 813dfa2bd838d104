// Package selection is the selection feature: it tracks the selection in
// Neovim (Lua's pushes and debounced pulls), sends selection_changed to the
// connected CLIs in order and without duplicates, delivers mentions
// (at_mentioned, queued until a CLI is ready), and answers
// getCurrentSelection and getLatestSelection.
//
// It knows the selection as nvimbridge reports it and the CLIs through
// host.Host. It must never know another feature, the IDE server's
// lifecycle or go-client.
package selection
