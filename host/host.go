// Package host is the narrow interface a feature package gets from the
// application (package app): hand an event to Lua, reach the connected
// CLIs, log, and a read-only view of the workspace. It also defines what a
// feature gives back (Hooks), the one place Lua's parameters are decoded
// (Request, Notification), and the user's options, which each feature
// decodes for itself (Options.Decode).
//
// Features import host, never anything under app/ and never one another:
// what a feature needs of a peer is an interface the feature declares,
// which app wires and the compiler checks. Like tailscale's ipnext host, it
// exposes no method that changes shared state. Host knows no feature, no
// feature's vocabulary or options, and no Neovim: it imports only mcp and
// workspace.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Host is what the application offers every feature. Its methods never
// block on Neovim or a CLI and are safe from any goroutine.
type Host interface {
	// Logger is the feature's logger (to the host's log file).
	Logger() *slog.Logger
	// Emit queues an event for Lua (User autocmds, status); events are
	// delivered in order, one at a time. A full queue drops the event.
	Emit(event string, data any)
	// Broadcast sends a notification to every connected CLI and returns
	// how many received it (0 when the IDE server is not running).
	Broadcast(method string, params any) int
	// Notify sends a notification to one CLI; ErrNotRunning when the IDE
	// server is not running.
	Notify(clientID, method string, params any) error
	// Clients are the CLIs connected to the IDE server (none when it is
	// not running).
	Clients() []mcp.ClientInfo
	// Running reports whether the IDE server runs.
	Running() bool
	// EditorPID is Neovim's pid as the start request gave it (the host's
	// own pid before the first start).
	EditorPID() int
	// Workspace is the cwd, the folders and the file boundary, read-only:
	// no feature changes what the folders are or the boundary's settings.
	Workspace() workspace.View
}

// ErrNotRunning is the error of a call that needs the IDE server when it
// is not running.
var ErrNotRunning = errors.New("the IDE server is not running (:ClaudeStart starts it)")

// LuaRequest handles a request Lua makes with rpcrequest; Lua waits for
// its answer.
type LuaRequest func(ctx context.Context, params json.RawMessage) (any, error)

// LuaNotification handles a notification Lua sends with rpcnotify; they
// run one at a time and must return quickly.
type LuaNotification func(params json.RawMessage)

// Request makes a LuaRequest of a handler taking typed parameters: the one
// place a request's parameters are decoded. A decoding failure is an error
// naming the request.
func Request[P any](name string, h func(ctx context.Context, p P) (any, error)) LuaRequest {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if !empty(raw) {
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, fmt.Errorf("%s: bad parameters: %w", name, err)
			}
		}
		return h(ctx, p)
	}
}

// Notification makes a LuaNotification of a handler taking typed
// parameters; a notification whose parameters do not decode is logged and
// dropped.
func Notification[P any](log *slog.Logger, name string, h func(p P)) LuaNotification {
	return func(raw json.RawMessage) {
		var p P
		if !empty(raw) {
			if err := json.Unmarshal(raw, &p); err != nil {
				log.Warn(name+": bad parameters", "err", err)
				return
			}
		}
		h(p)
	}
}

// empty reports parameters that carry nothing: none, null, or Lua's empty
// table, which vim.json encodes as [] (Lua cannot tell {} from []).
func empty(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null" || s == "[]"
}

// Hooks is what a feature contributes. Every field may be nil.
type Hooks struct {
	// Tools are the IDE server's tools, asked for on every server start.
	Tools func() []mcp.Tool
	// Methods are direct JSON-RPC methods of the IDE server (readFile …).
	Methods func() map[string]mcp.MethodHandler
	// LuaRequests and LuaNotifications are the handlers Lua calls.
	LuaRequests      map[string]LuaRequest
	LuaNotifications map[string]LuaNotification
	// ClientConnected hears a CLI's ide_connected; ClientDisconnected its
	// connection's end. They run on mcp goroutines and must not block.
	ClientConnected    func(c mcp.ClientInfo)
	ClientDisconnected func(c mcp.ClientInfo)
	// Options hears the user's options whenever Lua sends them (first
	// when it starts the host, before the IDE server can start, then after
	// every setup()); it must not block.
	// It decodes the tables it owns (Options.Decode) before it changes
	// anything: a table that does not decode is its error, and leaves the
	// feature as it was.
	Options func(o Options) error
	// ServerStarted and ServerStopped hear the IDE server's lifetime.
	ServerStarted func()
	ServerStopped func()
	// Close releases the feature's goroutines when the application closes.
	Close func()
	// HTTPHooks serves the CLI's HTTP hooks: the POST requests under
	// mcp.HTTPPrefix on the IDE server's port (mcp.Config.HTTP says what
	// is checked before). One feature at most serves them.
	HTTPHooks http.Handler
}

// Feature is one feature package's object as the application wires it.
type Feature interface {
	// Name names the feature in errors and logs.
	Name() string
	// Hooks is what the feature contributes; asked once, at wiring.
	Hooks() Hooks
}

// CallTimeout bounds one editor call made for a tool or method.
const CallTimeout = 5 * time.Second

// EditorCtx is the context of one editor call made for a tool or method.
func EditorCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

// EditorError is the tool error for a failed editor call.
func EditorError(what string, err error) error {
	return fmt.Errorf("%s: Neovim did not answer: %w", what, err)
}
