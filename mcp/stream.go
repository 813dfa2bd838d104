package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Limits of a [StreamServer].
const (
	// DefaultStreamReadLimit is the largest message a StreamServer accepts
	// by default: editor tool arguments are small.
	DefaultStreamReadLimit = 1 << 20
	// maxHelloBytes bounds the authentication line.
	maxHelloBytes = 4 << 10
	// helloWait bounds the wait for the authentication line.
	helloWait = 5 * time.Second
	// streamWriteWait bounds one write to a stream peer.
	streamWriteWait = 10 * time.Second
)

// StreamConfig configures a StreamServer.
type StreamConfig struct {
	// ServerName and ServerVersion are the serverInfo answered to
	// initialize; defaults "nvim-claude" and "dev".
	ServerName, ServerVersion string
	// Instructions, when set, is sent in the initialize result: MCP clients
	// show it to the model.
	Instructions string
	// Token is the secret the first line of every connection must carry
	// (see [StreamServer.Serve]); empty means a random one.
	Token string
	// ReadLimit is the largest message accepted; default
	// DefaultStreamReadLimit.
	ReadLimit int
	// Logger receives the server's logs; nil discards them. The token is
	// never logged.
	Logger *slog.Logger
}

// StreamServer serves MCP over byte streams with the stdio transport's
// framing: one JSON-RPC message per line, no embedded newlines. It shares
// the JSON-RPC decoding, the MCP lifecycle and the tool registry semantics
// of the WebSocket [Server]; the transport is whatever the caller hands it
// (a unix socket accepted by Serve, or any io.ReadWriter given to
// ServeConn). Its methods are safe for concurrent use.
type StreamServer struct {
	cfg      StreamConfig
	log      *slog.Logger
	tokenSum [sha256.Size]byte

	mu  sync.RWMutex
	reg *registry
}

// NewStreamServer returns a StreamServer without tools.
func NewStreamServer(cfg StreamConfig) *StreamServer {
	if cfg.ServerName == "" {
		cfg.ServerName = "nvim-claude"
	}
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = "dev"
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = DefaultStreamReadLimit
	}
	if cfg.Token == "" {
		cfg.Token = uuid.NewString()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(discardHandler{})
	}
	return &StreamServer{cfg: cfg, log: log, tokenSum: sha256.Sum256([]byte(cfg.Token)), reg: &registry{}}
}

// Token returns the authentication token. Never log it.
func (s *StreamServer) Token() string { return s.cfg.Token }

// SetTools replaces the tool set (listed in the given order). Calls in
// flight finish with the tool they started with. A nameless, handlerless or
// duplicate tool is an error and leaves the old set in place.
func (s *StreamServer) SetTools(tools []Tool) error {
	reg := &registry{}
	for _, t := range tools {
		if err := reg.addTool(t); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.reg = reg
	s.mu.Unlock()
	return nil
}

// ToolNames lists the registered tools' names in order.
func (s *StreamServer) ToolNames() []string {
	reg := s.registry()
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	names := make([]string, len(reg.tools))
	for i, t := range reg.tools {
		names[i] = t.Name
	}
	return names
}

func (s *StreamServer) registry() *registry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.reg
}

// Serve accepts connections on ln until ctx is done or ln fails, and
// serves each one in its own goroutine. A connection must first send one
// line `{"token":"<token>"}` (at most 4 KiB, within 5 s): a wrong token
// closes it unanswered. Serve closes ln and waits for every connection to
// end before it returns.
func (s *StreamServer) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		_ = ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mcp: accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveAuthenticated(ctx, c)
		}()
	}
}

