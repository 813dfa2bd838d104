package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

func TestEcho(t *testing.T) {
	srv := httptest.NewServer(echoHandler())
	defer srv.Close()
	d := websocket.Dialer{Subprotocols: []string{"mcp"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Subprotocol() != "mcp" {
		t.Fatalf("subprotocol %q, want mcp", c.Subprotocol())
	}
	for _, msg := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, strings.Repeat("x", 1<<20)} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		mt, got, err := c.ReadMessage()
		if err != nil || mt != websocket.TextMessage || string(got) != msg {
			t.Fatalf("echo of %d bytes: type %d, %d bytes, %v", len(msg), mt, len(got), err)
		}
	}
}
