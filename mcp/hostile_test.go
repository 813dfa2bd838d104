package mcp

// Hostile input: handshakes, frames and messages written to attack the
// server, beyond the well-formed cases of handshake_test.go, conn_test.go
// and the transcripts. Each case checks the exact refusal (HTTP status,
// close code, JSON-RPC error) and, where the protocol allows, that the
// connection is still usable afterwards. RELIABILITY.md lists the families.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// baseHandshake is a valid CLI handshake for s, as handshake_test.go builds
// it.
func baseHandshake(s *Server) handshakeRequest {
	return handshakeRequest{
		method: "GET", path: "/", host: "127.0.0.1:" + strconv.Itoa(s.Port()),
		header: map[string]string{
			"Upgrade":                "websocket",
			"Connection":             "Upgrade",
			"Sec-WebSocket-Key":      "dGhlIHNhbXBsZSBub25jZQ==",
			"Sec-WebSocket-Version":  "13",
			"Sec-WebSocket-Protocol": "mcp",
			AuthHeader:               s.Token(),
			"User-Agent":             "claude-code/2.1.330 (cli)",
		},
	}
}

// closedWithoutAnswer is the "status" of a handshake the server drops
// without answering.
const closedWithoutAnswer = -1

// expectNoAnswer sends req and expects the connection to close with no
// response at all.
func expectNoAnswer(t *testing.T, port int, req string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), guard)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if len(got) != 0 || err != nil {
		t.Fatalf("got %q, %v; want the connection closed without an answer", got, err)
	}
}

