package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// Probe connects to an IDE server on 127.0.0.1:port the way the CLI does
// (token header, subprotocol mcp), completes initialize and a ping, and
// hangs up. It returns the round-trip time of the ping. :checkhealth uses it
// to prove the server answers a real handshake.
func Probe(ctx context.Context, port int, token string) (time.Duration, error) {
	h := http.Header{}
	h.Set(AuthHeader, token)
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.DialContext(ctx, fmt.Sprintf("ws://127.0.0.1:%d/", port), h)
	if err != nil {
		if resp != nil {
			return 0, fmt.Errorf("handshake refused with HTTP %d: %w", resp.StatusCode, err)
		}
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(dl)
		_ = c.SetWriteDeadline(dl)
	}
	call := func(id int, method, params string) error {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			return fmt.Errorf("%s: send: %w", method, err)
		}
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return fmt.Errorf("%s: read: %w", method, err)
			}
			var r struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *Error          `json:"error"`
			}
			if json.Unmarshal(b, &r) != nil || r.ID == nil || *r.ID != id {
				continue // a notification (e.g. a broadcast selection)
			}
			if r.Error != nil {
				return fmt.Errorf("%s: %w", method, r.Error)
			}
			return nil
		}
	}
	if err := call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"nvim-claude-probe","version":"1"}}`); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := call(2, "ping", `{}`); err != nil {
		return 0, err
	}
	rtt := time.Since(start)
	_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	return rtt, nil
}
