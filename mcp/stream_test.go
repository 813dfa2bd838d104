package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startStream serves a StreamServer with one echo tool and one blocking
// tool on a unix socket; it returns the socket path.
func startStream(t *testing.T, limit int) (*StreamServer, string) {
	t.Helper()
	s := NewStreamServer(StreamConfig{Token: "s3cret", ReadLimit: limit, Instructions: "use me"})
	err := s.SetTools([]Tool{
		{Name: "echo", Handler: func(_ context.Context, req *ToolRequest) (*ToolResult, error) {
			return TextResult(string(req.Arguments)), nil
		}},
		{Name: "block", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{Name: "fail", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, errors.New("no language server")
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, sock
}

type streamClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialStream(t *testing.T, sock, hello string) *streamClient {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(guard))
	if _, err := c.Write([]byte(hello + "\n")); err != nil {
		t.Fatal(err)
	}
	return &streamClient{c: c, r: bufio.NewReader(c)}
}

func (sc *streamClient) roundTrip(t *testing.T, msg string) string {
	t.Helper()
	if _, err := sc.c.Write([]byte(msg + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := sc.r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", msg, err)
	}
	return strings.TrimSpace(line)
}

func TestStreamTranscript(t *testing.T) {
	_, sock := startStream(t, 4096)
	c := dialStream(t, sock, `{"token":"s3cret"}`)
	cases := []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"nvim-claude","version":"dev"},"instructions":"use me"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{}}},{"name":"block","inputSchema":{"type":"object","properties":{}}},{"name":"fail","inputSchema":{"type":"object","properties":{}}}]}}`},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}`,
			`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"{\"x\":1}"}]}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"no language server"}],"isError":true}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool: nope"}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"bogus"}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: bogus"}}`},
		{`{not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"result":{}}`},
	}
	for _, tc := range cases {
		if got := c.roundTrip(t, tc.send); got != tc.want {
			t.Errorf("send %s\n got %s\nwant %s", tc.send, got, tc.want)
		}
	}
}

func TestStreamCancel(t *testing.T) {
	_, sock := startStream(t, 4096)
	c := dialStream(t, sock, `{"token":"s3cret"}`)
	if _, err := c.c.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	// The cancelled call gets no reply: the next answer is the ping's.
	if got := c.roundTrip(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":8,"result":{}}` {
		t.Fatalf("after a cancelled call: %s", got)
	}
}

// Hostile peers: a wrong, missing or oversized hello, and an oversized
// message after it, end the connection.
func TestStreamRefuses(t *testing.T) {
	_, sock := startStream(t, 256)
	cases := []struct {
		name, hello, then string
		want              []string // the lines answered before the end
	}{
		{"wrong token", `{"token":"guess"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		{"no token", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil},
		{"huge hello", `{"token":"` + strings.Repeat("x", 8<<10) + `"}`, ``, nil},
		{"huge message", `{"token":"s3cret"}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"` + strings.Repeat("x", 300) + `"}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
			[]string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message larger than 256 bytes"}}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialStream(t, sock, tc.hello)
			_, _ = c.c.Write([]byte(tc.then + "\n"))
			var got []string
			for {
				line, err := c.r.ReadString('\n')
				if err != nil {
					break // closed: what we want
				}
				got = append(got, strings.TrimSuffix(line, "\n"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("answered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStreamSetToolsRejectsDuplicates(t *testing.T) {
	s := NewStreamServer(StreamConfig{})
	h := func(context.Context, *ToolRequest) (*ToolResult, error) { return nil, nil }
	if err := s.SetTools([]Tool{{Name: "a", Handler: h}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTools([]Tool{{Name: "b", Handler: h}, {Name: "b", Handler: h}}); err == nil {
		t.Fatal("duplicate accepted")
	}
	if got := s.ToolNames(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("tools after a refused SetTools: %v", got)
	}
	if s.Token() == "" {
		t.Fatal("no random token")
	}
}

// signalHandler is a slog.Handler that closes ch when a record with the
// message msg is logged.
type signalHandler struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// TestStreamEndOfInput is the stdio relay's contract: when the CLI closes
// its stdin, the relay half-closes the socket; the calls in flight then
// finish, uncancelled, and their replies go out before the server closes
// the stream.
func TestStreamEndOfInput(t *testing.T) {
	eof := make(chan struct{})
	release := make(chan struct{})
	s := NewStreamServer(StreamConfig{
		Token:  "s3cret",
		Logger: slog.New(signalHandler{msg: "read loop ended", once: new(sync.Once), ch: eof}),
	})
	err := s.SetTools([]Tool{{Name: "slow", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
		select {
		case <-release:
			return TextResult("finished"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	c := dialStream(t, sock, `{"token":"s3cret"}`)
	if _, err := c.c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-eof:
	case <-time.After(guard):
		t.Fatal("the server did not see the end of input")
	}
	close(release)
	line, err := c.r.ReadString('\n')
	if want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"finished"}]}}` + "\n"; line != want || err != nil {
		t.Fatalf("after the end of input: %q, %v; want %q", line, err, want)
	}
	if _, err := c.r.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("the server did not close the stream: %v", err)
	}
}

// TestStreamServeConn serves a pipe, which is an io.Closer: the in-flight
// cap holds on a StreamServer's connections too, and cancelling ctx ends
// ServeConn and the calls it started.
func TestStreamServeConn(t *testing.T) {
	s := NewStreamServer(StreamConfig{})
	s.svc.maxInflight = 1
	started := make(chan struct{}, 1)
	err := s.SetTools([]Tool{{Name: "hold", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	server, client := net.Pipe()
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeConn(ctx, server, ClientInfo{}) }()
	_ = client.SetDeadline(time.Now().Add(guard))
	sc := &streamClient{c: client, r: bufio.NewReader(client)}
	if _, err := client.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	<-started
	if got, want := sc.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Server busy: 1 requests are already running on this connection; wait for some to finish"}}`; got != want {
		t.Fatal(diff(want, got))
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("ServeConn cancelled: no error")
		}
	case <-time.After(guard):
		t.Fatal("ServeConn did not end when its context was cancelled")
	}
}

// TestStreamHandleMethod: a custom method answers without initialize and
// survives SetTools (the edtools server swaps its tool set on every
// options change; the hook method must stay).
func TestStreamHandleMethod(t *testing.T) {
	s, sock := startStream(t, 0)
	s.HandleMethod("x/hook", func(_ context.Context, req *MethodRequest) (any, error) {
		return map[string]string{"got": string(req.Params)}, nil
	})
	for _, step := range []string{"before SetTools", "after SetTools"} {
		c := dialStream(t, sock, `{"token":"s3cret"}`)
		if got, want := c.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"x/hook","params":{"a":1}}`),
			`{"jsonrpc":"2.0","id":1,"result":{"got":"{\"a\":1}"}}`; got != want {
			t.Fatalf("%s: %s", step, diff(want, got))
		}
		if err := s.SetTools(nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"", "ping", "tools/call"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("HandleMethod(%q) did not panic", name)
				}
			}()
			s.HandleMethod(name, func(context.Context, *MethodRequest) (any, error) { return nil, nil })
		}()
	}
}