// TestHostileHandshakes adds to TestHandshake the attacks it does not
// cover: tokens in the wrong place, Host spellings that resolve to
// loopback but are not ours, request targets in absolute form, odd paths
// and methods, oversized requests spread over many headers or the request
// line, and broken upgrade headers. Every one is refused before 101.
func TestHostileHandshakes(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	port := strconv.Itoa(s.Port())
	token := s.Token()
	type change func(r *handshakeRequest) string // returns the raw request; "" = r.String()
	tests := []struct {
		name   string
		change change
		status int
	}{
		// The token only counts in its own header.
		{"token as bearer authorization", func(r *handshakeRequest) string {
			delete(r.header, AuthHeader)
			r.header["Authorization"] = "Bearer " + token
			return ""
		}, http.StatusUnauthorized},
		{"token in the query string", func(r *handshakeRequest) string {
			delete(r.header, AuthHeader)
			r.path = "/?authToken=" + token
			return ""
		}, http.StatusUnauthorized},
		{"token in the subprotocol", func(r *handshakeRequest) string {
			delete(r.header, AuthHeader)
			r.header["Sec-WebSocket-Protocol"] = "mcp, " + token
			return ""
		}, http.StatusUnauthorized},
		{"token upper-cased", func(r *handshakeRequest) string {
			r.header[AuthHeader] = strings.ToUpper(token)
			return ""
		}, http.StatusUnauthorized},
		{"token with a NUL appended", func(r *handshakeRequest) string {
			r.header[AuthHeader] = token + "\x00"
			return ""
		}, http.StatusBadRequest}, // net/http refuses control bytes in header values
		{"wrong token first, right one second", func(r *handshakeRequest) string {
			req := r.String()
			return strings.Replace(req, AuthHeader+": "+token+"\r\n", AuthHeader+": nope\r\n"+AuthHeader+": "+token+"\r\n", 1)
		}, http.StatusUnauthorized},
		{"token of 64 KiB", func(r *handshakeRequest) string {
			r.header[AuthHeader] = strings.Repeat("t", 64<<10)
			return ""
		}, http.StatusRequestHeaderFieldsTooLarge},

		// Host spellings of loopback that are not ours (DNS rebinding).
		{"host 127.1", func(r *handshakeRequest) string { r.host = "127.1:" + port; return "" }, http.StatusForbidden},
		{"host as a decimal address", func(r *handshakeRequest) string { r.host = "2130706433:" + port; return "" }, http.StatusForbidden},
		{"host in hex", func(r *handshakeRequest) string { r.host = "0x7f000001:" + port; return "" }, http.StatusForbidden},
		{"host localhost with a dot", func(r *handshakeRequest) string { r.host = "localhost.:" + port; return "" }, http.StatusForbidden},
		{"host sub.localhost", func(r *handshakeRequest) string { r.host = "evil.localhost:" + port; return "" }, http.StatusForbidden},
		{"host IPv4-mapped IPv6", func(r *handshakeRequest) string { r.host = "[::ffff:127.0.0.1]:" + port; return "" }, http.StatusForbidden},
		{"host 0.0.0.0", func(r *handshakeRequest) string { r.host = "0.0.0.0:" + port; return "" }, http.StatusForbidden},
		{"host with userinfo", func(r *handshakeRequest) string { r.host = "user@127.0.0.1:" + port; return "" }, http.StatusBadRequest},
		{"host with a leading-zero port", func(r *handshakeRequest) string { r.host = "127.0.0.1:0" + port; return "" }, http.StatusForbidden},
		{"two Host headers", func(r *handshakeRequest) string {
			return strings.Replace(r.String(), "\r\n", "\r\nHost: evil.example:"+port+"\r\n", 1)
		}, http.StatusBadRequest},
		{"no Host header (HTTP/1.0)", func(r *handshakeRequest) string {
			req := strings.Replace(r.String(), "Host: 127.0.0.1:"+port+"\r\n", "", 1)
			return strings.Replace(req, "HTTP/1.1", "HTTP/1.0", 1)
		}, http.StatusForbidden},
		{"absolute target naming another host", func(r *handshakeRequest) string {
			r.path = "http://evil.example:" + port + "/"
			return ""
		}, http.StatusForbidden},
		{"absolute target naming us, Host another", func(r *handshakeRequest) string {
			// The request target wins over Host (RFC 9112 §3.2.2), and
			// browsers never send absolute targets to a server.
			r.path = "http://127.0.0.1:" + port + "/"
			r.host = "evil.example"
			return ""
		}, http.StatusSwitchingProtocols},

		// Only / and /mcp, only GET.
		{"path //", func(r *handshakeRequest) string { r.path = "//"; return "" }, http.StatusNotFound},
		{"path /MCP", func(r *handshakeRequest) string { r.path = "/MCP"; return "" }, http.StatusNotFound},
		{"path /./", func(r *handshakeRequest) string { r.path = "/./"; return "" }, http.StatusNotFound},
		{"path /%2e%2e/", func(r *handshakeRequest) string { r.path = "/%2e%2e/"; return "" }, http.StatusNotFound},
		{"path /mcp/../", func(r *handshakeRequest) string { r.path = "/mcp/../"; return "" }, http.StatusNotFound},
		{"path with a NUL", func(r *handshakeRequest) string { r.path = "/%00"; return "" }, http.StatusNotFound},
		// net/http answers OPTIONS * itself: an empty 200, no CORS header,
		// no upgrade.
		{"asterisk target", func(r *handshakeRequest) string { r.method, r.path = "OPTIONS", "*"; return "" }, http.StatusOK},
		{"PUT", func(r *handshakeRequest) string { r.method = "PUT"; r.header["Content-Length"] = "0"; return "" }, http.StatusMethodNotAllowed},
		{"DELETE", func(r *handshakeRequest) string { r.method = "DELETE"; return "" }, http.StatusMethodNotAllowed},
		{"PATCH", func(r *handshakeRequest) string { r.method = "PATCH"; r.header["Content-Length"] = "0"; return "" }, http.StatusMethodNotAllowed},
		{"HEAD", func(r *handshakeRequest) string { r.method = "HEAD"; return "" }, http.StatusMethodNotAllowed},
		{"OPTIONS (CORS preflight)", func(r *handshakeRequest) string {
			r.method = "OPTIONS"
			delete(r.header, AuthHeader)
			r.header["Access-Control-Request-Method"] = "GET"
			return ""
		}, http.StatusMethodNotAllowed},
		{"TRACE", func(r *handshakeRequest) string { r.method = "TRACE"; return "" }, http.StatusMethodNotAllowed},
		{"lower-case get", func(r *handshakeRequest) string { r.method = "get"; return "" }, http.StatusMethodNotAllowed},
		{"POST with a JSON-RPC body", func(r *handshakeRequest) string {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`
			r.method = "POST"
			r.header["Content-Type"] = "application/json"
			r.header["Content-Length"] = strconv.Itoa(len(body))
			return r.String() + body
		}, http.StatusMethodNotAllowed},

		// Oversized requests: the limit covers every header together and
		// the request line.
		{"64 KiB in a thousand headers", func(r *handshakeRequest) string {
			for i := 0; i < 1024; i++ {
				r.header[fmt.Sprintf("X-Pad-%04d", i)] = strings.Repeat("p", 52)
			}
			return ""
		}, http.StatusRequestHeaderFieldsTooLarge},
		{"64 KiB request line", func(r *handshakeRequest) string { r.path = "/?" + strings.Repeat("q", 64<<10); return "" }, http.StatusRequestHeaderFieldsTooLarge},
		{"64 KiB Origin", func(r *handshakeRequest) string {
			r.header["Origin"] = "http://" + strings.Repeat("o", 64<<10)
			return ""
		}, http.StatusRequestHeaderFieldsTooLarge},

		// Broken upgrades.
		{"Upgrade h2c", func(r *handshakeRequest) string { r.header["Upgrade"] = "h2c"; return "" }, http.StatusBadRequest},
		{"Connection keep-alive only", func(r *handshakeRequest) string { r.header["Connection"] = "keep-alive"; return "" }, http.StatusBadRequest},
		{"key not base64 of 16 bytes", func(r *handshakeRequest) string { r.header["Sec-WebSocket-Key"] = "short"; return "" }, http.StatusBadRequest},
		{"no WebSocket version", func(r *handshakeRequest) string { delete(r.header, "Sec-WebSocket-Version"); return "" }, http.StatusBadRequest},
		// The protocol version is not what guards the socket; the token,
		// Host and Origin checks are, and they hold.
		{"HTTP/1.0 upgrade with Host and token", func(r *handshakeRequest) string {
			return strings.Replace(r.String(), "HTTP/1.1", "HTTP/1.0", 1)
		}, http.StatusSwitchingProtocols},
		// Bytes behind the handshake (a body, or frames sent before the
		// 101): the connection is closed without an answer.
		{"chunked body on the upgrade", func(r *handshakeRequest) string {
			r.header["Transfer-Encoding"] = "chunked"
			return r.String() + "5\r\nhello\r\n0\r\n\r\n"
		}, closedWithoutAnswer},
		{"a frame pipelined behind the handshake", func(r *handshakeRequest) string {
			return r.String() + string(wsFrame(finBit|opText, []byte(pingMsg), true, 0))
		}, closedWithoutAnswer},
		{"not HTTP at all", func(r *handshakeRequest) string {
			return "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + strings.Repeat("\x00", 64) + "\r\n\r\n"
		}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseHandshake(s)
			raw := tt.change(&req)
			if raw == "" {
				raw = req.String()
			}
			if tt.status == closedWithoutAnswer {
				expectNoAnswer(t, s.Port(), raw)
				return
			}
			resp := roundTrip(t, s.Port(), raw) // its connection closes at cleanup
			if resp.StatusCode != tt.status {
				t.Fatalf("status %s, want %d", resp.Status, tt.status)
			}
			if tt.status != http.StatusSwitchingProtocols && resp.Header.Get("Sec-WebSocket-Accept") != "" {
				t.Errorf("a refusal carries Sec-WebSocket-Accept")
			}
		})
	}
	// None of them left a connection behind.
	waitFor(t, "no clients", func() bool { return len(s.Clients()) == 0 })
}

// TestUnauthenticatedConnectionFlood opens many refused handshakes at once
// while a real client works: the refusals cost nothing lasting and the
// client is served throughout.
func TestUnauthenticatedConnectionFlood(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	const n = 500
	var wg sync.WaitGroup
	var refused, other atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			h := http.Header{AuthHeader: {fmt.Sprintf("guess-%d", i)}}
			c, resp, err := websocket.DefaultDialer.Dial(wsURL(s, "/"), h)
			if err == nil {
				_ = c.Close()
			}
			if resp != nil && resp.StatusCode == http.StatusUnauthorized {
				refused.Add(1)
			} else {
				other.Add(1)
			}
		}(i)
	}
	for i := 0; i < 50; i++ {
		if got, want := request(t, ws, 100+i, "ping", ""), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, 100+i); got != want {
			t.Fatal(diff(want, got))
		}
	}
	wg.Wait()
	if refused.Load() != n {
		t.Fatalf("%d of %d guesses refused with 401, %d otherwise", refused.Load(), n, other.Load())
	}
	if c := s.Clients(); len(c) != 1 {
		t.Fatalf("%d clients, want the one real client", len(c))
	}
}

// nonLoopbackIPv4 returns an address of this machine that is not loopback,
// or nil.
func nonLoopbackIPv4(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// TestNonLoopbackPeers covers connections that do not come from loopback.
// The listener is bound to 127.0.0.1, so this machine's other addresses
// refuse the TCP connection outright. A packet from another host can still
// reach 127.0.0.1 where route_localnet is on (kube-proxy turns it on:
// CVE-2020-8558); a local socket bound to a non-loopback source address
// stands in for such a peer, and the server refuses it before 101.
func TestNonLoopbackPeers(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ip := nonLoopbackIPv4(t)
	if ip == nil {
		t.Skip("this machine has no non-loopback IPv4 address")
	}
	port := strconv.Itoa(s.Port())
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), port), guard); err == nil {
		_ = c.Close()
		t.Errorf("connected to %s:%s: the listener is not bound to 127.0.0.1 alone", ip, port)
	}

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: guard}
	c, err := d.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Skipf("cannot connect to 127.0.0.1 from %s: %v", ip, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, baseHandshake(s).String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a peer at %s with the right token got %s, want 403", ip, resp.Status)
	}
}

// TestSlowLoris dribbles handshakes one byte at a time, and opens
// connections that send nothing: the server cuts every one off after its
// header timeout (readHeaderTimeout) instead of holding them for as long as
// the attacker likes, and serves a real client meanwhile.
func TestSlowLoris(t *testing.T) {
	t.Parallel() // it waits out readHeaderTimeout
	s := startServer(t, testConfig(t), nil)
	before := runtime.NumGoroutine()
	const dribblers, idlers = 24, 8
	req := []byte(baseHandshake(s).String())
	start := time.Now()
	ended := make(chan time.Duration, dribblers+idlers)
	var wg sync.WaitGroup
	for i := 0; i < dribblers+idlers; i++ {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port()), guard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		dribble := i < dribblers
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Forever, as far as the attacker is concerned: one byte per
			// 100 ms never completes the headers in readHeaderTimeout.
			stop := make(chan struct{})
			if dribble {
				go func() {
					for j := 0; j < len(req)-4; j++ {
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
						if _, err := c.Write(req[j : j+1]); err != nil {
							return
						}
					}
				}()
			}
			_ = c.SetReadDeadline(time.Now().Add(3 * readHeaderTimeout))
			_, err := io.Copy(io.Discard, c)
			close(stop)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				ended <- -1 // still open: the server never cut it off
				return
			}
			ended <- time.Since(start)
		}()
	}
	// A real client is served while the attack goes on.
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	if got := request(t, ws, 2, "tools/call", `{"name":"echo","arguments":{"text":"under attack"}}`); !strings.Contains(got, "under attack") {
		t.Fatalf("echo during the attack: %s", got)
	}
	wg.Wait()
	close(ended)
	var longest time.Duration
	for d := range ended {
		if d < 0 {
			t.Fatal("a slow-loris connection outlived three header timeouts")
		}
		longest = max(longest, d)
	}
	t.Logf("%d dribbling and %d silent connections cut off; the last after %v (header timeout %v)", dribblers, idlers, longest.Round(time.Millisecond), readHeaderTimeout)
	_ = ws.Close()
	waitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}

// rawWS is a WebSocket client that writes frames byte for byte, so that a
// test can send what no well-behaved library would.
type rawWS struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, s *Server) *rawWS {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port()), guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, baseHandshake(s).String()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %s", resp.Status)
	}
	return &rawWS{c: c, r: r}
}

// Frame bits.
const (
	finBit   = 0x80
	rsv1Bit  = 0x40
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
)

// wsFrame encodes one client frame. masked=false breaks RFC 6455 §5.1;
// declared, if not 0, is the payload length written in the header instead
// of the real one.
func wsFrame(first byte, payload []byte, masked bool, declared uint64) []byte {
	var b bytes.Buffer
	b.WriteByte(first)
	n := uint64(len(payload))
	if declared != 0 {
		n = declared
	}
	mask := byte(0)
	if masked {
		mask = 0x80
	}
	switch {
	case n < 126:
		b.WriteByte(mask | byte(n))
	case n <= 0xffff:
		b.WriteByte(mask | 126)
		_ = binary.Write(&b, binary.BigEndian, uint16(n))
	default:
		b.WriteByte(mask | 127)
		_ = binary.Write(&b, binary.BigEndian, n)
	}
	if !masked {
		b.Write(payload)
		return b.Bytes()
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	b.Write(key[:])
	for i, c := range payload {
		b.WriteByte(c ^ key[i%4])
	}
	return b.Bytes()
}

func (w *rawWS) write(t *testing.T, frames ...[]byte) {
	t.Helper()
	_ = w.c.SetWriteDeadline(time.Now().Add(guard))
	for _, f := range frames {
		if _, err := w.c.Write(f); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
}

// serverFrame is one frame from the server.
type serverFrame struct {
	op      byte
	payload []byte
}

func (w *rawWS) read(t *testing.T) (serverFrame, error) {
	t.Helper()
	_ = w.c.SetReadDeadline(time.Now().Add(guard))
	var h [2]byte
	if _, err := io.ReadFull(w.r, h[:]); err != nil {
		return serverFrame{}, err
	}
	if h[1]&0x80 != 0 {
		t.Fatalf("the server sent a masked frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l uint16
		if err := binary.Read(w.r, binary.BigEndian, &l); err != nil {
			return serverFrame{}, err
		}
		n = uint64(l)
	case 127:
		if err := binary.Read(w.r, binary.BigEndian, &n); err != nil {
			return serverFrame{}, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(w.r, p); err != nil {
		return serverFrame{}, err
	}
	return serverFrame{op: h[0] & 0x0f, payload: p}, nil
}

// expectText reads frames (answering nothing) until a text frame and
// returns it.
func (w *rawWS) expectText(t *testing.T) string {
	t.Helper()
	for {
		f, err := w.read(t)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		switch f.op {
		case opText:
			return string(f.payload)
		case opClose:
			t.Fatalf("closed: %d %q", closeCode(f.payload), f.payload[min(2, len(f.payload)):])
		}
	}
}

// expectClose reads frames until a close frame and returns its code; the
// connection must then end.
func (w *rawWS) expectClose(t *testing.T) int {
	t.Helper()
	for {
		f, err := w.read(t)
		if err != nil {
			t.Fatalf("no close frame: %v", err)
		}
		if f.op != opClose {
			continue
		}
		_ = w.c.SetReadDeadline(time.Now().Add(guard))
		if _, err := io.Copy(io.Discard, w.r); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the server kept the connection open after its close frame")
			}
		}
		return closeCode(f.payload)
	}
}

// dropped is the "close code" of a connection the server ends without a
// close frame.
const dropped = -1

// expectDropped expects the connection to end without a close frame.
func (w *rawWS) expectDropped(t *testing.T) {
	t.Helper()
	for {
		f, err := w.read(t)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatal("the connection is still open")
		case err != nil:
			return
		case f.op == opClose:
			t.Fatalf("close frame %d, want the connection dropped", closeCode(f.payload))
		}
	}
}

func closeCode(p []byte) int {
	if len(p) < 2 {
		return websocket.CloseNoStatusReceived
	}
	return int(binary.BigEndian.Uint16(p))
}

const pingMsg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
const pingReply = `{"jsonrpc":"2.0","id":1,"result":{}}`

// TestHostileFrames sends frames that break RFC 6455, each on its own
// connection: the server answers with the right close code and drops the
// connection, or, for the legal oddities, serves the message.
func TestHostileFrames(t *testing.T) {
	msg := []byte(pingMsg)
	tests := []struct {
		name   string
		frames func() [][]byte
		code   int // 0: the ping is served
	}{
		{"unmasked client frame", func() [][]byte { return [][]byte{wsFrame(finBit|opText, msg, false, 0)} }, websocket.CloseProtocolError},
		{"RSV1 set without an extension", func() [][]byte { return [][]byte{wsFrame(finBit|rsv1Bit|opText, msg, true, 0)} }, websocket.CloseProtocolError},
		{"reserved opcode 3", func() [][]byte { return [][]byte{wsFrame(finBit|0x3, msg, true, 0)} }, websocket.CloseProtocolError},
		{"reserved control opcode 11", func() [][]byte { return [][]byte{wsFrame(finBit|0xb, nil, true, 0)} }, websocket.CloseProtocolError},
		{"continuation without a start", func() [][]byte { return [][]byte{wsFrame(finBit|opCont, msg, true, 0)} }, websocket.CloseProtocolError},
		{"new message inside a fragmented one", func() [][]byte {
			return [][]byte{wsFrame(opText, msg[:5], true, 0), wsFrame(finBit|opText, msg, true, 0)}
		}, websocket.CloseProtocolError},
		{"fragmented ping", func() [][]byte { return [][]byte{wsFrame(opPing, []byte("x"), true, 0)} }, websocket.CloseProtocolError},
		{"ping of 126 bytes", func() [][]byte { return [][]byte{wsFrame(finBit|opPing, bytes.Repeat([]byte("p"), 126), true, 0)} }, websocket.CloseProtocolError},
		{"length with the top bit set", func() [][]byte { return [][]byte{wsFrame(finBit|opText, msg, true, 1<<63)} }, dropped},
		{"close with a reserved code", func() [][]byte {
			return [][]byte{wsFrame(finBit|opClose, []byte{0x03, 0xe7}, true, 0)} // 999
		}, websocket.CloseProtocolError},
		// gorilla reads a 1-byte close payload as "no status" (RFC 6455
		// would call it a protocol error); either way the connection ends.
		{"close with a one-byte payload", func() [][]byte { return [][]byte{wsFrame(finBit|opClose, []byte{0x03}, true, 0)} }, websocket.CloseNoStatusReceived},
		{"close with an invalid UTF-8 reason", func() [][]byte {
			return [][]byte{wsFrame(finBit|opClose, []byte{0x03, 0xe8, 0xff, 0xfe}, true, 0)}
		}, websocket.CloseProtocolError},
		{"invalid UTF-8 split over fragments", func() [][]byte {
			return [][]byte{wsFrame(opText, []byte(`{"jsonrpc":"2.0","method":"\xe2`), true, 0), wsFrame(finBit|opCont, []byte("\x28\xa1\"}"), true, 0)}
		}, websocket.CloseInvalidFramePayloadData},
		{"1 TB declared, more than the limit sent", func() [][]byte {
			return [][]byte{wsFrame(finBit|opText, bytes.Repeat([]byte(" "), 2048), true, 1<<40)[:14+2048]}
		}, websocket.CloseMessageTooBig},
		{"binary message in fragments", func() [][]byte {
			return [][]byte{wsFrame(opBinary, msg[:5], true, 0), wsFrame(finBit|opCont, msg[5:], true, 0)}
		}, websocket.CloseUnsupportedData},

		// Legal, if unusual: served.
		{"one fragment per byte", func() [][]byte {
			fs := [][]byte{wsFrame(opText, msg[:1], true, 0)}
			for i := 1; i < len(msg)-1; i++ {
				fs = append(fs, wsFrame(opCont, msg[i:i+1], true, 0))
			}
			return append(fs, wsFrame(finBit|opCont, msg[len(msg)-1:], true, 0))
		}, 0},
		{"pings between fragments", func() [][]byte {
			return [][]byte{
				wsFrame(opText, msg[:10], true, 0), wsFrame(finBit|opPing, []byte("a"), true, 0),
				wsFrame(opCont, msg[10:20], true, 0), wsFrame(finBit|opPing, nil, true, 0),
				wsFrame(finBit|opCont, msg[20:], true, 0),
			}
		}, 0},
		{"empty fragments", func() [][]byte {
			return [][]byte{wsFrame(opText, nil, true, 0), wsFrame(opCont, msg, true, 0), wsFrame(finBit|opCont, nil, true, 0)}
		}, 0},
		{"unsolicited pong first", func() [][]byte {
			return [][]byte{wsFrame(finBit|0xa, []byte("unasked"), true, 0), wsFrame(finBit|opText, msg, true, 0)}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, testConfig(t), func(s *Server) { s.readLimit = 1024 })
			w := dialRaw(t, s)
			w.write(t, tt.frames()...)
			if tt.code == 0 {
				if got := w.expectText(t); got != pingReply {
					t.Fatal(diff(pingReply, got))
				}
				return
			}
			if tt.code == dropped {
				w.expectDropped(t)
			} else if code := w.expectClose(t); code != tt.code {
				t.Fatalf("close code %d, want %d", code, tt.code)
			}
			waitFor(t, "the server to drop the client", func() bool { return len(s.Clients()) == 0 })
		})
	}
}

