package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// testCLI is a stand-in for the Claude Code CLI on a real socket: every
// frame the server sends arrives, in order, on frames, which closes with
// the connection. The harnesses (diff, selection, editor context) build
// their own reading on it.
type testCLI struct {
	ws     *websocket.Conn
	frames chan string
}

// dialCLI connects to the IDE server at port with the lock file's token;
// buffer is how many unread frames it holds.
func dialCLI(t testing.TB, port int, token string, buffer int) *testCLI {
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
	c := &testCLI{ws: ws, frames: make(chan string, buffer)}
	go func() { // ends when the connection closes
		defer close(c.frames)
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			c.frames <- string(b)
		}
	}()
	t.Cleanup(func() { _ = ws.Close() })
	return c
}

func (c *testCLI) send(t testing.TB, frame string) {
	t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// The CLI's handshake, as CLI 2.1.330 sends it (PROTOCOL.md §3).
const (
	cliInitialize  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}`
	cliInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func cliIDEConnected(pid int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":%d}}`, pid)
}
