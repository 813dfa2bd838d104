package host

import (
	"encoding/json"
	"fmt"
)

// Options are the user's options as Lua resolved and validated them
// (lua/claude/config.lua is their one source: it holds every default, and
// Go keeps no second copy). Lua sends them (the "options" request) when it
// starts the host, before anything else, and again whenever setup() runs;
// app/core hands them to each feature's Hooks.Options, and refuses to
// start the IDE server before it has them.
//
// Host knows none of their shapes: each feature decodes the table it owns
// (Decode) into a type it declares, so adding an option touches the
// feature and config.lua, never host.
type Options struct {
	tables map[string]json.RawMessage
}

// UnmarshalJSON keeps each top-level option undecoded, for its feature.
func (o *Options) UnmarshalJSON(b []byte) error {
	if empty(b) { // none, null, or Lua's empty table ([])
		o.tables = nil
		return nil
	}
	var t map[string]json.RawMessage
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	o.tables = t
	return nil
}

// MarshalJSON gives the options back as Lua sent them.
func (o Options) MarshalJSON() ([]byte, error) {
	if o.tables == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(o.tables)
}

// Decode decodes the option key (a setup() table such as "selection", or a
// plain value such as "single_session") into v. An option Lua did not send
// leaves v as it was; one that does not fit v is an error naming it.
func (o Options) Decode(key string, v any) error {
	raw, ok := o.tables[key]
	if !ok || empty(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("option %s: %w", key, err)
	}
	return nil
}

// OptionsOf makes Options of Go values, as Lua would send them: for tests
// and for callers that build options themselves.
func OptionsOf(tables map[string]any) (Options, error) {
	b, err := json.Marshal(tables)
	if err != nil {
		return Options{}, fmt.Errorf("options: %w", err)
	}
	var o Options
	err = json.Unmarshal(b, &o)
	return o, err
}
