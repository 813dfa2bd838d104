package mcp

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

var update = flag.Bool("update", false, "rewrite the expected frames of the transcripts")

// A transcript is a script, one message a line:
//
//	# comment
//	-> message the client sends
//	<- message the server must send next, byte for byte
//
// Every transcript runs over each of the engine's framers (transports),
// against a real Server with the fake tools: over a real WebSocket, and
// over a unix socket framed in lines by the same engine serving the same
// Server. After the last line the runner pings: its reply must be the next
// message, so no stray message goes unnoticed.
//
// The scripts live in testdata/transcripts/*.txt (TestTranscripts) and,
// for those that need a server set up for them, in engineTranscripts
// (TestEngineTranscripts). With -update, the content of the "<-" lines of
// the files is rewritten from what the server sent over the WebSocket;
// their number and place stay as written.

// peer is the client end of one transport.
type peer interface {
	send(t *testing.T, msg string)
	recv(t *testing.T) string
}

// transports are the framers every transcript runs over.
var transports = []struct {
	name    string
	connect func(t *testing.T, s *Server) peer
}{
	{"websocket", func(t *testing.T, s *Server) peer { return wsPeer{dial(t, s, "/")} }},
	{"lines", func(t *testing.T, s *Server) peer { return serveLines(t, s) }},
}

type wsPeer struct{ ws *websocket.Conn }

func (p wsPeer) send(t *testing.T, msg string) { t.Helper(); writeText(t, p.ws, msg) }
func (p wsPeer) recv(t *testing.T) string      { t.Helper(); return readText(t, p.ws) }

// linePeer is the client end of a unix socket whose server end a
// lineFramer frames for a conn of the test's Server.
type linePeer struct {
	c net.Conn
	r *bufio.Reader
}

func (p linePeer) send(t *testing.T, msg string) {
	t.Helper()
	if strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("a line transport cannot carry %q", msg)
	}
	_ = p.c.SetWriteDeadline(time.Now().Add(guard))
	if _, err := p.c.Write([]byte(msg + "\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func (p linePeer) recv(t *testing.T) string {
	t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(guard))
	line, err := p.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

// serveLines serves one connection of s over a unix socket with the line
// framer, as a StreamServer does, and returns its client end. The
// connection ends with the test; the test waits for it.
func serveLines(t *testing.T, s *Server) linePeer {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "lines.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(s.svc, ClientInfo{ID: "lines", ConnectedAt: time.Now()})
	c.fr = newLineFramer(bufio.NewReader(server), server, server, int(s.readLimit), s.writeWait)
	done := make(chan error, 1)
	go func() { done <- c.serve(s.ctx) }()
	t.Cleanup(func() {
		_ = client.Close()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, errInputDone) {
				t.Errorf("line connection: %v", err)
			}
		case <-time.After(guard):
			t.Error("the line connection did not end")
		}
	})
	return linePeer{c: client, r: bufio.NewReader(client)}
}

const (
	sendPrefix   = "-> "
	expectPrefix = "<- "
	endPing      = `{"jsonrpc":"2.0","id":"transcript-end","method":"ping"}`
	endPong      = `{"jsonrpc":"2.0","id":"transcript-end","result":{}}`
)

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		for i, tr := range transports {
			t.Run(name+"/"+tr.name, func(t *testing.T) {
				s := startServer(t, testConfig(t), nil)
				got := runScript(t, file, lines, tr.connect(t, s), *update && i == 0)
				if *update && i == 0 && strings.Join(got, "\n") != string(data) {
					if err := os.WriteFile(file, []byte(strings.Join(got, "\n")), 0o644); err != nil {
						t.Fatal(err)
					}
					t.Logf("updated %s", file)
				}
			})
		}
	}
}

// runScript plays a transcript's lines (from where) on p and returns them
// with the "<-" lines as received when rewrite is set, else reports every
// difference.
func runScript(t *testing.T, where string, lines []string, p peer, rewrite bool) []string {
	t.Helper()
	out := append([]string(nil), lines...)
	for i, line := range lines {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, sendPrefix):
			p.send(t, strings.TrimPrefix(line, sendPrefix))
		case strings.HasPrefix(line, expectPrefix) || line == strings.TrimSpace(expectPrefix):
			got := p.recv(t)
			want := strings.TrimPrefix(line, expectPrefix)
			if got == want {
				continue
			}
			if rewrite {
				out[i] = expectPrefix + got
				continue
			}
			t.Errorf("%s:%d: %s", where, i+1, diff(want, got))
		default:
			t.Fatalf("%s:%d: line starts with neither %q, %q nor #", where, i+1, sendPrefix, expectPrefix)
		}
	}
	p.send(t, endPing)
	if got := p.recv(t); got != endPong {
		t.Errorf("%s: after the transcript: %s", where, diff(endPong, got))
	}
	return out
}