// TestDefaultReadLimit sends exactly MinReadLimit (64 MiB, the default
// limit) and one byte more: the first is served, the second refused with
// 1009. The frames go out with a zero mask key, so the test spends no time
// masking 128 MiB.
func TestDefaultReadLimit(t *testing.T) {
	t.Parallel() // decoding 64 MiB under -race takes a while
	s := startServer(t, testConfig(t), nil)
	w := dialRaw(t, s)
	send := func(padding int) {
		prefix, suffix := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, `"}}`
		n := len(prefix) + padding + len(suffix)
		var hdr [14]byte
		hdr[0], hdr[1] = finBit|opText, 0x80|127
		binary.BigEndian.PutUint64(hdr[2:10], uint64(n)) // mask key hdr[10:14] stays 0
		_ = w.c.SetWriteDeadline(time.Now().Add(guard))
		body := io.MultiReader(bytes.NewReader(hdr[:]), strings.NewReader(prefix),
			io.LimitReader(repeatReader('a'), int64(padding)), strings.NewReader(suffix))
		if _, err := io.Copy(w.c, body); err != nil {
			t.Fatal(err)
		}
	}
	const overhead = len(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`) + len(`"}}`)
	send(MinReadLimit - overhead)
	if got := w.expectText(t); got != pingReply {
		t.Fatal(diff(pingReply, got))
	}
	send(MinReadLimit - overhead + 1)
	if code := w.expectClose(t); code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want %d", code, websocket.CloseMessageTooBig)
	}
}

