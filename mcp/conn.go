package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// service is what the connections of one Server or StreamServer serve:
// the MCP answers that tell the two apart and the connection limits. It is
// fixed once the first connection starts.
type service struct {
	log            *slog.Logger
	serverName     string
	serverVersion  string
	instructions   string // sent in the initialize result when set
	listChanged    bool   // the tool list may change during a session
	tools          func() *registry
	onIDEConnected func(ClientInfo) // nil for none; called through callHook

	maxInflight int           // requests running at once on one connection
	inlineFor   time.Duration // how long a request runs in the read loop before reading moves on (see readLoop)
	queueSize   int           // messages waiting for the writer
	queueWait   time.Duration // how long a full queue may block a sender
	newTicker   newTickerFunc // for a framer's heartbeat
}

// outgoing is one queued write: a JSON-RPC message, or (ctl != 0) a
// control frame the framer queued itself.
type outgoing struct {
	data []byte
	ctl  int
}

// conn is one client connection: the engine that both transports share.
// One goroutine at a time writes to the framer, the one holding wmu: the
// writer goroutine, which writes what is queued (notifications, the
// framer's own control frames, heartbeats, the orderly end), or a request
// writing its own reply when nothing is queued before it (reply). The
// read loop runs each request it reads in the loop's goroutine (inline)
// for up to svc.inlineFor; a request still running then keeps that
// goroutine, and the hand-off timer moves the read loop to a new one (see
// readLoop).
// Requests are counted in requests, the read loop's goroutines in
// readers; serve returns only once all of them, and the writer, have
// stopped.
type conn struct {
	svc *service
	fr  framer
	log *slog.Logger
	id  string

	ctx    context.Context // set by serve; cancelled when the read loop ends or serve's ctx is done
	cancel context.CancelFunc

	out       chan outgoing
	closing   chan struct{} // closed once the orderly end has been requested
	readDone  chan struct{}
	writeDone chan struct{}
	flush     bool // set before readDone closes: the writer sends what is queued before it stops
	requests  sync.WaitGroup

	wmu     sync.Mutex      // held while writing to the framer
	wctx    context.Context // every write's: c.ctx without its cancellation; set by serve
	broken  bool            // a write failed, nothing more is written; guarded by wmu
	pending atomic.Int64    // messages queued in out and not yet written

	// The read loop's place. Only the goroutine running the loop (the
	// reader) touches ticket and arms handoff; inline is the ticket of
	// the request the reader runs inline, 0 while it reads. Whoever
	// swaps inline from a ticket to 0 owns the loop: the reader when its
	// request ends in time, takeOver when handoff fires first.
	ticket    uint64
	inline    atomic.Uint64
	handoff   *time.Timer    // calls takeOver; set by serve
	readers   sync.WaitGroup // the goroutines the loop ran in
	loopEnded chan struct{}  // closed by the reader whose read failed, once readErr is set
	readErr   error          // why the read loop ended

	mu          sync.Mutex
	client      ClientInfo
	inflight    map[string]*inflight // by idKey
	closeAsked  bool
	closeCode   int
	closeReason string
	closeLast   []byte // a message to write before the framer's shutdown
}

// inflight is a request being handled.
type inflight struct {
	cancel    context.CancelFunc
	cancelled bool // by notifications/cancelled: no reply is sent
}

// newConn returns a connection for client. Set its framer (c.fr, which may
// need c as its link) before serve.
func newConn(svc *service, client ClientInfo) *conn {
	return &conn{
		svc:       svc,
		log:       svc.log.With("client", client.ID),
		id:        client.ID,
		out:       make(chan outgoing, svc.queueSize),
		closing:   make(chan struct{}),
		readDone:  make(chan struct{}),
		writeDone: make(chan struct{}),
		loopEnded: make(chan struct{}),
		client:    client,
		inflight:  make(map[string]*inflight),
	}
}

// debugging reports whether debug logs are wanted: the hot path's
// arguments are not even built when they are not.
func (c *conn) debugging() bool { return c.log.Enabled(c.ctx, slog.LevelDebug) }

