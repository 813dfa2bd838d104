package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// guard bounds every wait in the tests. It is a failure guard, never a
// timing assertion.
const guard = 60 * time.Second

func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		ConfigDir:        t.TempDir(),
		PID:              os.Getpid(),
		IDEName:          "Neovim (test)",
		WorkspaceFolders: []string{"/home/user/project"},
		ServerName:       "nvim-claude",
		ServerVersion:    "1.2.3",
	}
}

// startServer creates a server with the fake tools and methods, lets setup
// adjust it, starts it and closes it when the test ends.
func startServer(t *testing.T, cfg Config, setup func(*Server)) *Server {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	registerFakes(t, s)
	if setup != nil {
		setup(s)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// registerFakes registers tools and methods that exercise every path of a
// handler.
func registerFakes(t *testing.T, s *Server) {
	t.Helper()
	tools := []Tool{
		{
			Name:        "echo",
			Description: "Echoes its arguments.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
			Handler: func(_ context.Context, req *ToolRequest) (*ToolResult, error) {
				return JSONResult(map[string]any{
					"arguments":     req.Arguments,
					"progressToken": req.ProgressToken,
					"pid":           req.Client.PID,
				})
			},
		},
		{Name: "block", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{Name: "panic", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			panic("boom")
		}},
		{Name: "fail", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, fmt.Errorf("open /nope: %w", fs.ErrNotExist)
		}},
		{Name: "failrpc", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, fmt.Errorf("checking: %w", InvalidParams("filePath is required"))
		}},
		{Name: "iserror", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return ErrorResult("Document not open: %s", "/tmp/x.go"), nil
		}},
		{Name: "empty", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return TextResult(""), nil
		}},
		{Name: "image", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return &ToolResult{Content: []Content{
				{Type: "text", Text: "a <b> & c"},
				{Type: "image", Data: "aGk=", MimeType: "image/png"},
			}}, nil
		}},
		{Name: "nothing", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
			return nil, nil
		}},
	}
	for _, tool := range tools {
		if err := s.RegisterTool(tool); err != nil {
			t.Fatalf("RegisterTool(%s): %v", tool.Name, err)
		}
	}
	s.HandleMethod("readFile", func(_ context.Context, req *MethodRequest) (any, error) {
		var p struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Path == "" {
			return nil, InvalidParams("path is required")
		}
		return map[string]string{"path": p.Path, "contents": "<html> & co"}, nil
	})
	s.HandleMethod("boom", func(context.Context, *MethodRequest) (any, error) {
		return nil, errors.New("disk on fire")
	})
	s.HandleMethod("void", func(context.Context, *MethodRequest) (any, error) {
		return nil, nil
	})
}

func wsURL(s *Server, path string) string {
	return fmt.Sprintf("ws://127.0.0.1:%d%s", s.Port(), path)
}

func authHeader(s *Server) http.Header {
	return http.Header{
		AuthHeader:   {s.Token()},
		"User-Agent": {"claude-code/2.1.330 (cli)"},
	}
}

// dial connects to s as the CLI does and closes the connection when the
// test ends.
func dial(t *testing.T, s *Server, path string) *websocket.Conn {
	t.Helper()
	ws, err := dialWith(t, websocket.Dialer{Subprotocols: []string{"mcp"}}, s, path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return ws
}

func dialWith(t *testing.T, d websocket.Dialer, s *Server, path string) (*websocket.Conn, error) {
	t.Helper()
	d.HandshakeTimeout = guard
	ws, resp, err := d.Dial(wsURL(s, path), authHeader(s))
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("%w (HTTP %s)", err, resp.Status)
		}
		return nil, err
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws, nil
}

func writeText(t *testing.T, ws *websocket.Conn, text string) {
	t.Helper()
	if err := ws.SetWriteDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(text)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readText reads the next data message, which must be text.
func readText(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	if err := ws.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	typ, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.TextMessage {
		t.Fatalf("read: message type %d, want text", typ)
	}
	return string(data)
}

// expectClose reads the next message, which must be the server's close
// frame with code and reason.
func expectClose(t *testing.T, ws *websocket.Conn, code int, reason string) {
	t.Helper()
	if err := ws.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	_, data, err := ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("read %q, %v; want close %d", data, err, code)
	}
	if ce.Code != code || ce.Text != reason {
		t.Fatalf("close %d %q, want %d %q", ce.Code, ce.Text, code, reason)
	}
}

// request sends a request and returns the next message, its reply.
func request(t *testing.T, ws *websocket.Conn, id int, method, params string) string {
	t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
	if params != "" {
		msg += `,"params":` + params
	}
	writeText(t, ws, msg+"}")
	return readText(t, ws)
}

// initialize runs the CLI's handshake: initialize, initialized and, if pid
// is not 0, ide_connected. A ping round trip then ensures the server has
// read the notifications.
func initialize(t *testing.T, ws *websocket.Conn, pid int) {
	t.Helper()
	reply := request(t, ws, 0, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}`)
	if !strings.Contains(reply, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize reply %s", reply)
	}
	writeText(t, ws, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if pid != 0 {
		writeText(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":%d}}`, pid))
	}
	if got, want := request(t, ws, 1, "ping", ""), `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
		t.Fatalf("ping reply %s, want %s", got, want)
	}
}

// waitFor polls cond until it holds; the limit is a failure guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// diff describes where got departs from want.
func diff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("first difference at byte %d\nwant: %s\n got: %s", i, want, got)
}
