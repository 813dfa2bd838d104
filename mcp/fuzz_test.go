package mcp

// Fuzz targets for everything the server decodes from a peer: the
// JSON-RPC message decoder, tools/call params, whole WebSocket messages on
// a live connection, and raw HTTP handshakes. `go test` runs their seeds
// (below and in testdata/fuzz/<target>/) as ordinary tests; `make fuzz`
// runs each with -fuzz for a set time. Crashers are fixed and their inputs
// kept in testdata/fuzz as regression seeds.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// messageSeeds are messages of every shape the decoder distinguishes.
var messageSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":42}}`,
	`{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"nope"}`,
	`{"jsonrpc":"2.0","id":-0.0e-0,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":3,"result":{}}`,
	`{"id":[],"error":1}`,
	`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"ping","params":3}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":["echo"]}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"} x`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[[[[[]]]]]}}`,
	"\ufeff{}",
	` `,
	`null`,
	`"x"`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","method":3}`,
}

// FuzzDecodeMessage checks the decoder never panics, classifies
// consistently, and that any reply built from what it returns is valid
// JSON echoing the request's id.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, rpcErr := decodeMessage(data)
		reply := encodeError(msg.id, &Error{Code: CodeInternalError, Message: "x"})
		if rpcErr != nil {
			reply = encodeError(msg.id, rpcErr)
			switch rpcErr.Code {
			case CodeParseError, CodeInvalidRequest:
			default:
				t.Fatalf("decode error code %d", rpcErr.Code)
			}
		}
		if !json.Valid(reply) {
			t.Fatalf("reply is not JSON: %q", reply)
		}
		if rpcErr != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON accepted as kind %d", msg.kind)
		}
		switch msg.kind {
		case kindRequest:
			if _, ok := idKey(msg.id); !ok {
				t.Fatalf("request id %q has no key", msg.id)
			}
			ok, err := encodeResult(msg.id, struct{}{})
			if err != nil || !json.Valid(ok) {
				t.Fatalf("result for id %q: %q, %v", msg.id, ok, err)
			}
			var echoed struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(ok, &echoed); err != nil || !sameJSON(echoed.ID, msg.id) {
				t.Fatalf("reply id %s, request id %s", echoed.ID, msg.id)
			}
			fallthrough
		case kindNotification:
			if msg.params != nil && firstByte(msg.params) != '{' && firstByte(msg.params) != '[' {
				t.Fatalf("params %q accepted", msg.params)
			}
		case kindResponse:
			if msg.method != "" {
				t.Fatalf("a response with method %q", msg.method)
			}
		}
	})
}

// sameJSON reports whether a and b are the same JSON value (numbers
// compared by their text).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// FuzzCallTool checks tools/call params decoding: any input gives either
// -32602 or a result that encodes, and a handler only ever sees a JSON
// object as arguments.
func FuzzCallTool(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7}}`,
		`{"name":"echo"}`, `{"name":"echo","arguments":null}`, `{"name":"echo","arguments":[]}`,
		`{"name":"echo","arguments":"{}"}`, `{"name":1}`, `{}`, `null`, `[]`, `"x"`, ``,
		`{"name":"fail","arguments":{}}`, `{"name":"rpc"}`, `{"name":"echo","_meta":[]}`,
		`{"name":"echo","arguments":{"a":1e400}}`, `{"name":"echo","arguments":{"\u0000":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	var reg registry
	check := func(req *ToolRequest) error {
		if firstByte(req.Arguments) != '{' || !json.Valid(req.Arguments) {
			return fmt.Errorf("handler got arguments %q", req.Arguments)
		}
		return nil
	}
	for _, tool := range []Tool{
		{Name: "echo", Handler: func(_ context.Context, req *ToolRequest) (*ToolResult, error) {
			if err := check(req); err != nil {
				return nil, &Error{Code: -1, Message: err.Error()}
			}
			return JSONResult(map[string]any{"arguments": req.Arguments, "progressToken": req.ProgressToken})
		}},
		{Name: "fail", Handler: func(_ context.Context, req *ToolRequest) (*ToolResult, error) {
			if err := check(req); err != nil {
				return nil, &Error{Code: -1, Message: err.Error()}
			}
			return nil, errors.New("failed \xff")
		}},
		{Name: "rpc", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, InvalidParams("bad")
		}},
	} {
		if err := reg.addTool(tool); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) && len(params) > 0 {
			return // decodeMessage only lets valid JSON through
		}
		res, err := reg.callTool(context.Background(), ClientInfo{}, params)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidParams {
				t.Fatalf("error %v, want -32602", err)
			}
			if _, encErr := marshalJSON(e); encErr != nil {
				t.Fatal(encErr)
			}
			return
		}
		out, encErr := encodeResult([]byte(`1`), res)
		if encErr != nil || !json.Valid(out) {
			t.Fatalf("result %#v encodes as %q, %v", res, out, encErr)
		}
	})
}

