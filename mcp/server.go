package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// Defaults and limits.
const (
	// DefaultPingInterval is the keepalive interval when Config.PingInterval is 0.
	DefaultPingInterval = 30 * time.Second
	// MinReadLimit is the smallest (and default) message size accepted:
	// openDiff carries whole files.
	MinReadLimit = 64 << 20
	// AuthHeader is the request header carrying the lock file's token.
	AuthHeader = "X-Claude-Code-Ide-Authorization"

	maxHeaderBytes    = 16 << 10
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 30 * time.Second
	queueSize         = 256
	queueWait         = 5 * time.Second
	writeWait         = 10 * time.Second
	closeGrace        = time.Second
	maxCloseReason    = 123 // a close frame's payload is 125 bytes, 2 for the code
	// maxInflight bounds the requests one connection may have running at
	// once. The CLI has a handful (a few openDiffs waiting on the user at
	// most); without a bound, a peer holding the token could park calls
	// until the host runs out of memory (10,000 cost about 100 MiB).
	maxInflight = 1024
	// inlineFor is how long a request runs in its connection's read loop
	// before reading moves to another goroutine (conn.readLoop). Most
	// requests end well within it and cost no goroutine of their own; a
	// message that arrives behind a slower one waits at most this long
	// (plus the timer's lateness) to be read.
	inlineFor = time.Millisecond
)

// CodeServerBusy is the JSON-RPC error (in the implementation-defined
// server-error range) for a request refused because its connection already
// has maxInflight requests running.
const CodeServerBusy = -32000

// sentinel is an error that can be a constant.
type sentinel string

func (e sentinel) Error() string { return string(e) }

// Errors reported by a Server; match them with errors.Is.
const (
	// ErrClosed reports an operation on a closed server or connection.
	ErrClosed = sentinel("mcp: closed")
	// ErrUnknownClient reports a client ID with no open connection.
	ErrUnknownClient = sentinel("mcp: unknown client")
)

// Config configures a Server.
//
// The hooks (OnConnect, OnIDEConnected, OnDisconnect) are called from the
// server's goroutines: they must not block for long, nor call Close, which
// waits for those goroutines. A panic in a hook is logged and recovered.
type Config struct {
	// ConfigDir is the Claude config dir (absolute); the lock file goes to
	// ConfigDir/ide/<port>.lock. Required.
	ConfigDir string
	// PID is written in the lock file: the long-lived editor's pid, since
	// the CLI deletes locks whose pid is dead. Required.
	PID int
	// IDEName tells IDE instances apart in the CLI's /ide list; default "Neovim".
	IDEName string
	// WorkspaceFolders are absolute paths.
	WorkspaceFolders []string
	// ServerName and ServerVersion are the serverInfo answered to
	// initialize; defaults "nvim-claude" and "dev".
	ServerName, ServerVersion string
	// Logger receives the server's logs; nil discards them. The auth token
	// is never logged.
	Logger *slog.Logger
	// PingInterval is the WebSocket keepalive interval; default
	// DefaultPingInterval. A peer silent for two intervals is closed.
	PingInterval time.Duration
	// ReadLimit is the largest message accepted, at least (and by default)
	// MinReadLimit.
	ReadLimit int64
	// Token is the auth token; empty means a random one (UUID v4).
	Token string

	// OnConnect is called after a WebSocket upgrade.
	OnConnect func(ClientInfo)
	// OnIDEConnected is called when the client's ide_connected notification
	// arrives; ClientInfo.PID is then the CLI's pid.
	OnIDEConnected func(ClientInfo)
	// OnDisconnect is called once a connection and all its requests have
	// ended.
	OnDisconnect func(ClientInfo)

	// HTTP, when set, serves the plain POST requests whose path starts
	// with HTTPPrefix: the CLI's HTTP hooks, which reach the IDE server's
	// own port (forwarded wherever the CLI runs). The loopback peer,
	// Origin and Host checks apply as to the IDE connection; the IDE's
	// auth token does not (the CLI sends none): HTTP checks its own. Its
	// request's context ends when the server closes.
	HTTP http.Handler
}

// HTTPPrefix is the path of every request Config.HTTP serves.
const HTTPPrefix = "/hook/"

// ClientInfo describes a client connection.
type ClientInfo struct {
	ID              string
	PID             int // the CLI's pid, from ide_connected; 0 until then
	ConnectedAt     time.Time
	UserAgent       string
	ProtocolVersion string // negotiated by initialize
	Initialized     bool   // notifications/initialized received
}

