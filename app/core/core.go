// Package core is the application's lifecycle, apart from its wiring: the
// IDE server's start and stop, the connected CLIs (single-session hand-over,
// the "clients" events), the event pump to Lua, the handlers Lua calls for
// the server itself (start, stop, status, probe, cwd_changed), and the
// host.Host every feature gets. The features it runs are given to New by
// package app (production) or by a feature's own tests, which so run a
// feature alone behind the real lifecycle.
//
// It must never import a feature package, nor hold a feature's logic: a
// tool, a method or a Lua handler belongs to a feature.
package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Emitter is what the lifecycle needs from Neovim: the event pump's
// delivery to Lua (nvimbridge.Bridge in production).
type Emitter interface {
	// Emit hands an event to the Lua side (state for status(), User autocmds).
	Emit(ctx context.Context, event string, data any) error
}

// Server is what the application needs from the MCP server.
type Server interface {
	Start(ctx context.Context) error
	Port() int
	LockPath() string
	Token() string
	Clients() []mcp.ClientInfo
	Broadcast(method string, params any) int
	Notify(clientID, method string, params any) error
	SetWorkspaceFolders(folders []string) error
	RegisterTool(t mcp.Tool) error
	HandleMethod(name string, h mcp.MethodHandler)
	CloseClient(id string, code int, reason string) error
	Close() error
}

// Registrar is where the application registers the handlers Lua calls with
// rpcrequest / rpcnotify (nvimbridge.Bridge in production).
type Registrar interface {
	HandleRequest(method string, h func(ctx context.Context, params json.RawMessage) (any, error)) error
	HandleNotification(method string, h func(params json.RawMessage)) error
}

// Options configure an App.
type Options struct {
	// Editor receives the events; nil drops them.
	Editor Emitter
	Logger *slog.Logger
	// Version is the host's, which the IDE server reports.
	Version string
	// Features makes the features the App runs, given the App as their
	// host.Host; their hooks are asked for once.
	Features func(h host.Host) []host.Feature
	// NewServer builds the MCP server; nil means mcp.NewServer.
	NewServer func(cfg mcp.Config) (Server, error)
	// Workspace is the App's workspace (nil: a new one): the wiring keeps
	// it to hand the one feature that reports folders its own port.
	Workspace *workspace.Workspace
}

// App is the running application. Its zero value is not usable; call New.
type App struct {
	ed        Emitter
	version   string
	log       *slog.Logger
	newServer func(cfg mcp.Config) (Server, error)

	events chan event // hook → Lua, delivered in order by pump
	// clientsMu makes a "clients" event's snapshot and its place in the
	// queue one step: a connect and a disconnect on two connections (the
	// single-session hand-over) must not queue their snapshots in the
	// other order, which left Lua listing a CLI that was gone.
	clientsMu sync.Mutex
	stop      chan struct{}   // closed by Close
	ctx       context.Context // cancelled by Close: ends request_async calls
	cancel    context.CancelFunc
	wg        sync.WaitGroup // pump, hand-overs, request_async calls

	features []host.Feature
	hooks    []host.Hooks // features[i].Hooks(), asked once
	// ws is the cwd, the folders and the file boundary (whose settings
	// come with the start request).
	ws *workspace.Workspace

	optsMu sync.Mutex // one SetOptions at a time

	mu     sync.Mutex
	opts   *host.Options // nil until Lua sent them
	single bool          // single_session, as the last options said
	srv    Server
	params StartParams
	closed bool
}

type event struct {
	name string
	data any
}

