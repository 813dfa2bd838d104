// Package mcp serves the Claude Code IDE protocol: JSON-RPC 2.0 and the MCP
// lifecycle over a loopback WebSocket, plus the lock file through which the
// Claude Code CLI discovers the server.
//
// The package is transport and protocol only. It knows nothing about the
// editor: the host registers tools ([Server.RegisterTool]) and custom methods
// ([Server.HandleMethod]) and pushes notifications ([Server.Broadcast],
// [Server.Notify]).
//
// The layers follow the shape of gopls's jsonrpc2: wire.go encodes and decodes
// JSON-RPC messages, conn.go owns one WebSocket connection (a read loop, a
// single writer goroutine, keepalive, one goroutine per request), and
// server.go and mcp.go hold the HTTP handshake checks, the registry and the
// MCP methods. lock.go reads and writes lock files.
package mcp
