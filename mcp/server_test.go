package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestNewServerValidates(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"no config dir", func(c *Config) { c.ConfigDir = "" }},
		{"relative config dir", func(c *Config) { c.ConfigDir = "claude" }},
		{"no pid", func(c *Config) { c.PID = 0 }},
		{"relative workspace folder", func(c *Config) { c.WorkspaceFolders = []string{"src"} }},
		{"negative ping interval", func(c *Config) { c.PingInterval = -time.Second }},
		{"small read limit", func(c *Config) { c.ReadLimit = 1 << 20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.change(&cfg)
			if _, err := NewServer(cfg); err == nil {
				t.Error("no error")
			}
		})
	}
	s, err := NewServer(Config{ConfigDir: t.TempDir(), PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.IDEName != "Neovim" || s.cfg.PingInterval != DefaultPingInterval || s.readLimit != MinReadLimit || len(s.Token()) < 32 {
		t.Errorf("defaults not applied: %+v, read limit %d", s.cfg, s.readLimit)
	}
}

func TestRegistration(t *testing.T) {
	s, err := NewServer(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context, *ToolRequest) (*ToolResult, error) { return nil, nil }
	if err := s.RegisterTool(Tool{Name: "a", Handler: ok}); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []Tool{
		{Name: "a", Handler: ok},
		{Name: "", Handler: ok},
		{Name: "b"},
		{Name: "c", Handler: ok, InputSchema: []byte(`[]`)},
		{Name: "d", Handler: ok, InputSchema: []byte(`{`)},
	} {
		if err := s.RegisterTool(tool); err == nil {
			t.Errorf("RegisterTool(%+v): no error", tool)
		}
	}
	h := func(context.Context, *MethodRequest) (any, error) { return nil, nil }
	for _, tt := range []struct {
		name string
		h    MethodHandler
	}{{"initialize", h}, {"tools/call", h}, {"ide_connected", h}, {"", h}, {"readFile", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("HandleMethod(%q): no panic", tt.name)
				}
			}()
			s.HandleMethod(tt.name, tt.h)
		}()
	}
}

