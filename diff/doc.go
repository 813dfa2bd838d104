// Package diff is the diff review of a proposal (its Lua side is
// claude.diff): openDiff, close_tab and closeAllDiffTabs, the verdicts Lua
// reports, and Review for any other
// feature that wants the user's verdict on a proposed file (the chat
// panel's edit permissions, apply_code_action).
//
// It knows diff sessions and their owners. It must never know who else
// uses it (consumers declare the interface they need), the IDE server's
// lifecycle or go-client.
package diff
