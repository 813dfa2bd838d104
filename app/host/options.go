package host

// Options are the user's options the host needs, as Lua resolved and
// validated them (lua/claude/config.lua is their one source: it holds every
// default, and Go keeps no second copy). They come with every "start"
// request, so a setup() run again reaches the host with the next
// :ClaudeStart; app/core hands them to each feature's Hooks.Options before
// the IDE server serves a tool.
type Options struct {
	// SingleSession hands the editor to the newest CLI (single_session).
	SingleSession bool               `json:"single_session"`
	Selection     SelectionOptions   `json:"selection"`
	Execute       ExecuteOptions     `json:"execute"`
	Diagnostics   DiagnosticsOptions `json:"diagnostics"`
	Security      SecurityOptions    `json:"security"`
	EditorTools   EditorToolsOptions `json:"editor_tools"`
}

// SelectionOptions are setup()'s selection table, as the host needs it.
type SelectionOptions struct {
	// DebounceMS is how long the cursor rests before its selection is
	// shared (selection.debounce_ms).
	DebounceMS float64 `json:"debounce_ms"`
}

// ExecuteOptions are setup()'s execute table, as the host needs it.
type ExecuteOptions struct {
	Confirm   bool   `json:"confirm"`    // ask before each run
	TimeoutMS int    `json:"timeout_ms"` // 0: no limit
	MaxOutput int    `json:"max_output"` // characters kept per run; 0: no cap
	Python    string `json:"python"`     // "": python3, then /usr/bin/python3
}

// DiagnosticsOptions are setup()'s diagnostics table.
type DiagnosticsOptions struct {
	// SettleMS bounds getDiagnostics' wait for a language server's report
	// on a file the CLI just changed.
	SettleMS int `json:"settle_ms"`
}

// SecurityOptions are setup()'s security table: the file boundary's
// settings (Deny is security.deny followed by security.deny_extra).
type SecurityOptions struct {
	Deny      []string `json:"deny"`
	AllowHome bool     `json:"allow_home"`
}

// EditorToolsOptions are setup()'s editor_tools table.
type EditorToolsOptions struct {
	Enable bool     `json:"enable"`
	Allow  []string `json:"allow"` // nil: every tool
}
