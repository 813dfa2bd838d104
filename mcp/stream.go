package mcp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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
// framing: one JSON-RPC message per line, no embedded newlines. Its
// connections run on the same engine as the WebSocket [Server]'s (one
// dispatch, the MCP lifecycle, the per-connection request cap,
// cancellation and panic recovery); only the framing differs. The
// transport is whatever the caller hands it (a unix socket accepted by
// Serve, or any io.ReadWriter given to ServeConn). Its methods are safe
// for concurrent use.
type StreamServer struct {
	cfg      StreamConfig
	log      *slog.Logger
	tokenSum [sha256.Size]byte
	svc      *service // what every connection serves

	mu      sync.RWMutex
	reg     *registry
	methods map[string]MethodHandler // kept across SetTools
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
	s := &StreamServer{cfg: cfg, log: log, tokenSum: sha256.Sum256([]byte(cfg.Token)), reg: &registry{}}
	s.svc = &service{
		log:           log,
		serverName:    cfg.ServerName,
		serverVersion: cfg.ServerVersion,
		instructions:  cfg.Instructions,
		listChanged:   false, // SetTools swaps the set between sessions, never during one
		tools:         s.registry,
		maxInflight:   maxInflight,
		inlineFor:     inlineFor,
		queueSize:     queueSize,
		queueWait:     queueWait,
		newTicker:     realTicker,
	}
	return s
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
	for name, h := range s.methods {
		reg.setMethod(name, h)
	}
	s.reg = reg
	s.mu.Unlock()
	return nil
}

// HandleMethod registers h for the custom JSON-RPC method name on every
// connection (kept across SetTools). A custom method needs no initialize:
// a short-lived peer (the CLI's hook command) may call it right after the
// authentication line. It panics on an empty name, a nil handler or a
// built-in method.
func (s *StreamServer) HandleMethod(name string, h MethodHandler) {
	if name == "" || h == nil || isBuiltin(name) {
		panic(fmt.Sprintf("mcp: HandleMethod(%q): empty name, nil handler or built-in method", name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.methods == nil {
		s.methods = map[string]MethodHandler{}
	}
	s.methods[name] = h
	s.reg.setMethod(name, h)
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
	err = s.serve(ctx, newLineFramer(br, c, c, s.cfg.ReadLimit, streamWriteWait), info)
	s.log.Info("editor tools: client disconnected", "client", info.ID, "err", err)
}

// validToken compares digests in constant time.
func (s *StreamServer) validToken(got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// ServeConn serves one already-authenticated stream until the peer ends
// its input, a message is too big, or ctx is done. At the end of input the
// requests in flight finish and their replies are written before it
// returns; otherwise they are cancelled, and it waits for them. If rw is
// an io.Closer, ServeConn closes it when it ends, and when ctx is done, to
// end a blocked read; otherwise the caller must end the stream for
// ServeConn to return.
func (s *StreamServer) ServeConn(ctx context.Context, rw io.ReadWriter, client ClientInfo) error {
	if client.ID == "" {
		client.ID = uuid.NewString()
	}
	closer, _ := rw.(io.Closer)
	return s.serve(ctx, newLineFramer(bufio.NewReaderSize(rw, 4096), rw, closer, s.cfg.ReadLimit, streamWriteWait), client)
}

// serve runs the connection engine over fr; the peer's clean end of input
// is no error.
func (s *StreamServer) serve(ctx context.Context, fr *lineFramer, client ClientInfo) error {
	c := newConn(s.svc, client)
	c.fr = fr
	stop := context.AfterFunc(ctx, func() { _ = fr.close() })
	defer stop()
	err := c.serve(ctx)
	if errors.Is(err, errInputDone) {
		return nil
	}
	return err
}