// serveAuthenticated checks the connection's token line, then serves it.
func (s *StreamServer) serveAuthenticated(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	_ = c.SetReadDeadline(time.Now().Add(helloWait))
	br := bufio.NewReaderSize(c, 512)
	line, err := readLine(br, maxHelloBytes)
	if err != nil {
		s.log.Warn("editor tools: connection refused: no authentication line", "err", err)
		return
	}
	var hello struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(line, &hello) != nil || !s.validToken(hello.Token) {
		s.log.Warn("editor tools: connection refused: wrong token")
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	info := ClientInfo{ID: uuid.NewString(), ConnectedAt: time.Now()}
	s.log.Info("editor tools: client connected", "client", info.ID)
	err = s.serve(ctx, br, c, info)
	s.log.Info("editor tools: client disconnected", "client", info.ID, "err", err)
}

// validToken compares digests in constant time.
func (s *StreamServer) validToken(got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// ServeConn serves one already-authenticated stream until the peer closes
// it, a message is too big, or ctx is done. It waits for the requests it
// started. The caller closes rw.
func (s *StreamServer) ServeConn(ctx context.Context, rw io.ReadWriter, client ClientInfo) error {
	if client.ID == "" {
		client.ID = uuid.NewString()
	}
	return s.serve(ctx, bufio.NewReaderSize(rw, 4096), rw, client)
}

// errLineTooLong reports a message over the read limit.
var errLineTooLong = errors.New("mcp: message too big")

// readLine reads one line without its newline; a line over limit bytes is
// an error (the stream cannot be resynchronised).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// streamConn is one served stream.
type streamConn struct {
	srv    *StreamServer
	w      io.Writer
	client ClientInfo
	log    *slog.Logger

	wmu sync.Mutex // one message per write

	mu       sync.Mutex
	inflight map[string]*inflight
}

func (s *StreamServer) serve(ctx context.Context, r *bufio.Reader, w io.Writer, client ClientInfo) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sc := &streamConn{srv: s, w: w, client: client, log: s.log.With("client", client.ID), inflight: map[string]*inflight{}}
	var requests sync.WaitGroup
	defer requests.Wait()
	for {
		line, err := readLine(r, s.cfg.ReadLimit)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, errLineTooLong) {
				sc.write(encodeError(nil, invalidRequest(fmt.Sprintf("message larger than %d bytes", s.cfg.ReadLimit))))
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		sc.handle(ctx, line, &requests)
	}
}

func (sc *streamConn) write(data []byte) {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	if d, ok := sc.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(time.Now().Add(streamWriteWait))
	}
	data = append(data, '\n')
	if _, err := sc.w.Write(data); err != nil {
		sc.log.Debug("write failed", "err", err)
	}
}

func (sc *streamConn) handle(ctx context.Context, data []byte, requests *sync.WaitGroup) {
	msg, rpcErr := decodeMessage(data)
	if rpcErr != nil {
		sc.write(encodeError(msg.id, rpcErr))
		return
	}
	switch msg.kind {
	case kindResponse:
		return
	case kindNotification:
		if msg.method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if decodeParams(msg.params, &p) == nil {
				if key, ok := idKey(p.RequestID); ok {
					sc.cancel(key)
				}
			}
		}
		return
	}
	key, _ := idKey(msg.id)
	rctx, cancel := context.WithCancel(ctx)
	req := &inflight{cancel: cancel}
	sc.mu.Lock()
	_, dup := sc.inflight[key]
	if !dup {
		sc.inflight[key] = req
	}
	sc.mu.Unlock()
	if dup {
		cancel()
		sc.write(encodeError(msg.id, invalidRequest("id already used by a pending request")))
		return
	}
	requests.Add(1)
	go func() {
		defer requests.Done()
		defer cancel()
		reply := sc.run(rctx, msg)
		sc.mu.Lock()
		delete(sc.inflight, key)
		suppressed := req.cancelled
		sc.mu.Unlock()
		if !suppressed {
			sc.write(reply)
		}
	}()
}

func (sc *streamConn) cancel(key string) {
	sc.mu.Lock()
	req, ok := sc.inflight[key]
	if ok {
		req.cancelled = true
	}
	sc.mu.Unlock()
	if ok {
		req.cancel()
	}
}

// streamInitializeResult is initializeResult plus instructions.
type streamInitializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Tools struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Instructions string `json:"instructions,omitempty"`
}

func (sc *streamConn) run(ctx context.Context, msg incoming) (reply []byte) {
	defer func() {
		if p := recover(); p != nil {
			sc.log.Error("panic in handler", "method", msg.method, "panic", p, "stack", string(debug.Stack()))
			reply = encodeError(msg.id, &Error{Code: CodeInternalError, Message: "Internal error"})
		}
	}()
	var res any
	var err error
	switch msg.method {
	case "initialize":
		var p initializeParams
		if err = decodeParams(msg.params, &p); err == nil {
			var r streamInitializeResult
			r.ProtocolVersion = negotiateVersion(p.ProtocolVersion)
			r.ServerInfo.Name = sc.srv.cfg.ServerName
			r.ServerInfo.Version = sc.srv.cfg.ServerVersion
			r.Instructions = sc.srv.cfg.Instructions
			res = r
		}
	case "ping":
		res = json.RawMessage(`{}`)
	case "tools/list":
		res = sc.srv.registry().listTools()
	case "tools/call":
		res, err = sc.srv.registry().callTool(ctx, sc.client, msg.params)
	case "resources/list":
		res = json.RawMessage(`{"resources":[]}`)
	case "prompts/list":
		res = json.RawMessage(`{"prompts":[]}`)
	default:
		err = &Error{Code: CodeMethodNotFound, Message: "Method not found: " + msg.method}
	}
	if err == nil {
		if reply, err = encodeResult(msg.id, res); err == nil {
			return reply
		}
	}
	return encodeError(msg.id, toWireError(err))
}