func (c *conn) info() ClientInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// serve runs the connection over c.fr until it ends and everything it
// started has stopped, and returns why the read loop ended: errInputDone
// for the peer's clean end of input. Cancelling ctx cancels the requests
// in flight; ending the transport is the caller's (requestClose, or
// closing the framer).
func (c *conn) serve(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancel(ctx)
	defer c.cancel()
	// The writes outlive c.ctx: the orderly end is still sent once the
	// server closes or the read loop ends.
	c.wctx = context.WithoutCancel(c.ctx)
	c.handoff = time.AfterFunc(time.Hour, c.takeOver)
	c.handoff.Stop()
	go c.writeLoop()
	// The loop starts in a goroutine of its own, not this one, which
	// stays here until the end whether or not the loop moves: a
	// connection has the same goroutines before and after a hand-off.
	c.readers.Add(1)
	go func() {
		defer c.readers.Done()
		c.readLoop()
	}()
	<-c.loopEnded
	err := c.readErr
	c.log.Debug("read loop ended", "err", err)
	if errors.Is(err, errInputDone) {
		// The peer has said all it will but may still listen: its
		// requests finish and their replies go out before the end.
		c.requests.Wait()
		c.flush = true
	}
	close(c.readDone)
	c.cancel()
	<-c.writeDone
	_ = c.fr.close()
	c.requests.Wait()
	c.readers.Wait()
	c.handoff.Stop()
	return err
}

// readLoop reads and dispatches messages until a read fails, and then
// hands serve the error (readErr, loopEnded). A request runs in the loop's
// goroutine, so that a quick one (most are) costs no goroutine of its own
// nor a hand-off to one, but while it runs nothing is read: should it
// outlast svc.inlineFor, the hand-off timer moves the loop to a new
// goroutine (takeOver), and this one returns once its request is done.
func (c *conn) readLoop() {
	for {
		msg, err := c.fr.read(c.ctx)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) {
				c.readErr = err
				close(c.loopEnded)
				return
			}
			c.log.Debug("transport error, closing", "err", err)
			c.requestCloseWith(fe.code, fe.reason, fe.last)
			continue
		}
		if c.isClosing() {
			continue // waiting for the peer's answer to the orderly end
		}
		if !c.handle(msg) {
			return // the loop moved on while a request ran here
		}
	}
}

// takeOver runs in the hand-off timer's goroutine when a request has run
// inline for svc.inlineFor: if it is still running, this goroutine
// becomes the reader.
func (c *conn) takeOver() {
	t := c.inline.Load()
	if t == 0 || !c.inline.CompareAndSwap(t, 0) {
		return // the request ended in time
	}
	c.readers.Add(1) // before the loop can end, so before serve waits for readers
	defer c.readers.Done()
	if c.debugging() {
		c.log.Debug("a request outlasted its inline time; reading moves to a new goroutine")
	}
	c.readLoop()
}

// handle dispatches one message: notifications at once, since they are
// quick and their order matters, requests inline (startRequest). It
// reports whether this goroutine still runs the read loop.
func (c *conn) handle(data []byte) bool {
	msg, rpcErr := decodeMessage(data)
	if rpcErr != nil {
		c.log.Debug("invalid message", "code", rpcErr.Code, "error", rpcErr.Message)
		_ = c.send(encodeError(msg.id, rpcErr))
		return true
	}
	switch msg.kind {
	case kindResponse:
		c.log.Debug("ignoring a response to a request never sent", "id", string(msg.id))
	case kindNotification:
		c.log.Debug("notification", "method", msg.method)
		c.notify(msg)
	case kindRequest:
		return c.startRequest(msg)
	}
	return true
}