// fuzzServer starts a server whose tools all answer at once (echo, a
// failure, a JSON-RPC error, a panic), so that every request gets exactly
// one reply. It serves until the fuzz target ends.
func fuzzServer(f *testing.F) *Server {
	f.Helper()
	s, err := NewServer(Config{ConfigDir: f.TempDir(), PID: 1, ServerVersion: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	for _, tool := range []Tool{
		{Name: "echo", Handler: func(_ context.Context, req *ToolRequest) (*ToolResult, error) {
			return JSONResult(map[string]any{"arguments": req.Arguments, "progressToken": req.ProgressToken})
		}},
		{Name: "fail", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, errors.New("failed")
		}},
		{Name: "rpc", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, InvalidParams("bad")
		}},
		{Name: "panic", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			panic("fuzz")
		}},
	} {
		if err := s.RegisterTool(tool); err != nil {
			f.Fatal(err)
		}
	}
	s.HandleMethod("readFile", func(_ context.Context, req *MethodRequest) (any, error) {
		return map[string]any{"params": req.Params}, nil
	})
	if err := s.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	return s
}

// liveConn is a connection to a live server, redialled after the server
// closes it.
type liveConn struct {
	s   *Server
	ws  *websocket.Conn
	seq int
}

func (l *liveConn) conn(t *testing.T) *websocket.Conn {
	t.Helper()
	if l.ws != nil {
		return l.ws
	}
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: guard}
	ws, _, err := d.Dial(wsURL(l.s, "/"), authHeader(l.s))
	if err != nil {
		t.Fatalf("the server stopped accepting connections: %v", err)
	}
	l.ws = ws
	return ws
}

func (l *liveConn) drop() {
	if l.ws != nil {
		_ = l.ws.Close()
		l.ws = nil
	}
}

// FuzzConnection sends each input as one text message on a live
// connection, then a ping. The replies before the ping's must be exactly
// what the decoder predicts: one error for a broken message, one response
// echoing the id for a request, nothing for a notification or a response;
// every frame is a JSON-RPC 2.0 object. The server may end the connection
// only for invalid UTF-8 (1007), and must then accept a new one.
func FuzzConnection(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"panic"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rpc"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"r","method":"readFile","params":[1,{"a":null}]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	s := fuzzServer(f)
	live := &liveConn{s: s}
	f.Cleanup(live.drop)
	f.Fuzz(func(t *testing.T, data []byte) {
		ws := live.conn(t)
		live.seq++
		sentinel := fmt.Sprintf(`"\u0000fuzz-%d"`, live.seq)
		msg, rpcErr := decodeMessage(data)
		wantReplies := 0
		if rpcErr != nil || msg.kind == kindRequest {
			wantReplies = 1
		}
		_ = ws.SetWriteDeadline(time.Now().Add(guard))
		if err := ws.WriteMessage(websocket.TextMessage, data); err != nil {
			t.Fatalf("write: %v", err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":`+sentinel+`,"method":"ping"}`)); err != nil {
			t.Fatalf("write: %v", err)
		}
		var replies []json.RawMessage
		seen := false
		for {
			_ = ws.SetReadDeadline(time.Now().Add(guard))
			_, frame, err := ws.ReadMessage()
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				live.drop()
				if ce.Code != websocket.CloseInvalidFramePayloadData || utf8Valid(data) {
					t.Fatalf("closed %d %q for %q", ce.Code, ce.Text, data)
				}
				live.conn(t) // the server must accept a new connection
				return
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var reply struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
				Error   *Error          `json:"error"`
			}
			if err := json.Unmarshal(frame, &reply); err != nil || reply.JSONRPC != "2.0" || (reply.Result == nil) == (reply.Error == nil) {
				t.Fatalf("frame %q is not a JSON-RPC 2.0 response (%v)", frame, err)
			}
			if string(reply.ID) == sentinel {
				seen = true
			} else {
				replies = append(replies, reply.ID)
			}
			// A request runs on its own goroutine, so its reply may follow
			// the ping's; a stray extra reply shows up in the next round.
			if seen && len(replies) >= wantReplies {
				break
			}
		}
		if len(replies) != wantReplies {
			t.Fatalf("%d replies to %q, want %d", len(replies), data, wantReplies)
		}
		if wantReplies == 1 {
			want := msg.id
			if want == nil {
				want = json.RawMessage("null")
			}
			if !sameJSON(replies[0], want) {
				t.Fatalf("reply id %s, want %s", replies[0], want)
			}
		}
	})
}