// New makes an App and starts its event pump. Close stops it.
func New(opts Options) *App {
	ws := opts.Workspace
	if ws == nil {
		ws = workspace.New()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	newServer := opts.NewServer
	if newServer == nil {
		newServer = func(cfg mcp.Config) (Server, error) { return mcp.NewServer(cfg) }
	}
	a := &App{
		ed:        opts.Editor,
		version:   opts.Version,
		log:       log,
		newServer: newServer,
		events:    make(chan event, 256),
		stop:      make(chan struct{}),
		ws:        ws,
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	if opts.Features != nil {
		a.features = opts.Features(a)
	}
	for _, f := range a.features {
		a.hooks = append(a.hooks, f.Hooks())
	}
	a.wg.Add(1)
	go a.pump()
	return a
}

// Register installs the handlers Lua calls.
func (a *App) Register(r Registrar) error {
	reqs := map[string]host.LuaRequest{
		"options": host.Request("options", func(_ context.Context, o host.Options) (any, error) {
			if err := a.SetOptions(o); err != nil {
				return nil, fmt.Errorf("options: %w", err)
			}
			// Lua checks that the host is its own version (server.lua).
			return map[string]any{"version": a.version}, nil
		}),
		"start":  host.Request("start", a.handleStart),
		"stop":   a.handleStop,
		"status": a.handleStatus,
		"probe":  a.handleProbe,
	}
	nots := map[string]host.LuaNotification{
		"cwd_changed": host.Notification(a.log, "cwd_changed", a.handleCwdChanged),
	}
	// request_async runs any request off Neovim's main loop: Lua goes on at
	// once and hears the answer as a "reply" event (server.request_async).
	nots["request_async"] = host.Notification(a.log, "request_async", func(p asyncParams) { a.runAsync(reqs, p) })
	for i, f := range a.features {
		for name, h := range a.hooks[i].LuaRequests {
			if _, dup := reqs[name]; dup {
				return fmt.Errorf("%s: Lua request %q registered twice", f.Name(), name)
			}
			reqs[name] = h
		}
		for name, h := range a.hooks[i].LuaNotifications {
			if _, dup := nots[name]; dup {
				return fmt.Errorf("%s: Lua notification %q registered twice", f.Name(), name)
			}
			nots[name] = h
		}
	}
	for name, h := range reqs {
		if err := r.HandleRequest(name, h); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	for name, h := range nots {
		if err := r.HandleNotification(name, h); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	return nil
}

// SetOptions takes the user's options as Lua resolved them (the
// "options" request: when Lua starts the host and whenever setup() runs
// again): the file boundary's settings, single_session, and every
// feature's Hooks.Options. The hooks run outside a.mu (a feature may call
// the host from under its own lock), one SetOptions at a time.
//
// Each table is decoded by whoever owns it, before anything changes: the
// App refuses the whole request when its own tables (single_session,
// security) do not decode; a feature refuses its own and keeps its
// previous options. The error names every option that was refused.
func (a *App) SetOptions(o host.Options) error {
	return a.setOptions(o, false)
}

// setOptions is SetOptions; onlyFirst keeps the options already set.
func (a *App) setOptions(o host.Options, onlyFirst bool) error {
	a.optsMu.Lock()
	defer a.optsMu.Unlock()
	if onlyFirst {
		a.mu.Lock()
		set := a.opts != nil
		a.mu.Unlock()
		if set {
			return nil
		}
	}
	var single bool
	var sec struct {
		// security.deny followed by security.deny_extra
		Deny      []string `json:"deny"`
		AllowHome bool     `json:"allow_home"`
	}
	if err := errors.Join(o.Decode("single_session", &single), o.Decode("security", &sec)); err != nil {
		return err
	}
	a.mu.Lock()
	a.opts = &o
	a.single = single
	a.mu.Unlock()
	a.ws.Boundary().Update(workspace.Settings{Deny: sec.Deny, AllowHome: sec.AllowHome})
	var errs []error
	for _, h := range a.hooks {
		if h.Options != nil {
			if err := h.Options(o); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// earlyStart is what Lua hands a host it starts with the server already
// wanted (auto_start): the options and start requests' parameters, and
// the plugin's version.
type earlyStart struct {
	Version string          `json:"version"`
	Options json.RawMessage `json:"options"`
	Start   StartParams     `json:"start"`
}

// StartEarly applies the options and starts the IDE server from raw (an
// earlyStart), before Lua has sent a request: the lock file is written
// while Neovim is still busy starting. It does nothing for a plugin of
// another version (Lua's own options request finds that out and says
// so) and keeps options Lua has already sent. Lua's start request that
// follows finds the server running and gets its status.
func (a *App) StartEarly(ctx context.Context, raw []byte, version string) error {
	var e earlyStart
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("early start: %w", err)
	}
	if e.Version != version {
		return fmt.Errorf("early start: the plugin is version %q, the host %q", e.Version, version)
	}
	if e.Start.PID <= 0 || e.Start.Cwd == "" || e.Start.ConfigDir == "" {
		return errors.New("early start: pid, cwd and config_dir are required")
	}
	var o host.Options
	if err := json.Unmarshal(e.Options, &o); err != nil {
		return fmt.Errorf("early start: options: %w", err)
	}
	if err := a.setOptions(o, true); err != nil {
		return fmt.Errorf("early start: %w", err)
	}
	return a.Start(ctx, e.Start)
}

// singleSession is the single_session option now.
func (a *App) singleSession() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.opts != nil && a.single
}

// asyncParams are request_async's parameters: a request by name, and the
// number Lua matches the reply by.
type asyncParams struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// asyncTimeout bounds a request made with request_async.
const asyncTimeout = 2 * time.Minute

// runAsync runs request p.Method on a goroutine the App owns (Close
// cancels it and waits) and queues its answer as a "reply" event, so that
// no request that waits for a CLI holds Neovim's main loop.
func (a *App) runAsync(reqs map[string]host.LuaRequest, p asyncParams) {
	reply := func(result any, err error) {
		d := map[string]any{"id": p.ID, "method": p.Method}
		if err != nil {
			d["error"] = err.Error()
		} else {
			d["result"] = result
		}
		// A reply is never dropped (Lua waits for it): it waits for room
		// in the queue, or for the App to close.
		select {
		case a.events <- event{name: "reply", data: d}:
		case <-a.stop:
		}
	}
	h := reqs[p.Method]
	if h == nil || p.Method == "request_async" {
		reply(nil, fmt.Errorf("no request %q", p.Method))
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		reply(nil, errors.New("nvim-claude is shutting down"))
		return
	}
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(a.ctx, asyncTimeout)
		defer cancel()
		res, err := h(ctx, p.Params)
		reply(res, err)
	}()
}

// StartParams is what Lua sends with "start".
type StartParams struct {
	PID       int    `json:"pid"`        // Neovim's pid: the lock must name the long-lived editor
	Cwd       string `json:"cwd"`        // workspace folder
	ConfigDir string `json:"config_dir"` // where the CLI looks for locks
	IDEName   string `json:"ide_name"`   // optional override
}

// Status is the state Lua's status() and :ClaudeStatus report.
type Status struct {
	Running  bool         `json:"running"`
	Port     int          `json:"port,omitempty"`
	LockFile string       `json:"lock_file,omitempty"`
	Clients  []ClientView `json:"clients"`
}

// ClientView is one connected CLI as Lua sees it.
type ClientView struct {
	ID  string `json:"id"`
	PID int    `json:"pid"`
}

func (a *App) handleStart(ctx context.Context, p StartParams) (any, error) {
	if p.PID <= 0 || p.Cwd == "" || p.ConfigDir == "" {
		return nil, errors.New("start: pid, cwd and config_dir are required")
	}
	if err := a.Start(ctx, p); err != nil {
		return nil, err
	}
	return a.Status(), nil
}

// httpHooks is the feature's handler of the CLI's HTTP hooks, or nil.
func (a *App) httpHooks() http.Handler {
	for _, h := range a.hooks {
		if h.HTTPHooks != nil {
			return h.HTTPHooks
		}
	}
	return nil
}

// Start starts the IDE server if it is not running. A running server is left
// as it is (the CLI may be connected to it).
func (a *App) Start(ctx context.Context, p StartParams) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("nvim-claude is shutting down")
	}
	if a.opts == nil {
		return errors.New("the host has no options yet (Lua sends them when it starts the host)")
	}
	if a.srv != nil {
		return nil
	}
	a.ws.SetCwd(p.Cwd)
	name := p.IDEName
	if name == "" {
		name = ideName(p.Cwd, p.PID)
	}
	cfg := mcp.Config{
		ConfigDir:        p.ConfigDir,
		PID:              p.PID,
		IDEName:          name,
		WorkspaceFolders: []string{p.Cwd},
		ServerName:       "nvim-claude",
		ServerVersion:    a.version,
		Logger:           a.log.With("component", "mcp"),
		OnIDEConnected: func(c mcp.ClientInfo) {
			a.log.Info("CLI connected", "client", c.ID, "pid", c.PID)
			if a.singleSession() {
				a.handOver(c)
			}
			a.post("connected", map[string]any{"pid": c.PID, "id": c.ID})
			a.postClients()
			for _, h := range a.hooks {
				if h.ClientConnected != nil {
					h.ClientConnected(c)
				}
			}
		},
		HTTP: a.httpHooks(),
		OnDisconnect: func(c mcp.ClientInfo) {
			a.log.Info("CLI disconnected", "client", c.ID, "pid", c.PID)
			if c.PID > 0 {
				a.post("disconnected", map[string]any{"pid": c.PID, "id": c.ID})
			}
			a.postClients()
			for _, h := range a.hooks {
				if h.ClientDisconnected != nil {
					h.ClientDisconnected(c)
				}
			}
		},
	}
	srv, err := a.newServer(cfg)
	if err != nil {
		return fmt.Errorf("create IDE server: %w", err)
	}
	for _, t := range a.Tools() {
		if err := srv.RegisterTool(t); err != nil {
			return fmt.Errorf("register tool %s: %w", t.Name, err)
		}
	}
	for _, h := range a.hooks {
		if h.Methods != nil {
			for name, m := range h.Methods() {
				srv.HandleMethod(name, m)
			}
		}
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("start IDE server: %w", err)
	}
	a.srv = srv
	a.params = p
	a.ws.SetLockWriter(srv.SetWorkspaceFolders, func(err error) {
		a.log.Error("rewrite lock file with workspace folders", "err", err)
	})
	a.log.Info("IDE server listening", "port", srv.Port(), "lock", srv.LockPath())
	for _, h := range a.hooks {
		if h.ServerStarted != nil {
			h.ServerStarted()
		}
	}
	return nil
}

// Tools are the IDE server's tools, as the features give them now.
func (a *App) Tools() []mcp.Tool {
	var out []mcp.Tool
	for _, h := range a.hooks {
		if h.Tools != nil {
			out = append(out, h.Tools()...)
		}
	}
	return out
}

// Close code and reason that make the CLI stop and say it was replaced
// (PROTOCOL.md §2).
const (
	closeReplaced       = 4001
	closeReplacedReason = "Another Claude Code session connected to this IDE"
)

// handOver closes every CLI but newest with 4001. It runs from an mcp hook,
// which must not block: the closing happens on a goroutine the App owns.
func (a *App) handOver(newest mcp.ClientInfo) {
	srv := a.Server()
	if srv == nil {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for _, c := range srv.Clients() {
			if c.ID == newest.ID || c.PID == 0 {
				continue
			}
			a.log.Info("single_session: closing older CLI", "pid", c.PID)
			if err := srv.CloseClient(c.ID, closeReplaced, closeReplacedReason); err != nil {
				a.log.Debug("close older CLI", "err", err)
			}
		}
	}()
}

// handleProbe dials our own server as the CLI would (token, subprotocol,
// initialize, ping): :checkhealth's live round trip.
func (a *App) handleProbe(ctx context.Context, _ json.RawMessage) (any, error) {
	srv := a.Server()
	if srv == nil {
		return nil, errors.New("the IDE server is not running")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rtt, err := mcp.Probe(ctx, srv.Port(), srv.Token())
	if err != nil {
		return nil, fmt.Errorf("handshake with 127.0.0.1:%d failed: %w", srv.Port(), err)
	}
	return map[string]any{"port": srv.Port(), "rtt_ms": float64(rtt.Microseconds()) / 1000}, nil
}

// Server is the running IDE server, or nil.
func (a *App) Server() Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.srv
}

func (a *App) handleStop(ctx context.Context, _ json.RawMessage) (any, error) {
	return a.Status(), a.StopServer()
}

// StopServer closes the IDE server (connections get 1001) and removes its
// lock file. Stopping a stopped server is not an error.
func (a *App) StopServer() error {
	a.mu.Lock()
	srv := a.srv
	a.srv = nil
	a.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	// After the close: a folder push that raced it cannot mark the next
	// server's folders as pushed.
	a.ws.SetLockWriter(nil, nil)
	for _, h := range a.hooks {
		if h.ServerStopped != nil {
			h.ServerStopped()
		}
	}
	if err != nil {
		return fmt.Errorf("stop IDE server: %w", err)
	}
	a.log.Info("IDE server stopped")
	return nil
}

func (a *App) handleStatus(context.Context, json.RawMessage) (any, error) {
	return a.Status(), nil
}

// Status reports the server and its connected CLIs. A CLI is listed once its
// ide_connected notification told us its pid.
func (a *App) Status() Status {
	a.mu.Lock()
	srv := a.srv
	a.mu.Unlock()
	st := Status{Clients: []ClientView{}}
	if srv == nil {
		return st
	}
	st.Running = true
	st.Port = srv.Port()
	st.LockFile = srv.LockPath()
	st.Clients = clientViews(srv.Clients())
	return st
}

func clientViews(cs []mcp.ClientInfo) []ClientView {
	out := []ClientView{}
	for _, c := range cs {
		if c.PID > 0 {
			out = append(out, ClientView{ID: c.ID, PID: c.PID})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// cwdParams are cwd_changed's parameters.
type cwdParams struct {
	Cwd string `json:"cwd"`
}

func (a *App) handleCwdChanged(p cwdParams) {
	if p.Cwd == "" {
		a.log.Warn("cwd_changed: no cwd")
		return
	}
	a.mu.Lock()
	a.params.Cwd = p.Cwd
	a.mu.Unlock()
	a.ws.SetCwd(p.Cwd)
}

// post queues an event for Lua without blocking an mcp goroutine. When the
// queue is full the event is dropped: the next "clients" event carries the
// whole state again.
func (a *App) post(name string, data any) {
	select {
	case a.events <- event{name: name, data: data}:
	default:
		a.log.Warn("event queue full; dropping", "event", name)
	}
}

func (a *App) postClients() {
	a.clientsMu.Lock()
	defer a.clientsMu.Unlock()
	a.mu.Lock()
	srv := a.srv
	a.mu.Unlock()
	clients := []ClientView{}
	if srv != nil {
		clients = clientViews(srv.Clients())
	}
	a.post("clients", map[string]any{"clients": clients})
}

// pump delivers events to Lua in order, one call at a time.
func (a *App) pump() {
	defer a.wg.Done()
	for {
		select {
		case <-a.stop:
			return
		case ev := <-a.events:
			if a.ed == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := a.ed.Emit(ctx, ev.name, ev.data); err != nil {
				a.log.Debug("emit failed", "event", ev.name, "err", err)
			}
			cancel()
		}
	}
}

// Close stops the server (removing its lock) and the event pump.
func (a *App) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	a.cancel() // request_async calls end
	err := a.StopServer()
	for _, h := range a.hooks {
		if h.Close != nil {
			h.Close()
		}
	}
	close(a.stop)
	a.wg.Wait()
	return err
}

// ideName tells this Neovim apart from others in the CLI's /ide list: the
// project directory and the pid (two editors may share a directory).
func ideName(cwd string, pid int) string {
	base := filepath.Base(cwd)
	if base == "/" || base == "." || base == "" {
		base = cwd
	}
	return fmt.Sprintf("Neovim (%s, pid %d)", base, pid)
}

// The host.Host the features get -----------------------------------------

var _ host.Host = (*App)(nil)

// Logger is the application's logger.
func (a *App) Logger() *slog.Logger { return a.log }

// Emit queues an event for Lua (host.Host).
func (a *App) Emit(event string, data any) { a.post(event, data) }

// Broadcast sends a notification to every connected CLI; it returns how
// many received it (0 when the server is not running).
func (a *App) Broadcast(method string, params any) int {
	srv := a.Server()
	if srv == nil {
		return 0
	}
	return srv.Broadcast(method, params)
}

// Notify sends a notification to one CLI.
func (a *App) Notify(clientID, method string, params any) error {
	srv := a.Server()
	if srv == nil {
		return host.ErrNotRunning
	}
	return srv.Notify(clientID, method, params)
}

// Clients are the connected CLIs (none when the server is not running).
func (a *App) Clients() []mcp.ClientInfo {
	srv := a.Server()
	if srv == nil {
		return nil
	}
	return srv.Clients()
}

// Running reports whether the IDE server runs.
func (a *App) Running() bool { return a.Server() != nil }

// EditorPID is Neovim's pid from the last start request, or the host's own.
func (a *App) EditorPID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.params.PID > 0 {
		return a.params.PID
	}
	return os.Getpid()
}

// Workspace is the cwd, the folders and the file boundary.
func (a *App) Workspace() workspace.View { return a.ws }