// startRequest runs a request with a context that
// notifications/cancelled, the connection's end and the server's close
// cancel. A connection has at most svc.maxInflight requests running; more
// are refused with [CodeServerBusy]. The request runs inline (see
// readLoop); startRequest reports whether this goroutine still runs the
// read loop when it is done.
func (c *conn) startRequest(msg incoming) bool {
	key, _ := idKey(msg.id) // decodeMessage only lets usable ids through
	ctx, cancel := context.WithCancel(c.ctx)
	req := &inflight{cancel: cancel}
	limit := c.svc.maxInflight
	c.mu.Lock()
	_, dup := c.inflight[key]
	busy := !dup && len(c.inflight) >= limit
	if !dup && !busy {
		c.inflight[key] = req
	}
	c.mu.Unlock()
	switch {
	case dup:
		cancel()
		_ = c.send(encodeError(msg.id, invalidRequest("id already used by a pending request")))
		return true
	case busy:
		cancel()
		c.log.Warn("request refused: too many pending", "method", msg.method, "limit", limit)
		_ = c.send(encodeError(msg.id, &Error{Code: CodeServerBusy, Message: fmt.Sprintf(
			"Server busy: %d requests are already running on this connection; wait for some to finish", limit)}))
		return true
	}
	if c.debugging() {
		c.log.Debug("request", "method", msg.method, "id", string(msg.id))
	}
	c.requests.Add(1)
	// msg's id and params are spans of the message as read. The id is
	// copied and msg goes to run as an argument, used by nothing here
	// after it, so that this frame does not keep a large message (a whole
	// file for openDiff) alive while its handler runs on, waiting for the
	// user.
	msg.id = append(json.RawMessage(nil), msg.id...)
	method, id := msg.method, msg.id
	c.ticket++
	ticket := c.ticket
	c.inline.Store(ticket)
	c.handoff.Reset(c.svc.inlineFor)
	reply := c.run(ctx, msg)
	cancel()
	c.mu.Lock()
	delete(c.inflight, key)
	suppressed := req.cancelled
	c.mu.Unlock()
	if suppressed {
		c.log.Debug("reply suppressed: request cancelled", "method", method, "id", string(id))
	} else {
		_ = c.reply(reply)
	}
	c.requests.Done()
	if !c.inline.CompareAndSwap(ticket, 0) {
		return false // takeOver has the loop
	}
	c.handoff.Stop()
	return true
}

// run calls the request's handler and encodes the reply. A panic becomes
// an internal error; the connection lives on.
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

// reply sends a request's reply. When nothing is queued before it and no
// one is writing, the request's goroutine writes it at once, which spares
// the writer goroutine a wake-up per call; otherwise it is queued like any
// message (send), behind what came first.
func (c *conn) reply(data []byte) error {
	if c.pending.Load() != 0 || !c.wmu.TryLock() {
		return c.send(data)
	}
	// pending only grows before a message is queued and shrinks once it
	// is written (under wmu): 0 here means everything queued before this
	// reply, by this goroutine or by one it heard from, is written.
	if c.pending.Load() != 0 || c.broken || !c.writable() {
		c.wmu.Unlock()
		return c.send(data)
	}
	defer c.wmu.Unlock()
	return c.writeLocked(outgoing{data: data})
}

// writable reports whether messages may still be written: not after the
// orderly end was requested, nor once the read loop or the writer has
// ended.
func (c *conn) writable() bool {
	select {
	case <-c.closing:
		return false
	case <-c.readDone:
		return false
	case <-c.writeDone:
		return false
	default:
		return true
	}
}

// send queues a message for the writer. If the queue stays full for the
// service's queueWait the client is too slow and the connection is
// dropped, so that the host is never blocked for long.
func (c *conn) send(data []byte) error {
	select { // nothing is queued once the orderly end is requested
	case <-c.closing:
		return ErrClosed
	case <-c.writeDone:
		return ErrClosed
	default:
	}
	o := outgoing{data: data}
	c.pending.Add(1)
	select {
	case c.out <- o:
		return nil
	default:
	}
	t := time.NewTimer(c.svc.queueWait)
	defer t.Stop()
	select {
	case c.out <- o:
		return nil
	case <-c.closing:
		c.pending.Add(-1)
		return ErrClosed
	case <-c.writeDone:
		c.pending.Add(-1)
		return ErrClosed
	case <-t.C:
		c.pending.Add(-1)
		c.log.Warn("client too slow, dropping the connection")
		_ = c.fr.close()
		return fmt.Errorf("mcp: send queue of client %s full: %w", c.id, ErrClosed)
	}
}