// utf8Valid is utf8.Valid, named for the reader of FuzzConnection.
func utf8Valid(b []byte) bool { return utf8.Valid(b) }

// FuzzHandshake sends each input as an HTTP request (the placeholders
// TOKEN and PORT stand for the real token and port, so that the fuzzer can
// reach accepted handshakes). Whatever the input, a 101 must only go to a
// request that passes every check, re-read here with net/http's parser;
// and the server must go on serving.
func FuzzHandshake(f *testing.F) {
	const upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	f.Add("GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n" + upgrade + "X-Claude-Code-Ide-Authorization: TOKEN\r\n\r\n")
	f.Add("GET /mcp HTTP/1.1\r\nHost: localhost:PORT\r\n" + upgrade + "X-Claude-Code-Ide-Authorization: TOKEN\r\nOrigin: null\r\n\r\n")
	f.Add("GET http://evil.example/ HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n" + upgrade + "X-Claude-Code-Ide-Authorization: TOKEN\r\n\r\n")
	f.Add("GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nhost: evil\r\n" + upgrade + "X-Claude-Code-Ide-Authorization: TOKEN\r\n\r\n")
	f.Add("GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n" + upgrade + "X-Claude-Code-Ide-Authorization: nope\r\nX-Claude-Code-Ide-Authorization: TOKEN\r\n\r\n")
	f.Add("POST / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length: 2\r\n\r\n{}")
	f.Add("GET / HTTP/1.0\r\n\r\n")
	f.Add("\x00\x01\x02")
	s := fuzzServer(f)
	port := strconv.Itoa(s.Port())
	f.Fuzz(func(t *testing.T, req string) {
		raw := strings.ReplaceAll(strings.ReplaceAll(req, "TOKEN", s.Token()), "PORT", port)
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, guard)
		if err != nil {
			t.Fatalf("the server stopped accepting connections: %v", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(guard))
		_, _ = io.WriteString(c, raw)
		_ = c.(*net.TCPConn).CloseWrite() // an unfinished request ends here
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("no answer and no close for %q", raw)
		}
		if err != nil {
			return // closed without an answer
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusSwitchingProtocols {
			if err := handshakeAllowed(raw, s.Port(), s.Token()); err != nil {
				t.Fatalf("%v:\n%q", err, raw)
			}
		}
	})
}

// handshakeAllowed re-checks a request the server upgraded, independently
// of checkHandshake.
func handshakeAllowed(raw string, port int, token string) error {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return fmt.Errorf("upgraded a request net/http cannot parse: %w", err)
	}
	p := strconv.Itoa(port)
	host := strings.ToLower(r.Host)
	switch {
	case r.Method != http.MethodGet:
		return fmt.Errorf("upgraded method %q", r.Method)
	case len(r.Header.Values("Origin")) != 0:
		return errors.New("upgraded a request with Origin")
	case host != "127.0.0.1:"+p && host != "localhost:"+p:
		return fmt.Errorf("upgraded Host %q", r.Host)
	case r.URL.Path != "/" && r.URL.Path != "/mcp":
		return fmt.Errorf("upgraded path %q", r.URL.Path)
	case r.Header.Get(AuthHeader) != token:
		return errors.New("upgraded without the token")
	}
	return nil
}
