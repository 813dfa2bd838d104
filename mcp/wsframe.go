package mcp

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// wsFramer frames messages as WebSocket text messages (gorilla/websocket),
// with the transport's control plane: pongs to the peer's pings, pings of
// its own on a timer (heartbeat), and the close handshake.
type wsFramer struct {
	ws         *websocket.Conn
	link       link
	log        *slog.Logger
	readLimit  int64
	writeWait  time.Duration
	closeGrace time.Duration

	ka   keepalive
	seen atomic.Bool // the peer sent something since the last heartbeat

	scratch []byte // readMessage's first chunk, reused by read
}

// wsOptions are a wsFramer's limits and timeouts.
type wsOptions struct {
	readLimit    int64         // the largest message accepted
	writeWait    time.Duration // bounds one write
	closeGrace   time.Duration // how long the peer has to answer our close frame
	pingInterval time.Duration // the heartbeat
}

// newWSFramer frames ws for the connection l; it installs the ping, pong
// and close handlers, which run inside read.
func newWSFramer(ws *websocket.Conn, l link, log *slog.Logger, o wsOptions) *wsFramer {
	f := &wsFramer{
		ws:         ws,
		link:       l,
		log:        log,
		readLimit:  o.readLimit,
		writeWait:  o.writeWait,
		closeGrace: o.closeGrace,
		ka:         keepalive{interval: o.pingInterval},
		scratch:    make([]byte, readChunk),
	}
	f.seen.Store(true) // the handshake itself
	ws.SetPingHandler(func(data string) error {
		f.seen.Store(true)
		l.queueControl(websocket.PongMessage, []byte(data)) // dropped when full: the peer pings again
		return nil
	})
	ws.SetPongHandler(func(string) error {
		f.seen.Store(true)
		return nil
	})
	ws.SetCloseHandler(func(code int, _ string) error {
		l.requestClose(code, "") // echo the peer's code, through the writer
		return nil
	})
	return f
}

func (f *wsFramer) read(context.Context) ([]byte, error) {
	for {
		typ, r, err := f.ws.NextReader()
		if err != nil {
			return nil, err
		}
		f.seen.Store(true)
		if f.link.isClosing() {
			continue // waiting for the peer's close frame; NextReader skips the rest
		}
		if typ != websocket.TextMessage {
			return nil, &frameError{code: websocket.CloseUnsupportedData, reason: "binary messages are not supported"}
		}
		data, err := readMessage(r, f.readLimit+1, f.scratch)
		switch {
		case err != nil:
			return nil, err
		case int64(len(data)) > f.readLimit:
			return nil, &frameError{code: websocket.CloseMessageTooBig, reason: "message too big"}
		case !utf8.Valid(data):
			return nil, &frameError{code: websocket.CloseInvalidFramePayloadData, reason: "invalid UTF-8"}
		}
		return data, nil
	}
}

// deadline is now plus d, or ctx's deadline if that comes first.
func deadline(ctx context.Context, d time.Duration) time.Time {
	t := time.Now().Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.Before(t) {
		return dl
	}
	return t
}

func (f *wsFramer) write(ctx context.Context, msg []byte) error {
	if err := f.ws.SetWriteDeadline(deadline(ctx, f.writeWait)); err != nil {
		return err
	}
	return f.ws.WriteMessage(websocket.TextMessage, msg)
}

func (f *wsFramer) control(ctx context.Context, kind int, data []byte) error {
	return f.ws.WriteControl(kind, data, deadline(ctx, f.writeWait))
}

// shutdown sends the close frame, then gives the peer closeGrace to answer
// with its own before read fails.
func (f *wsFramer) shutdown(ctx context.Context, code int, reason string) error {
	dl := deadline(ctx, f.closeGrace)
	if err := f.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), dl); err != nil {
		return err
	}
	return f.ws.SetReadDeadline(dl)
}

func (f *wsFramer) close() error { return f.ws.Close() }

func (f *wsFramer) interval() time.Duration { return f.ka.interval }

// beat pings the peer, or reports it dead (closed with 1001) when it has
// been silent for maxMissed intervals.
func (f *wsFramer) beat(ctx context.Context, now time.Time) error {
	jumped, alive := f.ka.tick(now, f.seen.Swap(false))
	if jumped {
		f.log.Info("wall clock jumped between keepalive ticks (suspend?); liveness window restarted")
	}
	if !alive {
		f.log.Warn("peer stopped answering pings")
		return &frameError{code: websocket.CloseGoingAway, reason: "keepalive timeout"}
	}
	return f.ws.WriteControl(websocket.PingMessage, nil, deadline(ctx, f.writeWait))
}
