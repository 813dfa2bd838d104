// Package mcp serves the Claude Code IDE protocol: JSON-RPC 2.0 and the MCP
// lifecycle, over a loopback WebSocket ([Server], which the Claude Code CLI
// finds through a lock file) and over byte streams framed in lines
// ([StreamServer], the "nvim" MCP server that the CLI reaches through the
// stdio relay).
//
// # What it knows, and what it must never know
//
// The package is transport and protocol only: WebSocket and line framing,
// JSON-RPC messages and error codes, the MCP methods it answers itself
// (initialize, ping, tools/list, tools/call, resources/list, prompts/list,
// notifications/initialized, notifications/cancelled, ide_connected), the
// lock file, authentication. It knows nothing of Neovim, nor of what any
// tool does: the host registers tools ([Server.RegisterTool],
// [StreamServer.SetTools]) and custom methods ([Server.HandleMethod]), and
// pushes notifications ([Server.Broadcast], [Server.Notify]). Nothing here
// may import the editor's packages.
//
// # One engine, two framers
//
// Every connection, whatever its transport, runs on one engine (conn.go),
// shaped like gopls's internal/jsonrpc2 (a Stream apart from the Conn) and
// the go-sdk's mcp package (one session engine over swappable Transports):
//
//   - one read loop, which decodes each message once (wire.go,
//     jsonscan.go: a single validating pass) and dispatches it:
//     notifications at once, in order; requests in the loop's own
//     goroutine, so that a quick call is read, handled and answered by one
//     goroutine, as a bare echo server would; a request still running
//     after inlineFor (1 ms) keeps that goroutine and the loop moves to a
//     new one, so a slow call never holds up the messages behind it;
//   - one dispatch (mcp.go) and one initialize: what differs between the
//     two servers (instructions, listChanged, the tool set) is data, a
//     service each server builds;
//   - one in-flight map per connection, with the cap (maxInflight, then
//     [CodeServerBusy]), duplicate ids refused, and notifications/cancelled
//     cancelling the call's context and suppressing its reply;
//   - one panic recovery: a panicking handler becomes a
//     [CodeInternalError] reply and the connection lives on;
//   - one writer at a time, whoever holds the connection's write lock: a
//     request writes its own reply when nothing is queued before it; all
//     else (notifications, pongs, heartbeats, the orderly end) goes through
//     the writer goroutine, fed by a bounded queue; a peer that lets the
//     queue stay full is dropped rather than block the host. Replies are
//     encoded by hand (jsonenc.go), and after a huge one the memory goes
//     back to the operating system.
//
// The engine reads and writes whole messages through a framer
// (framer.go). wsFramer (wsframe.go) reads text messages in chunks up to
// the read limit and speaks the WebSocket control plane: pongs, pings on a
// heartbeat with a keepalive that forgives a suspended laptop, and the
// close handshake. lineFramer (lineframe.go) reads one message a line and,
// at the peer's end of input, lets the calls in flight finish and answer
// before it closes the stream, as the stdio relay expects. A transport
// fault (too big, invalid UTF-8, binary) is a frameError, which the engine
// turns into the connection's orderly end.
//
// Errors are wrapped with %w inside the package and mapped to JSON-RPC
// codes only at the wire ([Error], toWireError).
//
// server.go holds the WebSocket server: the HTTP handshake checks
// (loopback peer, Host, Origin, token), the connection registry and the
// hooks. stream.go holds the StreamServer: its token line and listener.
// lock.go reads and writes lock files; probe.go is the host's own health
// check.
package mcp