func TestRegisterToolAfterStart(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	err := s.RegisterTool(Tool{Name: "late", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
		return TextResult("late"), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readText(t, ws), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`; got != want {
		t.Error(diff(want, got))
	}
	if got := request(t, ws, 2, "tools/list", ""); !strings.HasSuffix(got, `{"name":"late","inputSchema":{"type":"object","properties":{}}}]}}`) {
		t.Errorf("tools/list: %s", got)
	}
}

// hookRecorder records the hooks' calls.
type hookRecorder struct {
	connect, ideConnected, disconnect chan ClientInfo
}

func recordHooks(cfg *Config) *hookRecorder {
	r := &hookRecorder{make(chan ClientInfo, 8), make(chan ClientInfo, 8), make(chan ClientInfo, 8)}
	cfg.OnConnect = func(c ClientInfo) { r.connect <- c }
	cfg.OnIDEConnected = func(c ClientInfo) { r.ideConnected <- c }
	cfg.OnDisconnect = func(c ClientInfo) { r.disconnect <- c }
	return r
}

func next(t *testing.T, what string, ch <-chan ClientInfo) ClientInfo {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(guard):
		t.Fatalf("no %s", what)
		return ClientInfo{}
	}
}

func TestHooksAndClients(t *testing.T) {
	cfg := testConfig(t)
	hooks := recordHooks(&cfg)
	s := startServer(t, cfg, nil)

	ws1 := dial(t, s, "/")
	c1 := next(t, "OnConnect", hooks.connect)
	if c1.ID == "" || c1.PID != 0 || c1.Initialized || c1.UserAgent != "claude-code/2.1.330 (cli)" {
		t.Errorf("OnConnect: %+v", c1)
	}
	initialize(t, ws1, 4242)
	if c := next(t, "OnIDEConnected", hooks.ideConnected); c.ID != c1.ID || c.PID != 4242 {
		t.Errorf("OnIDEConnected: %+v", c)
	}

	ws2 := dial(t, s, "/mcp")
	c2 := next(t, "OnConnect", hooks.connect)
	initialize(t, ws2, 5151)
	next(t, "OnIDEConnected", hooks.ideConnected)

	clients := s.Clients()
	if len(clients) != 2 || clients[0].ID != c1.ID || clients[1].ID != c2.ID {
		t.Fatalf("Clients() = %+v, want %s then %s", clients, c1.ID, c2.ID)
	}
	if c := clients[0]; c.PID != 4242 || !c.Initialized || c.ProtocolVersion != "2025-11-25" {
		t.Errorf("client 1: %+v", c)
	}

	if err := ws1.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
		t.Fatal(err)
	}
	expectClose(t, ws1, websocket.CloseNormalClosure, "") // the server echoes the code
	if c := next(t, "OnDisconnect", hooks.disconnect); c.ID != c1.ID || c.PID != 4242 {
		t.Errorf("OnDisconnect: %+v", c)
	}
	if clients := s.Clients(); len(clients) != 1 || clients[0].ID != c2.ID {
		t.Errorf("Clients() after a disconnect = %+v", clients)
	}
}

func TestHookPanicIsRecovered(t *testing.T) {
	cfg := testConfig(t)
	cfg.OnConnect = func(ClientInfo) { panic("hook bug") }
	s := startServer(t, cfg, nil)
	initialize(t, dial(t, s, "/"), 1)
}

func TestBroadcastAndNotify(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	var initialized []*websocket.Conn
	for i := 0; i < 3; i++ {
		ws := dial(t, s, "/")
		initialize(t, ws, 100+i)
		initialized = append(initialized, ws)
	}
	uninitialized := dial(t, s, "/")
	waitFor(t, "four clients", func() bool { return len(s.Clients()) == 4 })

	params := map[string]any{"text": "<sel> & co", "filePath": "/tmp/a.go"}
	if n := s.Broadcast("selection_changed", params); n != 3 {
		t.Errorf("Broadcast sent to %d clients, want 3", n)
	}
	want := `{"jsonrpc":"2.0","method":"selection_changed","params":{"filePath":"/tmp/a.go","text":"<sel> & co"}}`
	for i, ws := range initialized {
		if got := readText(t, ws); got != want {
			t.Errorf("client %d: %s", i, diff(want, got))
		}
	}
	// The uninitialized client got nothing: its ping reply comes first.
	if got := request(t, uninitialized, 9, "ping", ""); got != `{"jsonrpc":"2.0","id":9,"result":{}}` {
		t.Errorf("uninitialized client: %s", got)
	}

	// Notify reaches one client, initialized or not.
	var uninitID string
	for _, c := range s.Clients() {
		if !c.Initialized {
			uninitID = c.ID
		}
	}
	if err := s.Notify(uninitID, "at_mentioned", map[string]any{"filePath": "/tmp/a.go", "lineStart": 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := readText(t, uninitialized), `{"jsonrpc":"2.0","method":"at_mentioned","params":{"filePath":"/tmp/a.go","lineStart":1}}`; got != want {
		t.Error(diff(want, got))
	}
	if err := s.Notify("nobody", "x", nil); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("Notify(unknown) = %v, want ErrUnknownClient", err)
	}
	if err := s.Notify(uninitID, "x", make(chan int)); err == nil {
		t.Error("Notify with unencodable params: no error")
	}
	if n := s.Broadcast("x", make(chan int)); n != 0 {
		t.Errorf("Broadcast with unencodable params sent to %d", n)
	}
}

func TestCloseClient(t *testing.T) {
	cfg := testConfig(t)
	hooks := recordHooks(&cfg)
	s := startServer(t, cfg, nil)
	ws := dial(t, s, "/")
	c := next(t, "OnConnect", hooks.connect)
	initialize(t, ws, 77)

	for _, tt := range []struct {
		id     string
		code   int
		reason string
	}{
		{c.ID, 1005, ""},
		{c.ID, 999, ""},
		{c.ID, 5000, ""},
		{c.ID, 4001, strings.Repeat("x", 124)},
		{c.ID, 4001, "\xff"},
		{"nobody", 4001, ""},
	} {
		if err := s.CloseClient(tt.id, tt.code, tt.reason); err == nil {
			t.Errorf("CloseClient(%q, %d, %q): no error", tt.id, tt.code, tt.reason)
		}
	}

	const reason = "Another Claude Code session connected to this IDE"
	if err := s.CloseClient(c.ID, 4001, reason); err != nil {
		t.Fatal(err)
	}
	expectClose(t, ws, 4001, reason)
	if got := next(t, "OnDisconnect", hooks.disconnect); got.ID != c.ID || got.PID != 77 {
		t.Errorf("OnDisconnect: %+v", got)
	}
	if err := s.CloseClient(c.ID, 4001, reason); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("CloseClient after disconnect = %v, want ErrUnknownClient", err)
	}
}

func TestDisconnectCancelsRequests(t *testing.T) {
	done := make(chan error, 1)
	s := startServer(t, testConfig(t), func(s *Server) {
		err := s.RegisterTool(Tool{Name: "wait", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
			<-ctx.Done()
			done <- ctx.Err()
			return nil, ctx.Err()
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	ws := dial(t, s, "/")
	writeText(t, ws, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
	waitFor(t, "the call to start", func() bool {
		c := s.connections()
		if len(c) == 0 {
			return false
		}
		c[0].mu.Lock()
		defer c[0].mu.Unlock()
		return len(c[0].inflight) == 1
	})
	_ = ws.Close() // the peer vanishes without a close frame
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ctx.Err() = %v", err)
		}
	case <-time.After(guard):
		t.Fatal("the call was not cancelled")
	}
}

func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := testConfig(t)
	hooks := recordHooks(&cfg)
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	registerFakes(t, s)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	lock := s.LockPath()
	if _, err := os.Stat(lock); err != nil {
		t.Fatal(err)
	}

	var clients []*websocket.Conn
	for i := 0; i < 3; i++ {
		ws := dial(t, s, "/")
		initialize(t, ws, 10+i)
		clients = append(clients, ws)
	}
	// A call in flight must not hold Close up.
	writeText(t, clients[0], `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"block"}}`)

	var wg sync.WaitGroup
	closes := make(chan string, len(clients))
	for _, ws := range clients {
		wg.Add(1)
		go func(ws *websocket.Conn) {
			defer wg.Done()
			_ = ws.SetReadDeadline(time.Now().Add(guard))
			_, _, err := ws.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				closes <- fmt.Sprint(err)
				return
			}
			closes <- fmt.Sprintf("%d %s", ce.Code, ce.Text)
		}(ws)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	close(closes)
	for got := range closes {
		if want := "1001 server shutting down"; got != want {
			t.Errorf("client saw %q, want %q", got, want)
		}
	}
	for range clients {
		next(t, "OnDisconnect", hooks.disconnect)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if err := s.SetWorkspaceFolders(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SetWorkspaceFolders after Close = %v, want ErrClosed", err)
	}
	if n := s.Broadcast("x", nil); n != 0 {
		t.Errorf("Broadcast after Close sent to %d", n)
	}
	for _, ws := range clients {
		_ = ws.Close()
	}
	// Close has waited for every goroutine of the server; the runtime
	// needs a moment to retire net/http's own.
	waitFor(t, fmt.Sprintf("goroutines to settle to %d", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
}

func TestCloseBeforeStart(t *testing.T) {
	s, err := NewServer(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestStartTwice(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start: no error")
	}
}

func TestStartWithCancelledContext(t *testing.T) {
	s, err := NewServer(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Start(ctx); err == nil {
		t.Fatal("Start with a cancelled context: no error")
	}
	if s.LockPath() != "" || s.Port() != 0 {
		t.Errorf("after a failed Start: lock %q, port %d", s.LockPath(), s.Port())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestTokenIsNeverLogged(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(t)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := startServer(t, cfg, func(s *Server) { s.closeGrace = 10 * time.Millisecond }) // the client will not answer Close
	token := s.Token()

	// Refused attempts whose header contains the token.
	for _, bad := range []string{token + "x", "x" + token, token + token} {
		h := authHeader(s)
		h.Set(AuthHeader, bad)
		if ws, _, err := websocket.DefaultDialer.Dial(wsURL(s, "/"), h); err == nil {
			_ = ws.Close()
			t.Fatalf("dial with token %q succeeded", bad)
		}
	}
	// A session that goes through every path that logs.
	ws := dial(t, s, "/")
	initialize(t, ws, 42)
	for i, call := range []string{"echo", "fail", "failrpc", "panic", "nope"} {
		request(t, ws, 10+i, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":{}}`, call))
	}
	writeText(t, ws, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	request(t, ws, 20, "nope", "")
	if err := s.SetWorkspaceFolders([]string{"/tmp"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	out := logs.String()
	for _, want := range []string{"listening", "refused connection", "client connected", "panic in handler", "server closed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs lack %q", want)
		}
	}
	if strings.Contains(out, token) {
		t.Errorf("the token appears in the logs:\n%s", out)
	}
}
