package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestBadFramesClose(t *testing.T) {
	tests := []struct {
		name   string
		typ    int
		data   []byte
		code   int
		reason string
	}{
		{"over the read limit", websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 4096) + `"}`),
			websocket.CloseMessageTooBig, "message too big"},
		{"invalid UTF-8", websocket.TextMessage, []byte("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}"),
			websocket.CloseInvalidFramePayloadData, "invalid UTF-8"},
		{"binary", websocket.BinaryMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`),
			websocket.CloseUnsupportedData, "binary messages are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, testConfig(t), func(s *Server) { s.readLimit = 1024 })
			ws := dial(t, s, "/")
			initialize(t, ws, 0)
			if err := ws.WriteMessage(tt.typ, tt.data); err != nil {
				t.Fatal(err)
			}
			// Frames sent after the offending one are not served.
			writeText(t, ws, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			expectClose(t, ws, tt.code, tt.reason)
			waitFor(t, "the server to drop the client", func() bool { return len(s.Clients()) == 0 })
		})
	}
}

func TestMessageAtTheReadLimit(t *testing.T) {
	s := startServer(t, testConfig(t), func(s *Server) { s.readLimit = 1024 })
	ws := dial(t, s, "/")
	prefix, suffix := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, `"}}`
	msg := prefix + strings.Repeat("a", 1024-len(prefix)-len(suffix)) + suffix
	writeText(t, ws, msg)
	if got, want := readText(t, ws), `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
		t.Error(diff(want, got))
	}
}

func TestFragmentedMessage(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	// A client write buffer far smaller than the message makes gorilla send
	// it as many frames.
	ws, err := dialWith(t, websocket.Dialer{WriteBufferSize: 64}, s, "/")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("✻ fragment ", 500)
	w, err := ws.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, text)
	for i := 0; i < len(msg); i += 100 { // the frames split runes too
		if _, err := w.Write([]byte(msg[i:min(i+100, len(msg))])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, ws); !strings.Contains(got, strings.Repeat("✻ fragment ", 10)) || !strings.Contains(got, `"id":1,"result"`) {
		t.Errorf("reply %.200s…", got)
	}
}

func TestClientFlood(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	const n = 10000
	for i := 0; i < n; i++ {
		writeText(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d}}`, i))
	}
	if got, want := request(t, ws, n, "ping", ""), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, n); got != want {
		t.Error(diff(want, got))
	}
}

func TestBroadcastFlood(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	const n = 10000
	got := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			_ = ws.SetReadDeadline(time.Now().Add(guard))
			_, data, err := ws.ReadMessage()
			if err != nil {
				got <- err
				return
			}
			if want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"selection_changed","params":{"n":%d}}`, i); string(data) != want {
				got <- fmt.Errorf("message %d: %s", i, diff(want, string(data)))
				return
			}
		}
		got <- nil
	}()
	for i := 0; i < n; i++ {
		if sent := s.Broadcast("selection_changed", map[string]int{"n": i}); sent != 1 {
			t.Fatalf("broadcast %d sent to %d clients, want 1", i, sent)
		}
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestSlowClientIsDropped(t *testing.T) {
	s := startServer(t, testConfig(t), func(s *Server) {
		s.queueSize = 4
		s.queueWait = 50 * time.Millisecond
	})
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	// The client stops reading: socket buffers fill, then the queue; the
	// server must drop the client instead of blocking Broadcast for good.
	big := map[string]string{"text": strings.Repeat("x", 1<<20)}
	for i := 0; s.Broadcast("selection_changed", big) == 1; i++ {
		if i == 1000 {
			t.Fatal("1000 MiB queued to a client that does not read")
		}
	}
	waitFor(t, "the slow client to be dropped", func() bool { return len(s.Clients()) == 0 })
}

// fakeTicker replaces the keepalive ticker of a server: each send on the
// returned channel is a tick, received by the writer before the send
// returns.
func fakeTicker(s *Server) chan<- time.Time {
	ticks := make(chan time.Time)
	s.newTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	return ticks
}

// silentPeer dials s with a client that never answers pings.
func silentPeer(t *testing.T, s *Server) *websocket.Conn {
	t.Helper()
	ws := dial(t, s, "/")
	ws.SetPingHandler(func(string) error { return nil })
	return ws
}

func TestKeepaliveClosesSilentPeer(t *testing.T) {
	var ticks chan<- time.Time
	s := startServer(t, testConfig(t), func(s *Server) { ticks = fakeTicker(s) })
	ws := silentPeer(t, s)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.Local)
	iv := s.cfg.PingInterval
	ticks <- t0             // ping
	ticks <- t0.Add(iv)     // no answer for one interval: ping again
	ticks <- t0.Add(2 * iv) // none for two: dead
	expectClose(t, ws, websocket.CloseGoingAway, "keepalive timeout")
}

func TestKeepaliveSurvivesSleep(t *testing.T) {
	var ticks chan<- time.Time
	s := startServer(t, testConfig(t), func(s *Server) { ticks = fakeTicker(s) })
	ws := silentPeer(t, s)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.Local)
	iv := s.cfg.PingInterval
	ticks <- t0
	ticks <- t0.Add(iv)
	// The laptop slept for 8 hours: the next tick comes one monotonic
	// interval later but 8 wall-clock hours later.
	resumed := t0.Add(iv + 8*time.Hour)
	ticks <- resumed
	ticks <- resumed.Add(iv)
	if got, want := request(t, ws, 1, "ping", ""), `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
		t.Fatal(diff(want, got))
	}
	if len(s.Clients()) != 1 {
		t.Fatal("client dropped")
	}
}

