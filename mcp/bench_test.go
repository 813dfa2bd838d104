package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

const typicalToolCall = `{"method":"tools/call","params":{"name":"getDiagnostics","arguments":{"uri":"file:///home/user/project/src/main.go"},"_meta":{"claudecode/toolUseId":"toolu_01ABCDEF","progressToken":12}},"jsonrpc":"2.0","id":12}`

// fiveMB returns about 5 MB of source-like text, quotes and newlines
// included, so that JSON escaping does real work.
func fiveMB() string {
	line := "\tfmt.Printf(\"%s: <%d> & done\\n\", name, n) // ✻ a line of code\n"
	return strings.Repeat(line, 5<<20/len(line))
}

func openDiffMessage(b *testing.B) []byte {
	b.Helper()
	msg, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      7,
		"method":  "tools/call",
		"params": map[string]any{
			"name": "openDiff",
			"arguments": map[string]string{
				"old_file_path":     "/home/user/project/big.go",
				"new_file_path":     "/home/user/project/big.go",
				"new_file_contents": fiveMB(),
				"tab_name":          "✻ [Claude Code] big.go (6c8f53) ⧉",
			},
			"_meta": map[string]any{"progressToken": 7},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return msg
}

func benchmarkDecode(b *testing.B, msg []byte) {
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := decodeMessage(msg)
		if err != nil || m.kind != kindRequest {
			b.Fatal(err)
		}
		if _, err := decodeCallParams(m.params); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeToolCall(b *testing.B) { benchmarkDecode(b, []byte(typicalToolCall)) }

func BenchmarkDecodeOpenDiff5MB(b *testing.B) { benchmarkDecode(b, openDiffMessage(b)) }

func benchmarkEncode(b *testing.B, res *ToolResult) {
	id := json.RawMessage(`7`)
	n := 0
	for _, c := range res.Content {
		n += len(c.Text)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := encodeResult(id, toolReply{res}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeToolResult(b *testing.B) {
	benchmarkEncode(b, TextResult(`[{"uri":"file:///home/user/project/src/main.go","diagnostics":[{"message":"undefined: x","severity":"Error","range":{"start":{"line":3,"character":1},"end":{"line":3,"character":2}},"source":"compiler","code":"UndeclaredName"}]}]`))
}

func BenchmarkEncodeFileSaved5MB(b *testing.B) {
	benchmarkEncode(b, &ToolResult{Content: []Content{{Type: "text", Text: "FILE_SAVED"}, {Type: "text", Text: fiveMB()}}})
}

func BenchmarkEncodeNotification(b *testing.B) {
	params := map[string]any{
		"text": "selected text", "filePath": "/home/user/project/src/main.go", "fileUrl": "file:///home/user/project/src/main.go",
		"selection": map[string]any{"start": map[string]int{"line": 3, "character": 0}, "end": map[string]int{"line": 5, "character": 7}, "isEmpty": false},
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := encodeNotification("selection_changed", params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip measures a whole request over a real WebSocket
// connection: the read loop, the dispatch, the handler goroutine and the
// writer, with a small tools/call and with an openDiff-sized one.
func BenchmarkRoundTrip(b *testing.B) {
	small := []byte(typicalToolCall)
	for _, bc := range []struct {
		name string
		msg  func(*testing.B) []byte
	}{
		{"ToolCall", func(*testing.B) []byte { return small }},
		{"OpenDiff5MB", openDiffMessage},
	} {
		b.Run(bc.name, func(b *testing.B) {
			msg := bc.msg(b)
			ws := benchConn(b)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
					b.Fatal(err)
				}
				if _, _, err := ws.ReadMessage(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchConn starts a Server whose getDiagnostics and openDiff tools answer
// at once, and dials it.
func benchConn(b *testing.B) *websocket.Conn {
	b.Helper()
	s, err := NewServer(Config{ConfigDir: b.TempDir(), PID: os.Getpid()})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"getDiagnostics", "openDiff"} {
		err := s.RegisterTool(Tool{Name: name, Handler: func(_ context.Context, req *ToolRequest) (*ToolResult, error) {
			if _, _, err := req.StringArg("tab_name"); err != nil {
				return nil, err
			}
			return TextResult("[]"), nil
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ws, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/", s.Port()), http.Header{AuthHeader: {s.Token()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	return ws
}

// foldersFrame is the request of internal/bench's scenario 11: a
// tools/call of a tool answered without Neovim (getWorkspaceFolders).
func foldersFrame(id int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"getWorkspaceFolders","arguments":{},"_meta":{"progressToken":` + strconv.Itoa(id) + `}}}`)
}

// BenchmarkRoundTripConcurrent is scenario 11's concurrent row in one
// process: 8 clients, each with one call outstanding, against a Server
// whose tool returns a prepared result, and (Echo) against a bare
// gorilla/websocket echo server, the floor the row is compared with. The
// clients share the CPUs with the server, as they do in the scenario.
func BenchmarkRoundTripConcurrent(b *testing.B) {
	const clients = 8
	folders := TextResult(`{"success":true,"folders":[{"name":"project","uri":"file:///home/user/project","path":"/home/user/project"}],"rootPath":"/home/user/project"}`)
	for _, bc := range []struct {
		name string
		dial func(*testing.B) *websocket.Conn
	}{
		{"Server", func(b *testing.B) *websocket.Conn {
			return benchDial(b, benchServer(b, Tool{Name: "getWorkspaceFolders", Handler: func(context.Context, *ToolRequest) (*ToolResult, error) {
				return folders, nil
			}}))
		}},
		{"Echo", func(b *testing.B) *websocket.Conn { return benchDial(b, benchEcho(b)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			conns := make([]*websocket.Conn, clients)
			for i := range conns {
				conns[i] = bc.dial(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make([]error, clients)
			for i, ws := range conns {
				n := b.N / clients
				if i < b.N%clients {
					n++
				}
				wg.Add(1)
				go func(i int, ws *websocket.Conn, n int) {
					defer wg.Done()
					for j := 0; j < n; j++ {
						if err := ws.WriteMessage(websocket.TextMessage, foldersFrame(j)); err != nil {
							errs[i] = err
							return
						}
						if _, _, err := ws.ReadMessage(); err != nil {
							errs[i] = err
							return
						}
					}
				}(i, ws, n)
			}
			wg.Wait()
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchServer starts a Server with tool and returns the URL to dial.
func benchServer(b *testing.B, tool Tool) string {
	b.Helper()
	s, err := NewServer(Config{ConfigDir: b.TempDir(), PID: os.Getpid()})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.RegisterTool(tool); err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return fmt.Sprintf("ws://127.0.0.1:%d/?%s", s.Port(), s.Token())
}

// benchEcho starts a bare gorilla/websocket echo server, as
// internal/bench/echo is, and returns the URL to dial.
func benchEcho(b *testing.B) string {
	b.Helper()
	up := websocket.Upgrader{Subprotocols: []string{"mcp"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/?"
}

// benchDial dials url; a token after its "?" goes in the auth header.
func benchDial(b *testing.B, url string) *websocket.Conn {
	b.Helper()
	url, token, _ := strings.Cut(url, "?")
	h := http.Header{}
	if token != "" {
		h.Set(AuthHeader, token)
	}
	ws, _, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	return ws
}
