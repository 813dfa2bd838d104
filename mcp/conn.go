package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// frame is one queued outgoing WebSocket message: text or pong.
type frame struct {
	typ  int
	data []byte
}

// conn is one client connection. Its read loop runs in the HTTP handler's
// goroutine; every write (responses, notifications, pings, pongs, the close
// frame) goes through the single writer goroutine, fed by a bounded queue.
type conn struct {
	srv *Server
	ws  *websocket.Conn
	log *slog.Logger
	id  string

	ctx    context.Context // cancelled when the read loop ends or the server closes
	cancel context.CancelFunc

	out       chan frame
	closing   chan struct{} // closed once a close frame has been requested
	readDone  chan struct{}
	writeDone chan struct{}
	seen      atomic.Bool // the peer sent something since the last keepalive tick
	requests  sync.WaitGroup

	mu        sync.Mutex
	client    ClientInfo
	inflight  map[string]*inflight // by idKey
	closeCode int
	closeText string
}

// inflight is a request being handled.
type inflight struct {
	cancel    context.CancelFunc
	cancelled bool // by notifications/cancelled: no reply is sent
}

func newConn(s *Server, ws *websocket.Conn, userAgent string) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	id := uuid.NewString()
	c := &conn{
		srv:       s,
		ws:        ws,
		log:       s.log.With("client", id),
		id:        id,
		ctx:       ctx,
		cancel:    cancel,
		out:       make(chan frame, s.queueSize),
		closing:   make(chan struct{}),
		readDone:  make(chan struct{}),
		writeDone: make(chan struct{}),
		client:    ClientInfo{ID: id, ConnectedAt: time.Now(), UserAgent: userAgent},
		inflight:  make(map[string]*inflight),
	}
	c.seen.Store(true) // the handshake itself
	ws.SetPingHandler(func(data string) error {
		c.seen.Store(true)
		select { // a pong that does not fit is dropped: the peer pings again
		case c.out <- frame{websocket.PongMessage, []byte(data)}:
		default:
		}
		return nil
	})
	ws.SetPongHandler(func(string) error {
		c.seen.Store(true)
		return nil
	})
	ws.SetCloseHandler(func(code int, _ string) error {
		c.requestClose(code, "") // echo the peer's code, through the writer
		return nil
	})
	return c
}

func (c *conn) info() ClientInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// serve runs the connection until it ends and everything it started has
// stopped.
func (c *conn) serve() {
	go c.writeLoop()
	err := c.readLoop()
	c.log.Debug("read loop ended", "err", err)
	close(c.readDone)
	c.cancel()
	<-c.writeDone
	_ = c.ws.Close()
	c.requests.Wait()
}

func (c *conn) readLoop() error {
	limit := c.srv.readLimit
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return err
		}
		c.seen.Store(true)
		if c.isClosing() {
			continue // waiting for the peer's close frame; NextReader skips the rest
		}
		if typ != websocket.TextMessage {
			c.requestClose(websocket.CloseUnsupportedData, "binary messages are not supported")
			continue
		}
		data, err := readMessage(r, limit+1)
		if err != nil {
			return err
		}
		switch {
		case int64(len(data)) > limit:
			c.requestClose(websocket.CloseMessageTooBig, "message too big")
		case !utf8.Valid(data):
			c.requestClose(websocket.CloseInvalidFramePayloadData, "invalid UTF-8")
		default:
			c.handle(data)
		}
	}
}

