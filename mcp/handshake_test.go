package mcp

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// handshakeRequest is an HTTP request written by hand, so that every header
// (Host, Origin, the upgrade headers) is exactly what the case says.
type handshakeRequest struct {
	method, path, host string
	header             map[string]string
}

func (r handshakeRequest) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.method, r.path, r.host)
	keys := make([]string, 0, len(r.header))
	for k := range r.header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\r\n", k, r.header[k])
	}
	b.WriteString("\r\n")
	return b.String()
}

// roundTrip sends req on a fresh connection and returns the response.
func roundTrip(t *testing.T, port int, req string) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.SetDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp
}

func TestHandshake(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	port := strconv.Itoa(s.Port())
	token := s.Token()
	base := func() handshakeRequest {
		return handshakeRequest{
			method: "GET", path: "/", host: "127.0.0.1:" + port,
			header: map[string]string{
				"Upgrade":                         "websocket",
				"Connection":                      "Upgrade",
				"Sec-WebSocket-Key":               "dGhlIHNhbXBsZSBub25jZQ==",
				"Sec-WebSocket-Version":           "13",
				"Sec-WebSocket-Protocol":          "mcp",
				"X-Claude-Code-Ide-Authorization": token,
				"User-Agent":                      "claude-code/2.1.330 (cli)",
			},
		}
	}
	tests := []struct {
		name   string
		change func(*handshakeRequest)
		status int
	}{
		{"root path", func(*handshakeRequest) {}, http.StatusSwitchingProtocols},
		{"/mcp path", func(r *handshakeRequest) { r.path = "/mcp" }, http.StatusSwitchingProtocols},
		{"localhost host", func(r *handshakeRequest) { r.host = "localhost:" + port }, http.StatusSwitchingProtocols},
		{"query string", func(r *handshakeRequest) { r.path = "/?x=1" }, http.StatusSwitchingProtocols},
		{"no subprotocol offered", func(r *handshakeRequest) { delete(r.header, "Sec-WebSocket-Protocol") }, http.StatusSwitchingProtocols},

		{"no token", func(r *handshakeRequest) { delete(r.header, "X-Claude-Code-Ide-Authorization") }, http.StatusUnauthorized},
		{"empty token", func(r *handshakeRequest) { r.header["X-Claude-Code-Ide-Authorization"] = "" }, http.StatusUnauthorized},
		{"wrong token", func(r *handshakeRequest) {
			r.header["X-Claude-Code-Ide-Authorization"] = strings.ToUpper(token[:1]) + "x" + token[2:]
		}, http.StatusUnauthorized},
		{"longer token", func(r *handshakeRequest) { r.header["X-Claude-Code-Ide-Authorization"] = token + "0" }, http.StatusUnauthorized},
		{"shorter token", func(r *handshakeRequest) { r.header["X-Claude-Code-Ide-Authorization"] = token[:8] }, http.StatusUnauthorized},

		{"http origin", func(r *handshakeRequest) { r.header["Origin"] = "http://evil.example" }, http.StatusForbidden},
		{"https origin", func(r *handshakeRequest) { r.header["Origin"] = "https://evil.example" }, http.StatusForbidden},
		{"null origin", func(r *handshakeRequest) { r.header["Origin"] = "null" }, http.StatusForbidden},
		{"file origin", func(r *handshakeRequest) { r.header["Origin"] = "file://" }, http.StatusForbidden},
		{"loopback origin", func(r *handshakeRequest) { r.header["Origin"] = "http://127.0.0.1:" + port }, http.StatusForbidden},
		{"empty origin", func(r *handshakeRequest) { r.header["Origin"] = "" }, http.StatusForbidden},
		{"origin before token", func(r *handshakeRequest) {
			r.header["Origin"] = "http://evil.example"
			delete(r.header, "X-Claude-Code-Ide-Authorization")
		}, http.StatusForbidden},
		{"host of another name", func(r *handshakeRequest) { r.host = "evil.example:" + port }, http.StatusForbidden},
		{"host of another port", func(r *handshakeRequest) { r.host = "127.0.0.1:1" }, http.StatusForbidden},
		{"host without port", func(r *handshakeRequest) { r.host = "127.0.0.1" }, http.StatusForbidden},
		{"ipv6 host", func(r *handshakeRequest) { r.host = "[::1]:" + port }, http.StatusForbidden},

		{"other path", func(r *handshakeRequest) { r.path = "/foo" }, http.StatusNotFound},
		{"/mcp/ path", func(r *handshakeRequest) { r.path = "/mcp/" }, http.StatusNotFound},
		{"POST", func(r *handshakeRequest) { r.method = "POST"; r.header["Content-Length"] = "0" }, http.StatusMethodNotAllowed},
		{"no upgrade headers", func(r *handshakeRequest) {
			delete(r.header, "Upgrade")
			delete(r.header, "Connection")
		}, http.StatusBadRequest},
		{"no websocket key", func(r *handshakeRequest) { delete(r.header, "Sec-WebSocket-Key") }, http.StatusBadRequest},
		{"old websocket version", func(r *handshakeRequest) { r.header["Sec-WebSocket-Version"] = "8" }, http.StatusBadRequest},
		{"huge headers", func(r *handshakeRequest) { r.header["X-Padding"] = strings.Repeat("a", 64<<10) }, http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := base()
			tt.change(&req)
			resp := roundTrip(t, s.Port(), req.String())
			if resp.StatusCode != tt.status {
				t.Fatalf("status %s, want %d", resp.Status, tt.status)
			}
			if tt.status != http.StatusSwitchingProtocols {
				return
			}
			want := req.header["Sec-WebSocket-Protocol"]
			if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != want {
				t.Errorf("subprotocol %q, want %q", got, want)
			}
		})
	}
}

func TestHandshakeWithGorillaClient(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	for _, path := range []string{"/", "/mcp"} {
		ws := dial(t, s, path)
		if ws.Subprotocol() != "mcp" {
			t.Errorf("%s: subprotocol %q, want mcp", path, ws.Subprotocol())
		}
		initialize(t, ws, 0)
	}
}

func TestListensOnLoopbackOnly(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	port := strconv.Itoa(s.Port())
	// A wildcard listener would accept on every loopback address and on
	// IPv6; a 127.0.0.1 listener accepts on that address alone.
	for _, addr := range []string{"127.0.0.2:" + port, "[::1]:" + port} {
		if c, err := net.DialTimeout("tcp", addr, guard); err == nil {
			_ = c.Close()
			t.Errorf("connected to %s: the listener is not bound to 127.0.0.1 alone", addr)
		}
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, guard)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
}