// cancelTools registers "hold", which runs until its context is
// cancelled, and "watch", which answers once n hold calls (its argument)
// have seen their context cancelled, or after a guard with the count so
// far. A cancellation that does not reach the handler's context shows in
// watch's answer.
func cancelTools(t *testing.T, s *Server) {
	t.Helper()
	var cancelled atomic.Int64
	seen := make(chan struct{}, 1024)
	tools := []Tool{
		{Name: "hold", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
			<-ctx.Done()
			cancelled.Add(1)
			seen <- struct{}{}
			return nil, ctx.Err()
		}},
		{Name: "watch", Handler: func(ctx context.Context, req *ToolRequest) (*ToolResult, error) {
			raw, err := req.Arg("n")
			if err != nil {
				return nil, err
			}
			var n int64
			if _, err := fmt.Sscan(string(raw), &n); err != nil {
				return nil, err
			}
			timeout := time.After(guard / 4)
			for cancelled.Load() < n {
				select {
				case <-seen:
				case <-timeout:
					return TextResult(fmt.Sprintf("%d hold call(s) cancelled", cancelled.Load())), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return TextResult(fmt.Sprintf("%d hold call(s) cancelled", cancelled.Load())), nil
		}},
	}
	for _, tool := range tools {
		if err := s.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
}

// engineTranscripts need a server set up for them.
var engineTranscripts = []struct {
	name   string
	setup  func(*testing.T, *Server)
	script string
}{
	{
		name:  "cancelled",
		setup: cancelTools,
		script: `
# notifications/cancelled cancels the call's context; the call gets no reply.
-> {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"hold"}}
-> {"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"hold"}}
-> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"watch","arguments":{"n":1}}}
# An unknown id cancels nothing.
-> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}}
-> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"User aborted"}}
<- {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"1 hold call(s) cancelled"}]}}
-> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}
-> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"watch","arguments":{"n":2}}}
<- {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"2 hold call(s) cancelled"}]}}
# A cancelled id is free again.
-> {"jsonrpc":"2.0","id":"a","method":"ping"}
<- {"jsonrpc":"2.0","id":"a","result":{}}`,
	},
	{
		name: "inflight cap",
		setup: func(t *testing.T, s *Server) {
			cancelTools(t, s)
			s.maxInflight = 2
		},
		script: `
# Two requests may run at once: a third is refused, whatever its method.
-> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold"}}
-> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"watch","arguments":{"n":1}}}
-> {"jsonrpc":"2.0","id":3,"method":"ping"}
<- {"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Server busy: 2 requests are already running on this connection; wait for some to finish"}}
-> {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hold"}}
<- {"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"Server busy: 2 requests are already running on this connection; wait for some to finish"}}
# The refused calls never ran: cancelling one does nothing.
-> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}
-> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}
<- {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"1 hold call(s) cancelled"}]}}
# watch's slot was freed before its reply was sent.
-> {"jsonrpc":"2.0","id":5,"method":"ping"}
<- {"jsonrpc":"2.0","id":5,"result":{}}`,
	},
	{
		name: "a panic is an internal error",
		script: `
-> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panic"}}
<- {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}
-> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"panic"}}
<- {"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}
# The connection lives on, and so do the requests running beside the panic.
-> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"still":"alive"}}}
<- {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"arguments\":{\"still\":\"alive\"},\"pid\":0,\"progressToken\":null}"}]}}`,
	},
	{
		name: "the lifecycle and the tools",
		script: `
-> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}
<- {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"nvim-claude","version":"1.2.3"}}}
-> {"jsonrpc":"2.0","method":"notifications/initialized"}
-> {"jsonrpc":"2.0","method":"ide_connected","params":{"pid":77}}
-> {"jsonrpc":"2.0","id":1,"method":"tools/list"}
<- {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","description":"Echoes its arguments.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}},{"name":"block","inputSchema":{"type":"object","properties":{}}},{"name":"panic","inputSchema":{"type":"object","properties":{}}},{"name":"fail","inputSchema":{"type":"object","properties":{}}},{"name":"failrpc","inputSchema":{"type":"object","properties":{}}},{"name":"iserror","inputSchema":{"type":"object","properties":{}}},{"name":"empty","inputSchema":{"type":"object","properties":{}}},{"name":"image","inputSchema":{"type":"object","properties":{}}},{"name":"nothing","inputSchema":{"type":"object","properties":{}}}]}}
-> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
<- {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"arguments\":{\"text\":\"hi\"},\"pid\":77,\"progressToken\":null}"}]}}
-> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"iserror"}}
<- {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Document not open: /tmp/x.go"}],"isError":true}}
-> {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail"}}
<- {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"open /nope: file does not exist"}],"isError":true}}
-> {"jsonrpc":"2.0","id":5,"method":"no/such/method"}
<- {"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found: no/such/method"}}
-> {"jsonrpc":"2.0","id":6,"method":"ping"
<- {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}
-> {"jsonrpc":"1.0","id":7,"method":"ping"}
<- {"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request: jsonrpc must be \"2.0\""}}
-> {"jsonrpc":"2.0","id":8,"method":"ping"}
<- {"jsonrpc":"2.0","id":8,"result":{}}`,
	},
}

func TestEngineTranscripts(t *testing.T) {
	for _, tc := range engineTranscripts {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr.name, func(t *testing.T) {
				var setup func(*Server)
				if tc.setup != nil {
					setup = func(s *Server) { tc.setup(t, s) }
				}
				s := startServer(t, testConfig(t), setup)
				runScript(t, tc.name, strings.Split(strings.TrimPrefix(tc.script, "\n"), "\n"), tr.connect(t, s), false)
			})
		}
	}
}