// readMessage reads r to its end, or to max bytes, into a buffer of
// exactly that size. io.ReadAll grows one buffer by copying it, so a 20 MB
// message passed through 40 MB of buffers alive at once and left many more
// as garbage; here the message is read in chunks (up to 1 MiB) and copied
// once, and a message that fits in the first chunk not at all.
func readMessage(r io.Reader, max int64) ([]byte, error) {
	var chunks [][]byte
	total := int64(0)
	size := int64(4096)
	for total < max {
		buf := make([]byte, min(size, max-total))
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		if n > 0 {
			chunks = append(chunks, buf[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(size*2, 1<<20)
	}
	switch len(chunks) {
	case 0:
		return []byte{}, nil
	case 1:
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	for i, ch := range chunks {
		out = append(out, ch...)
		chunks[i] = nil
	}
	if total >= largeMessage {
		// The chunks are garbage: collect them now, so that what the
		// handler decodes from the message (a whole file) takes their
		// place instead of adding to the peak.
		runtime.GC()
	}
	return out, nil
}

func (c *conn) handle(data []byte) {
	msg, rpcErr := decodeMessage(data)
	if rpcErr != nil {
		c.log.Debug("invalid message", "code", rpcErr.Code, "error", rpcErr.Message)
		_ = c.send(encodeError(msg.id, rpcErr))
		return
	}
	switch msg.kind {
	case kindResponse:
		c.log.Debug("ignoring a response to a request never sent", "id", string(msg.id))
	case kindNotification:
		c.log.Debug("notification", "method", msg.method)
		c.notify(msg)
	case kindRequest:
		c.startRequest(msg)
	}
}

// startRequest runs a request in its own goroutine with a context that
// notifications/cancelled, the connection's end and the server's close
// cancel.
func (c *conn) startRequest(msg incoming) {
	key, _ := idKey(msg.id) // decodeMessage only lets usable ids through
	ctx, cancel := context.WithCancel(c.ctx)
	req := &inflight{cancel: cancel}
	c.mu.Lock()
	_, dup := c.inflight[key]
	busy := !dup && len(c.inflight) >= c.srv.maxInflight
	if !dup && !busy {
		c.inflight[key] = req
	}
	c.mu.Unlock()
	switch {
	case dup:
		cancel()
		_ = c.send(encodeError(msg.id, invalidRequest("id already used by a pending request")))
		return
	case busy:
		cancel()
		c.log.Warn("request refused: too many pending", "method", msg.method, "limit", c.srv.maxInflight)
		_ = c.send(encodeError(msg.id, &Error{Code: CodeServerBusy, Message: fmt.Sprintf(
			"Server busy: %d requests are already running on this connection; wait for some to finish", c.srv.maxInflight)}))
		return
	}
	c.log.Debug("request", "method", msg.method, "id", string(msg.id))
	c.requests.Add(1)
	// msg's id and params are spans of the message as read. The id is
	// copied and msg goes to the goroutine as an argument, so that nothing
	// here keeps a large message (a whole file for openDiff) alive while
	// its handler runs on, waiting for the user.
	msg.id = append(json.RawMessage(nil), msg.id...)
	go func(msg incoming) {
		defer c.requests.Done()
		defer cancel()
		method, id := msg.method, msg.id
		reply := c.run(ctx, msg)
		c.mu.Lock()
		delete(c.inflight, key)
		suppressed := req.cancelled
		c.mu.Unlock()
		if suppressed {
			c.log.Debug("reply suppressed: request cancelled", "method", method, "id", string(id))
			return
		}
		_ = c.send(reply)
	}(msg)
}

// run calls the request's handler and encodes the reply. A panic becomes
// an internal error.
func (c *conn) run(ctx context.Context, msg incoming) (reply []byte) {
	method, id := msg.method, msg.id // not msg: its params may be large
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("panic in handler", "method", method, "panic", p, "stack", string(debug.Stack()))
			reply = encodeError(id, &Error{Code: CodeInternalError, Message: "Internal error"})
		}
	}()
	res, err := c.call(ctx, msg)
	if err == nil {
		if reply, err = encodeResult(id, res); err == nil {
			return reply
		}
	}
	c.log.Debug("request failed", "method", method, "id", string(id), "err", err)
	return encodeError(id, toWireError(err))
}

func (c *conn) cancelRequest(key, reason string) {
	c.mu.Lock()
	req, ok := c.inflight[key]
	if ok {
		req.cancelled = true
	}
	c.mu.Unlock()
	if ok {
		c.log.Debug("request cancelled by the client", "reason", reason)
		req.cancel()
	}
}

// send queues a text frame for the writer. If the queue stays full for the
// server's queueWait the client is too slow and the connection is dropped,
// so that the host is never blocked for long.
func (c *conn) send(data []byte) error {
	select { // nothing is queued once a close frame is requested
	case <-c.closing:
		return ErrClosed
	case <-c.writeDone:
		return ErrClosed
	default:
	}
	f := frame{websocket.TextMessage, data}
	select {
	case c.out <- f:
		return nil
	default:
	}
	t := time.NewTimer(c.srv.queueWait)
	defer t.Stop()
	select {
	case c.out <- f:
		return nil
	case <-c.closing:
		return ErrClosed
	case <-c.writeDone:
		return ErrClosed
	case <-t.C:
		c.log.Warn("client too slow, dropping the connection")
		_ = c.ws.Close()
		return fmt.Errorf("mcp: send queue of client %s full: %w", c.id, ErrClosed)
	}
}

// requestClose asks the writer to send a close frame; the first request
// wins. The read loop then waits, for the server's closeGrace at most, for
// the peer's close frame.
func (c *conn) requestClose(code int, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeCode != 0 {
		return
	}
	c.closeCode, c.closeText = code, text
	close(c.closing)
}

func (c *conn) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

func (c *conn) writeLoop() {
	defer close(c.writeDone)
	ticks, stop := c.srv.newTicker(c.srv.cfg.PingInterval)
	defer stop()
	ka := keepalive{interval: c.srv.cfg.PingInterval}
	for {
		select {
		case f := <-c.out:
			if err := c.write(f); err != nil {
				c.log.Debug("write failed", "err", err)
				_ = c.ws.Close()
				return
			}
		case t := <-ticks:
			jumped, alive := ka.tick(t, c.seen.Swap(false))
			if jumped {
				c.log.Info("wall clock jumped between keepalive ticks (suspend?); liveness window restarted")
			}
			if !alive {
				c.log.Warn("peer stopped answering pings, closing")
				c.requestClose(websocket.CloseGoingAway, "keepalive timeout")
				continue
			}
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.srv.writeWait)); err != nil {
				c.log.Debug("ping failed", "err", err)
				_ = c.ws.Close()
				return
			}
		case <-c.closing:
			c.writeClose()
			return
		case <-c.readDone:
			if c.isClosing() {
				c.writeClose()
			}
			return
		}
	}
}

