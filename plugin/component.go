package plugin

import (
	"context"
	"encoding/json"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// A component is one feature area of the application (selection, diffs,
// diagnostics …), each in its own file. New builds every component once; a
// component implements whichever of the optional interfaces below it needs.
type component interface {
	name() string
}

// toolProvider contributes MCP tools, registered on every server start.
type toolProvider interface {
	tools() []mcp.Tool
}

// methodProvider contributes direct JSON-RPC methods (e.g. readFile).
type methodProvider interface {
	methods() map[string]mcp.MethodHandler
}

// luaHandlerProvider contributes handlers Lua calls with rpcrequest /
// rpcnotify. Request handlers block Lua until they return; notification
// handlers run one at a time and must return quickly.
type luaHandlerProvider interface {
	luaRequests() map[string]func(ctx context.Context, params json.RawMessage) (any, error)
	luaNotifications() map[string]func(params json.RawMessage)
}

// connectionObserver hears about CLIs connecting (after ide_connected) and
// disconnecting.
type connectionObserver interface {
	clientConnected(c mcp.ClientInfo)
	clientDisconnected(c mcp.ClientInfo)
}

// serverObserver hears about the IDE server starting and stopping.
type serverObserver interface {
	serverStarted()
	serverStopped()
}

// closer releases a component's goroutines when the App closes.
type closer interface {
	close()
}