func TestKeepaliveKeepsAnsweringPeer(t *testing.T) {
	var ticks chan<- time.Time
	s := startServer(t, testConfig(t), func(s *Server) { ticks = fakeTicker(s) })
	ws := dial(t, s, "/")
	pings := make(chan struct{}, 1)
	ws.SetPingHandler(func(data string) error {
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(guard))
		pings <- struct{}{}
		return err
	})
	replies := make(chan string, 1)
	go func() {
		defer close(replies)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			replies <- string(data)
		}
	}()
	waitFor(t, "the connection", func() bool { return len(s.connections()) == 1 })
	c := s.connections()[0]
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.Local)
	for i := 0; i < 10; i++ {
		ticks <- t0.Add(time.Duration(i) * s.cfg.PingInterval)
		select {
		case <-pings: // the writer has taken the liveness sample, then pinged
		case <-time.After(guard):
			t.Fatalf("tick %d: no ping", i)
		}
		waitFor(t, "the pong", c.fr.(*wsFramer).seen.Load)
	}
	writeText(t, ws, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	select {
	case got := <-replies:
		if want := `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
			t.Fatal(diff(want, got))
		}
	case <-time.After(guard):
		t.Fatal("no reply")
	}
}

// TestReadingMovesOnFromASlowRequest runs a request that blocks in the
// read loop (requests run there, inline, at first): the messages behind it
// are still read and answered, and its own reply comes once it returns.
func TestReadingMovesOnFromASlowRequest(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, testConfig(t), func(s *Server) {
		err := s.RegisterTool(Tool{Name: "gate", Handler: func(ctx context.Context, _ *ToolRequest) (*ToolResult, error) {
			select {
			case <-release:
				return TextResult("released"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	writeText(t, ws, `{"jsonrpc":"2.0","id":"gated","method":"tools/call","params":{"name":"gate"}}`)
	for i := 1; i <= 10; i++ {
		if got, want := request(t, ws, i, "ping", ""), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i); got != want {
			t.Fatalf("ping %d behind the blocked call: %s", i, diff(want, got))
		}
	}
	close(release)
	if got, want := readText(t, ws), `{"jsonrpc":"2.0","id":"gated","result":{"content":[{"type":"text","text":"released"}]}}`; got != want {
		t.Fatal(diff(want, got))
	}
}

// TestHandOffRaces hands every request's read loop to a new goroutine
// the moment it starts (inlineFor 0), so that the hand-off races the end
// of each request, with many requests in flight at once (under -race
// this checks that one goroutine at a time reads): each is answered once
// and the connection leaves no goroutine behind.
func TestHandOffRaces(t *testing.T) {
	s := startServer(t, testConfig(t), func(s *Server) { s.inlineFor = 0 })
	before := runtime.NumGoroutine()
	ws := dial(t, s, "/")
	initialize(t, ws, 0)
	const n, batch = 2000, 50
	for i := 0; i < n; i += batch {
		for j := i; j < i+batch; j++ {
			writeText(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t%d"}}}`, j, j))
		}
		seen := map[int]bool{}
		for j := i; j < i+batch; j++ {
			var reply struct {
				ID     int `json:"id"`
				Result struct {
					Content []Content `json:"content"`
				} `json:"result"`
			}
			got := readText(t, ws)
			if err := json.Unmarshal([]byte(got), &reply); err != nil || len(reply.Result.Content) != 1 ||
				!strings.Contains(reply.Result.Content[0].Text, fmt.Sprintf(`"t%d"`, reply.ID)) {
				t.Fatalf("reply %s", got)
			}
			if seen[reply.ID] || reply.ID < i || reply.ID >= i+batch {
				t.Fatalf("reply for id %d, in the batch from %d", reply.ID, i)
			}
			seen[reply.ID] = true
		}
	}
	_ = ws.Close()
	waitFor(t, "the server to drop the client", func() bool { return len(s.Clients()) == 0 })
	waitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}