// queueControl implements link: a control frame that does not fit is
// dropped (a peer whose ping goes unanswered pings again).
func (c *conn) queueControl(kind int, data []byte) bool {
	c.pending.Add(1)
	select {
	case c.out <- outgoing{data: data, ctl: kind}:
		return true
	default:
		c.pending.Add(-1)
		return false
	}
}

// requestClose implements link: the writer then ends the connection in
// order (the framer's shutdown); the first request wins.
func (c *conn) requestClose(code int, reason string) { c.requestCloseWith(code, reason, nil) }

// requestCloseWith is requestClose with a last message, written before the
// framer's shutdown.
func (c *conn) requestCloseWith(code int, reason string, last []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeAsked {
		return
	}
	c.closeAsked, c.closeCode, c.closeReason, c.closeLast = true, code, reason, last
	close(c.closing)
}

// isClosing implements link.
func (c *conn) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// writeLoop is the connection's writer goroutine: it writes what is
// queued and the heartbeat, and ends the connection in order. It stops
// after the orderly end, after a failed write, or once the read loop has
// ended.
func (c *conn) writeLoop() {
	defer close(c.writeDone)
	var ticks <-chan time.Time
	hb, beats := c.fr.(heartbeat)
	if beats {
		t, stop := c.svc.newTicker(hb.interval())
		defer stop()
		ticks = t
	}
	for {
		select {
		case o := <-c.out:
			if !c.writeQueued(o) {
				return
			}
		case now := <-ticks:
			if !c.beat(hb, now) {
				return
			}
		case <-c.closing:
			c.shutdown()
			return
		case <-c.readDone:
			if c.flush && !c.drain() {
				return
			}
			if c.isClosing() {
				c.shutdown()
			}
			return
		}
	}
}

// writeQueued writes a message taken from the queue; it reports false
// once writing has failed.
func (c *conn) writeQueued(o outgoing) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	defer c.pending.Add(-1)
	return !c.broken && c.writeLocked(o) == nil
}

// beat runs the heartbeat; it reports false when the writer must stop.
func (c *conn) beat(hb heartbeat, now time.Time) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken {
		return false
	}
	if err := hb.beat(c.wctx, now); err != nil {
		var fe *frameError
		if errors.As(err, &fe) {
			c.log.Debug("heartbeat: closing", "reason", fe.reason)
			c.requestClose(fe.code, fe.reason)
			return true
		}
		c.log.Debug("heartbeat failed", "err", err)
		c.broken = true
		_ = c.fr.close()
		return false
	}
	return true
}

// drain writes what is queued; it reports false after a failed write.
func (c *conn) drain() bool {
	for {
		select {
		case o := <-c.out:
			if !c.writeQueued(o) {
				return false
			}
		default:
			return true
		}
	}
}

// writeLocked writes o; c.wmu is held. After a failed write the
// connection is closed and nothing more is written.
func (c *conn) writeLocked(o outgoing) error {
	var err error
	if o.ctl != 0 {
		err = c.fr.control(c.wctx, o.ctl, o.data)
	} else {
		err = c.fr.write(c.wctx, o.data)
		if len(o.data) >= hugeReply {
			// A whole file went out (openDiff's answer): its buffers
			// are garbage now; give the memory back rather than keep
			// the peak.
			o.data = nil
			debug.FreeOSMemory()
		}
	}
	if err != nil {
		c.log.Debug("write failed", "err", err)
		c.broken = true
		_ = c.fr.close()
	}
	return err
}

// shutdown writes the last message, if any, then has the framer end the
// connection in order.
func (c *conn) shutdown() {
	c.mu.Lock()
	code, reason, last := c.closeCode, c.closeReason, c.closeLast
	c.closeLast = nil
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken {
		return
	}
	if last != nil {
		if err := c.fr.write(c.wctx, last); err != nil {
			c.log.Debug("write failed", "err", err)
		}
	}
	if err := c.fr.shutdown(c.wctx, code, reason); err != nil {
		c.log.Debug("orderly close failed", "err", err)
		_ = c.fr.close()
		return
	}
	c.log.Debug("closing", "code", code, "reason", reason)
}

// callHook calls a host's hook, recovering a panic.
func callHook(log *slog.Logger, f func(ClientInfo), info ClientInfo) {
	if f == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("panic in hook", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	f(info)
}