// Server serves the Claude Code IDE protocol on a loopback WebSocket. Its
// methods are safe for concurrent use.
type Server struct {
	cfg      Config
	log      *slog.Logger
	tokenSum [sha256.Size]byte
	reg      registry
	upgrader websocket.Upgrader

	// Connection tuning, fixed at Start; tests shrink these.
	readLimit  int64
	queueSize  int
	queueWait  time.Duration
	writeWait  time.Duration
	closeGrace time.Duration
	// maxInflight is maxInflight; tests lower it.
	maxInflight int
	inlineFor   time.Duration
	newTicker   newTickerFunc

	mu       sync.Mutex
	folders  []string
	started  bool
	closed   bool
	port     int
	hosts    [2]string // accepted Host headers
	lockPath string
	http     *http.Server
	ctx      context.Context // parent of every connection's context
	svc      *service        // what every connection serves; set by Start
	cancel   context.CancelFunc
	conns    map[string]*conn

	wg        sync.WaitGroup // the HTTP server and every handler goroutine
	closeOnce sync.Once
	closeErr  error
}

// NewServer validates cfg, fills in its defaults and returns a Server that
// is not yet listening.
func NewServer(cfg Config) (*Server, error) {
	switch {
	case cfg.ConfigDir == "" || !filepath.IsAbs(cfg.ConfigDir):
		return nil, errors.New("mcp: Config.ConfigDir must be an absolute path")
	case cfg.PID <= 0:
		return nil, errors.New("mcp: Config.PID must be positive")
	case cfg.PingInterval < 0:
		return nil, errors.New("mcp: Config.PingInterval must not be negative")
	case cfg.ReadLimit != 0 && cfg.ReadLimit < MinReadLimit:
		return nil, fmt.Errorf("mcp: Config.ReadLimit must be at least %d", MinReadLimit)
	}
	if err := checkFolders(cfg.WorkspaceFolders); err != nil {
		return nil, err
	}
	if cfg.IDEName == "" {
		cfg.IDEName = "Neovim"
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "nvim-claude"
	}
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = "dev"
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.ReadLimit == 0 {
		cfg.ReadLimit = MinReadLimit
	}
	if cfg.Token == "" {
		cfg.Token = uuid.NewString()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(discardHandler{})
	}
	s := &Server{
		cfg:         cfg,
		log:         log,
		tokenSum:    sha256.Sum256([]byte(cfg.Token)),
		readLimit:   cfg.ReadLimit,
		queueSize:   queueSize,
		queueWait:   queueWait,
		writeWait:   writeWait,
		closeGrace:  closeGrace,
		maxInflight: maxInflight,
		inlineFor:   inlineFor,
		newTicker:   realTicker,
		folders:     append([]string{}, cfg.WorkspaceFolders...),
		conns:       make(map[string]*conn),
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: readHeaderTimeout,
		Subprotocols:     []string{"mcp"},
		CheckOrigin:      func(r *http.Request) bool { return r.Header["Origin"] == nil },
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			s.log.Warn("refused connection", "status", status, "reason", reason)
			http.Error(w, http.StatusText(status), status)
		},
	}
	return s, nil
}

func checkFolders(folders []string) error {
	for _, f := range folders {
		if !filepath.IsAbs(f) {
			return fmt.Errorf("mcp: workspace folder %q is not absolute", f)
		}
	}
	return nil
}

// RegisterTool adds a tool; tools are listed in registration order. A
// duplicate name is an error. Registered after Start, the tool is announced
// to initialized clients with notifications/tools/list_changed.
func (s *Server) RegisterTool(t Tool) error {
	if err := s.reg.addTool(t); err != nil {
		return err
	}
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		s.Broadcast("notifications/tools/list_changed", nil)
	}
	return nil
}

// HandleMethod registers h for the custom JSON-RPC request method name
// (e.g. readFile), replacing any previous handler. Like http.ServeMux, it
// panics on an empty name, a nil handler, or a method the server handles
// itself (initialize, ping, tools/list, tools/call, resources/list,
// prompts/list and the notifications it reads).
func (s *Server) HandleMethod(name string, h MethodHandler) {
	if name == "" || h == nil || isBuiltin(name) {
		panic(fmt.Sprintf("mcp: HandleMethod(%q): empty name, nil handler or built-in method", name))
	}
	s.reg.setMethod(name, h)
}

// Start listens on 127.0.0.1 on a port the OS chooses, removes the lock
// files of dead processes, writes this server's lock file and serves until
// Close. ctx bounds the start-up only; handler contexts inherit its values.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.started:
		return errors.New("mcp: server already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("mcp: listen: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	removed, err := SweepLockFiles(s.cfg.ConfigDir)
	for _, path := range removed {
		s.log.Info("removed stale lock file", "path", path)
	}
	if err != nil {
		s.log.Warn("sweeping lock files", "err", err)
	}
	if err := ctx.Err(); err != nil {
		_ = ln.Close()
		return fmt.Errorf("mcp: start: %w", err)
	}
	path := LockFilePath(s.cfg.ConfigDir, port)
	if err := WriteLockFile(path, s.lockFile()); err != nil {
		_ = ln.Close()
		return err
	}
	p := strconv.Itoa(port)
	s.port, s.hosts, s.lockPath = port, [2]string{"127.0.0.1:" + p, "localhost:" + p}, path
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.svc = s.service()
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.started = true
	s.wg.Add(1)
	go func(srv *http.Server) {
		defer s.wg.Done()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}(s.http)
	s.log.Info("listening", "addr", ln.Addr().String(), "lock", path)
	return nil
}

