// Command echo is a bare gorilla/websocket echo server, the floor of the
// round-trip benchmark (internal/bench, scenario 11): it upgrades any
// request (answering subprotocol mcp, as the IDE server does), and writes
// every message back as it came. It prints its port on stdout and serves
// until its stdin closes or it is signalled.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/gorilla/websocket"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: echoHandler()}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	// The runner holds our stdin: when it goes, so do we.
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// echoHandler upgrades every request and echoes every message.
func echoHandler() http.Handler {
	up := websocket.Upgrader{
		Subprotocols: []string{"mcp"},
		CheckOrigin:  func(*http.Request) bool { return true },
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(64 << 20)
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	})
}
