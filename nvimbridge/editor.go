package nvimbridge

import "context"

// Log levels as vim.log.levels numbers.
const (
	LevelDebug = 1
	LevelInfo  = 2
	LevelWarn  = 3
	LevelError = 4
)

// Emit hands an event (name plus JSON-encodable data) to the plugin's Lua
// side, which updates the state status() reports and fires User autocmds.
func (b *Bridge) Emit(ctx context.Context, event string, data any) error {
	return b.Call(ctx, "emit", map[string]any{"event": event, "data": data}, nil)
}

// Notify shows msg to the user through vim.notify at a vim.log.levels level.
func (b *Bridge) Notify(ctx context.Context, msg string, level int) error {
	return b.Call(ctx, "notify", map[string]any{"msg": msg, "level": level}, nil)
}