func (c *conn) write(f frame) error {
	deadline := time.Now().Add(c.srv.writeWait)
	if f.typ != websocket.TextMessage {
		return c.ws.WriteControl(f.typ, f.data, deadline)
	}
	if err := c.ws.SetWriteDeadline(deadline); err != nil {
		return err
	}
	err := c.ws.WriteMessage(websocket.TextMessage, f.data)
	if len(f.data) >= hugeReply {
		// A whole file went out (openDiff's answer): its buffers are
		// garbage now; give the memory back rather than keep the peak.
		f.data = nil
		debug.FreeOSMemory()
	}
	return err
}

// largeMessage is the size of a message read from which its chunks are
// collected at once (see readMessage).
const largeMessage = 1 << 20

// hugeReply is the size of a written frame after which the process's free
// memory goes back to the operating system. It is above what answers that
// come often reach (getDiagnostics for a whole project: a few MB), so that
// a forced collection is paid for a whole file, not on every such call.
const hugeReply = 8 << 20

func (c *conn) writeClose() {
	c.mu.Lock()
	code, text := c.closeCode, c.closeText
	c.mu.Unlock()
	deadline := time.Now().Add(c.srv.closeGrace)
	if err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), deadline); err != nil {
		c.log.Debug("close frame failed", "err", err)
		_ = c.ws.Close()
		return
	}
	c.log.Debug("close frame sent", "code", code, "reason", text)
	_ = c.ws.SetReadDeadline(deadline)
}