// service returns what the connections serve, from the tuning fields as
// they are at Start.
func (s *Server) service() *service {
	return &service{
		log:            s.log,
		serverName:     s.cfg.ServerName,
		serverVersion:  s.cfg.ServerVersion,
		listChanged:    true,
		tools:          func() *registry { return &s.reg },
		onIDEConnected: s.cfg.OnIDEConnected,
		maxInflight:    s.maxInflight,
		inlineFor:      s.inlineFor,
		queueSize:      s.queueSize,
		queueWait:      s.queueWait,
		newTicker:      s.newTicker,
	}
}

// lockFile must be called with s.mu held.
func (s *Server) lockFile() LockFile {
	return LockFile{
		PID:              s.cfg.PID,
		WorkspaceFolders: s.folders,
		IDEName:          s.cfg.IDEName,
		Transport:        "ws",
		RunningInWindows: runtime.GOOS == "windows",
		AuthToken:        s.cfg.Token,
	}
}

// Port returns the port listened on, 0 before Start.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// LockPath returns the lock file's path, "" before Start.
func (s *Server) LockPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lockPath
}

// Token returns the auth token, for the host's own health check. Never log
// it.
func (s *Server) Token() string { return s.cfg.Token }

// SetWorkspaceFolders replaces the workspace folders (absolute paths) and,
// once started, rewrites the lock file atomically.
func (s *Server) SetWorkspaceFolders(folders []string) error {
	if err := checkFolders(folders); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.folders = append([]string{}, folders...)
	if s.lockPath == "" {
		return nil
	}
	return WriteLockFile(s.lockPath, s.lockFile())
}

// Clients returns the connected clients, oldest first.
func (s *Server) Clients() []ClientInfo {
	conns := s.connections()
	infos := make([]ClientInfo, len(conns))
	for i, c := range conns {
		infos[i] = c.info()
	}
	sort.Slice(infos, func(i, j int) bool {
		if !infos[i].ConnectedAt.Equal(infos[j].ConnectedAt) {
			return infos[i].ConnectedAt.Before(infos[j].ConnectedAt)
		}
		return infos[i].ID < infos[j].ID
	})
	return infos
}

func (s *Server) connections() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

func (s *Server) conn(clientID string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.conns[clientID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownClient, clientID)
	}
	return c, nil
}

// Broadcast sends a notification to every initialized client and returns
// how many it was queued for. A client whose queue stays full is dropped
// rather than blocking the caller for long. nil params are omitted.
func (s *Server) Broadcast(method string, params any) int {
	data, err := encodeNotification(method, params)
	if err != nil {
		s.log.Error("broadcast", "method", method, "err", err)
		return 0
	}
	n := 0
	for _, c := range s.connections() {
		if c.info().Initialized && c.send(data) == nil {
			n++
		}
	}
	return n
}

// Notify sends a notification to one client, initialized or not. nil
// params are omitted.
func (s *Server) Notify(clientID, method string, params any) error {
	c, err := s.conn(clientID)
	if err != nil {
		return err
	}
	data, err := encodeNotification(method, params)
	if err != nil {
		return fmt.Errorf("mcp: notify: %w", err)
	}
	return c.send(data)
}

// CloseClient closes one client's connection with a WebSocket close code
// and reason, e.g. 4001 and "Another Claude Code session connected to this
// IDE", which makes the CLI stop reconnecting. It does not wait for the
// connection to end.
func (s *Server) CloseClient(clientID string, code int, reason string) error {
	if !sendableCloseCode(code) {
		return fmt.Errorf("mcp: close code %d cannot be sent", code)
	}
	if len(reason) > maxCloseReason || !utf8.ValidString(reason) {
		return fmt.Errorf("mcp: close reason must be valid UTF-8 of at most %d bytes", maxCloseReason)
	}
	c, err := s.conn(clientID)
	if err != nil {
		return err
	}
	c.requestClose(code, reason)
	return nil
}

func sendableCloseCode(code int) bool {
	return code >= 1000 && code <= 1003 || code >= 1007 && code <= 1014 || code >= 3000 && code <= 4999
}

