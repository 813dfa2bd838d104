package host

// Options are the user's options the host needs, as Lua resolved and
// validated them (lua/claude/config.lua is their one source: it holds every
// default, and Go keeps no second copy). Lua sends them (the "options"
// request) when it starts the host, before anything else, and again
// whenever setup() runs; app/core hands them to each feature's
// Hooks.Options, and refuses to start the IDE server before it has them.
type Options struct {
	// SingleSession hands the editor to the newest CLI (single_session).
	SingleSession bool               `json:"single_session"`
	Selection     SelectionOptions   `json:"selection"`
	Execute       ExecuteOptions     `json:"execute"`
	Diagnostics   DiagnosticsOptions `json:"diagnostics"`
	Security      SecurityOptions    `json:"security"`
	EditorTools   EditorToolsOptions `json:"editor_tools"`
	Review        ReviewOptions      `json:"review"`
}

// SelectionOptions are setup()'s selection table, as the host needs it.
type SelectionOptions struct {
	// DebounceMS is how long the cursor rests before its selection is
	// shared (selection.debounce_ms).
	DebounceMS float64 `json:"debounce_ms"`
}

// ExecuteOptions are setup()'s execute table, as the host needs it.
type ExecuteOptions struct {
	// Numbers are float64 as Lua's are: a fractional value never fails the
	// whole request.
	Confirm   bool    `json:"confirm"`    // ask before each run
	TimeoutMS float64 `json:"timeout_ms"` // 0: no limit
	MaxOutput float64 `json:"max_output"` // characters kept per run; 0: no cap
	Python    string  `json:"python"`     // "": python3, then /usr/bin/python3
}

// DiagnosticsOptions are setup()'s diagnostics table.
type DiagnosticsOptions struct {
	// SettleMS bounds getDiagnostics' wait for a language server's report
	// on a file the CLI just changed.
	SettleMS float64 `json:"settle_ms"`
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

// ReviewOptions are what the review queue needs of setup(): where the CLI
// keeps its session transcripts (its config directory) and the project
// they are filed under (Neovim's cwd when the host started).
type ReviewOptions struct {
	ConfigDir string `json:"config_dir"`
	Cwd       string `json:"cwd"`
}