// repeatReader reads as an endless run of one byte.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestHostileMessages covers JSON-RPC messages the transcripts do not:
// ids at and past the integer limits, deep nesting, duplicate keys,
// escapes in method names. Each reply is exact, and the connection serves
// the next request.
func TestHostileMessages(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	bigString := strings.Repeat("✻", 100_000)
	tests := []struct {
		name, send, want string
	}{
		{"id 2^63-1", `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`, `{"jsonrpc":"2.0","id":9223372036854775807,"result":{}}`},
		{"id -2^63", `{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}`, `{"jsonrpc":"2.0","id":-9223372036854775808,"result":{}}`},
		{"id 2^64", `{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}`, `{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}`},
		{"id 1e400 (beyond float64)", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `{"jsonrpc":"2.0","id":1e400,"result":{}}`},
		{"id -1e-400", `{"jsonrpc":"2.0","id":-1e-400,"method":"ping"}`, `{"jsonrpc":"2.0","id":-1e-400,"result":{}}`},
		{"id of 100k runes", `{"jsonrpc":"2.0","id":"` + bigString + `","method":"ping"}`, `{"jsonrpc":"2.0","id":"` + bigString + `","result":{}}`},
		{"id with NUL and line separators", `{"jsonrpc":"2.0","id":"a\u0000b\u2028c","method":"ping"}`, `{"jsonrpc":"2.0","id":"a\u0000b\u2028c","result":{}}`},
		{"id with a lone surrogate escape", `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, `{"jsonrpc":"2.0","id":"\ud800","result":{}}`},
		{"id object, on a tool call", `{"jsonrpc":"2.0","id":{"$ne":null},"method":"tools/call","params":{"name":"echo"}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or a number"}}`},
		{"duplicate id keys: the last wins", `{"jsonrpc":"2.0","id":1,"id":{"x":1},"method":"ping"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or a number"}}`},
		{"duplicate method keys: the last wins", `{"jsonrpc":"2.0","id":2,"method":"tools/call","method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"escaped method name", `{"jsonrpc":"2.0","id":3,"method":"\u0070ing"}`, `{"jsonrpc":"2.0","id":3,"result":{}}`},
		{"method with an escaped slash", `{"jsonrpc":"2.0","id":4,"method":"tools\/call","params":{"name":"\u0065cho","arguments":{"text":"x"}}}`,
			`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"arguments\":{\"text\":\"x\"},\"pid\":0,\"progressToken\":null}"}]}}`},
		{"method __proto__", `{"jsonrpc":"2.0","id":5,"method":"__proto__"}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found: __proto__"}}`},
		{"method with a NUL", `{"jsonrpc":"2.0","id":6,"method":"ping\u0000"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: ping\u0000"}}`},
		{"nesting 100k deep", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"nesting 5k deep in tool arguments", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}}`,
			`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"{\"arguments\":{\"a\":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `},\"pid\":0,\"progressToken\":null}"}]}}`},
		{"tool name of the wrong type", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":["echo"]}}`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Invalid params: name has the wrong type"}}`},
		{"tool name empty", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":""}}`,
			`{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Unknown tool: "}}`},
		{"tool name of a builtin method", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"initialize"}}`,
			`{"jsonrpc":"2.0","id":11,"error":{"code":-32602,"message":"Unknown tool: initialize"}}`},
		{"progress token of every type", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":{"a":[1e400]}}}}`,
			`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"{\"arguments\":{},\"pid\":0,\"progressToken\":{\"a\":[1e400]}}"}]}}`},
		{"a JSON string holding a request", `"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\"}"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message must be a JSON object"}}`},
		{"a byte-order mark first", "\ufeff" + `{"jsonrpc":"2.0","id":14,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"empty message", ``, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"whitespace only", " \r\n\t ", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"batch of a thousand", `[` + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 999) + `{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batch requests are not supported"}}`},
		{"a reply to nothing with a request's fields", `{"jsonrpc":"2.0","id":15,"result":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":15,"result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeText(t, ws, tt.send)
			if got := readText(t, ws); got != tt.want {
				t.Fatal(diff(tt.want, got))
			}
			if got, want := request(t, ws, 99, "ping", ""), `{"jsonrpc":"2.0","id":99,"result":{}}`; got != want {
				t.Fatalf("the connection after it: %s", diff(want, got))
			}
		})
	}
}

// TestNotificationFlood100k sends 100,000 notifications of every kind the
// server reads (unknown, cancellations of nothing, ide_connected, progress)
// back to back, then a ping: the ping's reply is the next frame, nothing
// else was sent, and the server is back to its goroutine baseline.
func TestNotificationFlood100k(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	before := runtime.NumGoroutine()
	kinds := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`,
		`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":%d}}`,
		`{"jsonrpc":"2.0","method":"no/such/notification","params":{"n":%d}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{"n":%d}}`,
	}
	const n = 100_000
	start := time.Now()
	for i := 0; i < n; i++ {
		writeText(t, ws, fmt.Sprintf(kinds[i%len(kinds)], i))
	}
	if got, want := request(t, ws, n, "ping", ""), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, n); got != want {
		t.Fatal(diff(want, got))
	}
	t.Logf("%d notifications read and answered in %v", n, time.Since(start).Round(time.Millisecond))
	if c := s.Clients(); len(c) != 1 || c[0].PID != (n-3)/5*5+2 {
		t.Errorf("clients %+v: the last ide_connected pid should have stuck", c)
	}
	waitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}

// TestInvalidMessageFlood sends 100,000 broken messages, each answered with
// an error, while the client reads the answers: every one is answered, in
// order, and the connection stays up.
func TestInvalidMessageFlood(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	const n = 100_000
	got := make(chan error, 1)
	go func() {
		want := []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
		for i := 0; i < n; i++ {
			_ = ws.SetReadDeadline(time.Now().Add(guard))
			_, data, err := ws.ReadMessage()
			if err != nil {
				got <- fmt.Errorf("reply %d: %w", i, err)
				return
			}
			if !bytes.Equal(data, want) {
				got <- fmt.Errorf("reply %d: %s", i, data)
				return
			}
		}
		got <- nil
	}()
	for i := 0; i < n; i++ {
		writeText(t, ws, `{"jsonrpc":`)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if got, want := request(t, ws, 1, "ping", ""), pingReply; got != want {
		t.Fatal(diff(want, got))
	}
}

// TestPendingRequestFlood parks calls on one connection until the
// per-connection cap (maxInflight) refuses more, checks that the refusals
// are exact and the connection still works once a call ends, then drops
// the connection: every parked call is cancelled and every goroutine they
// held is gone.
func TestPendingRequestFlood(t *testing.T) {
	var running, cancelled atomic.Int64
	release := make(chan struct{}, 1)
	s := startServer(t, testConfig(t), func(s *Server) {
		err := s.RegisterTool(Tool{Name: "park", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
			running.Add(1)
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return nil, ctx.Err()
			case <-release:
				return TextResult("released"), nil
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	runtime.GC()
	before := runtime.NumGoroutine()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ws := dial(t, s, "/")
	limit := s.maxInflight
	extra := 100
	var buf bytes.Buffer
	for i := 0; i < limit+extra; i++ {
		buf.Reset()
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"park"}}`, i)
		writeText(t, ws, buf.String())
	}
	busy := fmt.Sprintf(`"error":{"code":-32000,"message":"Server busy: %d requests are already running on this connection; wait for some to finish"}}`, limit)
	for i := 0; i < extra; i++ {
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s`, limit+i, busy)
		if got := readText(t, ws); got != want {
			t.Fatalf("refusal %d: %s", i, diff(want, got))
		}
	}
	waitFor(t, "the calls under the cap to be running", func() bool { return running.Load() == int64(limit) })
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	t.Logf("%d pending calls: %d goroutines, %.1f KiB of stack+heap each", limit, runtime.NumGoroutine()-before,
		float64((m1.StackInuse+m1.HeapInuse)-(m0.StackInuse+m0.HeapInuse))/float64(limit)/1024)
	if got, want := request(t, ws, -1, "ping", ""), `{"jsonrpc":"2.0","id":-1,`+busy; got != want {
		t.Fatalf("ping at the cap: %s", diff(want, got))
	}
	// One call ends: there is room for one more request.
	release <- struct{}{}
	if got := readText(t, ws); !strings.Contains(got, `"released"`) {
		t.Fatalf("the released call answered %s", got)
	}
	if got, want := request(t, ws, -2, "ping", ""), `{"jsonrpc":"2.0","id":-2,"result":{}}`; got != want {
		t.Fatalf("ping below the cap: %s", diff(want, got))
	}
	_ = ws.Close()
	waitFor(t, "every parked call to be cancelled", func() bool { return cancelled.Load() == int64(limit-1) })
	waitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}

// TestManyClients connects 200 clients at once, each making calls, then
// closes them all: everyone is served, and nothing is left behind.
func TestManyClients(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	before := runtime.NumGoroutine()
	const n, calls = 200, 20
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ws, err := dialWith(t, websocket.Dialer{Subprotocols: []string{"mcp"}}, s, "/")
			if err != nil {
				errs <- err
				return
			}
			defer ws.Close()
			for j := 0; j < calls; j++ {
				text := fmt.Sprintf("client %d call %d", i, j)
				msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": j, "method": "tools/call",
					"params": map[string]any{"name": "echo", "arguments": map[string]string{"text": text}}})
				_ = ws.SetWriteDeadline(time.Now().Add(guard))
				if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
					errs <- err
					return
				}
				_ = ws.SetReadDeadline(time.Now().Add(guard))
				_, data, err := ws.ReadMessage()
				if err != nil {
					errs <- err
					return
				}
				if !strings.Contains(string(data), text) {
					errs <- fmt.Errorf("client %d call %d: %s", i, j, data)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, "no clients", func() bool { return len(s.Clients()) == 0 })
	waitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}

