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

// EmitIdempotent is Emit for an event whose Lua drops a repeat (the chat's
// events carry a seq, equal in a retry): it costs Neovim one request, not
// two, as nothing asks first whether Neovim is blocked at a prompt. An
// event reported as ErrBlocked may therefore still run once the prompt is
// answered; the caller's retry of it is then the repeat.
func (b *Bridge) EmitIdempotent(ctx context.Context, event string, data any) error {
	return b.callWith(ctx, callRepeatable, "emit", map[string]any{"event": event, "data": data}, nil)
}

// Notify shows msg to the user through vim.notify at a vim.log.levels level.
func (b *Bridge) Notify(ctx context.Context, msg string, level int) error {
	return b.Call(ctx, "notify", map[string]any{"msg": msg, "level": level}, nil)
}