// Close removes the lock file, stops listening, closes every connection
// with 1001 (going away), cancels the requests in flight and waits for all
// the server's goroutines, so it must not be called from a handler or a
// hook. It is idempotent and returns the first call's error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	s.mu.Lock()
	s.closed = true
	srv, lockPath, cancel := s.http, s.lockPath, s.cancel
	s.mu.Unlock()

	var errs []error
	if lockPath != "" {
		errs = append(errs, RemoveLockFile(lockPath))
	}
	if srv != nil {
		if err := srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("mcp: close listener: %w", err))
		}
	}
	for _, c := range s.connections() {
		c.requestClose(websocket.CloseGoingAway, "server shutting down")
	}
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	s.log.Info("server closed")
	return errors.Join(errs...)
}

// track counts a handler goroutine in s.wg, unless the server is closed.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.track() {
		http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}
	defer s.wg.Done()
	if s.cfg.HTTP != nil && strings.HasPrefix(r.URL.Path, HTTPPrefix) {
		s.serveHook(w, r)
		return
	}
	if status, why := s.checkHandshake(r); status != 0 {
		s.log.Warn("refused connection", "status", status, "reason", why, "remote", r.RemoteAddr)
		if status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodGet)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered and logged
	}
	info := ClientInfo{ID: uuid.NewString(), ConnectedAt: time.Now(), UserAgent: r.UserAgent()}
	c := newConn(s.svc, info)
	c.fr = newWSFramer(ws, c, c.log, wsOptions{
		readLimit:    s.readLimit,
		writeWait:    s.writeWait,
		closeGrace:   s.closeGrace,
		pingInterval: s.cfg.PingInterval,
	})
	registered := s.register(c)
	if registered {
		c.log.Info("client connected", "userAgent", r.UserAgent(), "path", r.URL.Path, "subprotocol", ws.Subprotocol())
		s.hook(s.cfg.OnConnect, c.info())
	} else {
		c.requestClose(websocket.CloseGoingAway, "server shutting down")
	}
	_ = c.serve(s.ctx)
	if registered {
		s.mu.Lock()
		delete(s.conns, c.id)
		s.mu.Unlock()
		c.log.Info("client disconnected")
		s.hook(s.cfg.OnDisconnect, c.info())
	}
}

func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c.id] = c
	return true
}

// checkHandshake vets a request before any upgrade. It returns 0 when the
// request may proceed, else the HTTP status to refuse it with and why.
func (s *Server) checkHandshake(r *http.Request) (status int, why string) {
	switch {
	case !loopbackPeer(r.RemoteAddr):
		return http.StatusForbidden, "peer address is not loopback"
	case r.Header["Origin"] != nil:
		return http.StatusForbidden, "Origin header present (browser request)"
	case !s.allowedHost(r.Host):
		return http.StatusForbidden, "unexpected Host header"
	case r.URL.Path != "/" && r.URL.Path != "/mcp":
		return http.StatusNotFound, "unknown path"
	case r.Method != http.MethodGet:
		return http.StatusMethodNotAllowed, "method is not GET"
	case !s.validToken(r.Header.Get(AuthHeader)):
		return http.StatusUnauthorized, "missing or wrong auth token"
	case !websocket.IsWebSocketUpgrade(r):
		return http.StatusBadRequest, "not a WebSocket upgrade"
	}
	return 0, ""
}

// serveHook passes a request under HTTPPrefix to Config.HTTP once it
// passes the checks every request here does (not the token, see HTTP).
func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	status, why := 0, ""
	switch {
	case !loopbackPeer(r.RemoteAddr):
		status, why = http.StatusForbidden, "peer address is not loopback"
	case r.Header["Origin"] != nil:
		status, why = http.StatusForbidden, "Origin header present (browser request)"
	case !s.allowedHost(r.Host):
		status, why = http.StatusForbidden, "unexpected Host header"
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		status, why = http.StatusMethodNotAllowed, "method is not POST"
	}
	if status != 0 {
		s.log.Warn("refused hook request", "status", status, "reason", why, "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(status), status)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	s.cfg.HTTP.ServeHTTP(w, r.WithContext(ctx))
}

// loopbackPeer reports whether a connection comes from a loopback address.
// The listener is bound to 127.0.0.1, yet packets from other hosts can
// reach it where route_localnet is on (CVE-2020-8558).
func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

// allowedHost guards against DNS rebinding: only the loopback names with
// our port. s.hosts is set before serving starts.
func (s *Server) allowedHost(host string) bool {
	return strings.EqualFold(host, s.hosts[0]) || strings.EqualFold(host, s.hosts[1])
}

// validToken compares digests in constant time, so that neither the
// content nor the length of the token leaks through timing.
func (s *Server) validToken(got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// hook calls a Config hook, recovering a panic.
func (s *Server) hook(f func(ClientInfo), info ClientInfo) { callHook(s.log, f, info) }

// discardHandler is a slog.Handler that drops everything.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }
