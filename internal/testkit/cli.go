// Package testkit holds what the feature packages' tests share: a stand-in
// for the Claude Code CLI on a real socket (CLI) and the helpers that build
// transcript lines from Go values. It knows the wire, never a feature.
package testkit

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// CLI is a stand-in for the Claude Code CLI on a real socket: every
// frame the server sends arrives, in order, on frames, which closes with
// the connection. The harnesses (diff, selection, editor context) build
// their own reading on it.
type CLI struct {
	WS     *websocket.Conn
	Frames chan string
}

// DialCLI connects to the IDE server at port with the lock file's token;
// buffer is how many unread frames it holds.
func DialCLI(t testing.TB, port int, token string, buffer int) *CLI {
	t.Helper()
	hdr := http.Header{}
	hdr.Set(mcp.AuthHeader, token)
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: 5 * nvimtest.Slack * time.Second}
	ws, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/", port), hdr)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, code)
	}
	c := &CLI{WS: ws, Frames: make(chan string, buffer)}
	go func() { // ends when the connection closes
		defer close(c.Frames)
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			c.Frames <- string(b)
		}
	}()
	t.Cleanup(func() { _ = ws.Close() })
	return c
}

// Send sends one frame.
func (c *CLI) Send(t testing.TB, frame string) {
	t.Helper()
	if err := c.WS.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// The CLI's handshake, as CLI 2.1.330 sends it (PROTOCOL.md §3).
const (
	CLIInitialize  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}`
	CLIInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// CLIIDEConnected is the CLI's ide_connected for pid.
func CLIIDEConnected(pid int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":%d}}`, pid)
}