// TestSlowLorisAfterUpgrade starts a message and never finishes it: the
// keepalive, which counts frame headers and control frames as signs of life
// but not payload bytes, closes the connection after two silent intervals.
func TestSlowLorisAfterUpgrade(t *testing.T) {
	var ticks chan<- time.Time
	s := startServer(t, testConfig(t), func(s *Server) { ticks = fakeTicker(s) })
	w := dialRaw(t, s)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.Local)
	iv := s.cfg.PingInterval
	ticks <- t0 // the handshake was the last sign of life
	if f, err := w.read(t); err != nil || f.op != opPing {
		t.Fatalf("want the ping that follows the first tick: %v, %v", f, err)
	}
	// Half a message: its start is a sign of life (the reader has seen a
	// frame header); wait for the reader to take it, so that the ticks
	// below count from it whatever the scheduling.
	c := s.connections()[0]
	f := wsFrame(finBit|opText, bytes.Repeat([]byte(" "), 1000), true, 0)
	w.write(t, f[:500])
	waitFor(t, "the reader to see the frame header", c.fr.(*wsFramer).seen.Load)
	// Then a byte now and then: no sign of life. One tick sees the header,
	// two more see nothing.
	for i := 1; i <= 3; i++ {
		w.write(t, f[499+i:500+i])
		ticks <- t0.Add(time.Duration(i) * iv)
	}
	if code := w.expectClose(t); code != websocket.CloseGoingAway {
		t.Fatalf("close code %d, want %d", code, websocket.CloseGoingAway)
	}
	waitFor(t, "the server to drop the client", func() bool { return len(s.Clients()) == 0 })
}
