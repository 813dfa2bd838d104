// Package plugin is the nvim-claude application: it owns the IDE server's
// lifetime, the tools the Claude Code CLI calls, and the handlers the Lua
// side calls (start, stop, status …).
//
// It reaches Neovim and the MCP server only through the small interfaces
// Editor and Server, which is also how its tests put a real child Neovim or a
// real server behind them.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Version is the version of the binary and of the Lua side it ships with
// (lua/claude/version.lua must match; a test checks it).
const Version = "0.1.0"

// Editor is what the application needs from Neovim: the core below plus
// one interface per feature area, each declared in that feature's file.
type Editor interface {
	// Emit hands an event to the Lua side (state for status(), User autocmds).
	Emit(ctx context.Context, event string, data any) error
	// Notify shows a message to the user (level: vim.log.levels).
	Notify(ctx context.Context, msg string, level int) error

	selectionEditor
	contextEditor
	diffEditor
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
	Editor Editor
	Logger *slog.Logger
	// NewServer builds the MCP server; nil means mcp.NewServer.
	NewServer func(cfg mcp.Config) (Server, error)
}

// App is the running application. Its zero value is not usable; call New.
type App struct {
	ed        Editor
	log       *slog.Logger
	newServer func(cfg mcp.Config) (Server, error)

	events chan event // hook → Lua, delivered in order by pump
	// clientsMu makes a "clients" event's snapshot and its place in the
	// queue one step: a connect and a disconnect on two connections (the
	// single-session hand-over) must not queue their snapshots in the
	// other order, which left Lua listing a CLI that was gone.
	clientsMu sync.Mutex
	stop      chan struct{}  // closed by Close
	wg        sync.WaitGroup // pump

	components []component
	// ctx is the editor-context component: the workspace folders.
	ctx *editorContext
	// boundary is what every file a client names goes through
	// (workspace.Boundary); its settings come with the start request.
	boundary *workspace.Boundary

	mu     sync.Mutex
	srv    Server
	params startParams
	closed bool
}

type event struct {
	name string
	data any
}

// New makes an App and starts its event pump. Close stops it.
func New(opts Options) *App {
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
		log:       log,
		newServer: newServer,
		events:    make(chan event, 256),
		stop:      make(chan struct{}),
		boundary:  workspace.NewBoundary(workspace.Settings{}),
	}
	a.components = a.newComponents()
	a.wg.Add(1)
	go a.pump()
	return a
}

// newComponents builds the feature areas, each defined in its own file.
func (a *App) newComponents() []component {
	a.ctx = newContext(a)
	return []component{
		newSelection(a),
		a.ctx,
		newDiffs(a),
		newKernels(a),
		newEdtools(a),
		newChats(a),
	}
}

// Register installs the handlers Lua calls.
func (a *App) Register(r Registrar) error {
	reqs := map[string]func(context.Context, json.RawMessage) (any, error){
		"start":  a.handleStart,
		"stop":   a.handleStop,
		"status": a.handleStatus,
		"probe":  a.handleProbe,
	}
	nots := map[string]func(json.RawMessage){
		"cwd_changed": a.handleCwdChanged,
	}
	for _, c := range a.components {
		if p, ok := c.(luaHandlerProvider); ok {
			for name, h := range p.luaRequests() {
				if _, dup := reqs[name]; dup {
					return fmt.Errorf("%s: Lua request %q registered twice", c.name(), name)
				}
				reqs[name] = h
			}
			for name, h := range p.luaNotifications() {
				if _, dup := nots[name]; dup {
					return fmt.Errorf("%s: Lua notification %q registered twice", c.name(), name)
				}
				nots[name] = h
			}
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

// startParams is what Lua sends with "start".
type startParams struct {
	PID       int    `json:"pid"`        // Neovim's pid: the lock must name the long-lived editor
	Cwd       string `json:"cwd"`        // workspace folder
	ConfigDir string `json:"config_dir"` // where the CLI looks for locks
	IDEName   string `json:"ide_name"`   // optional override
	// SingleSession hands the editor to the newest CLI: older ones are
	// closed with code 4001, which the CLI shows as "switched to another
	// Claude Code session" and does not reconnect.
	SingleSession bool `json:"single_session"`
	// Security is setup()'s security table, resolved by Lua (the one
	// source of the defaults): the file boundary's settings.
	Security securityParams `json:"security"`
}

// securityParams are the boundary's options as Lua sends them.
type securityParams struct {
	Deny      []string `json:"deny"`
	AllowHome bool     `json:"allow_home"`
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

func (a *App) handleStart(ctx context.Context, raw json.RawMessage) (any, error) {
	var p startParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("start: bad parameters: %w", err)
	}
	if p.PID <= 0 || p.Cwd == "" || p.ConfigDir == "" {
		return nil, errors.New("start: pid, cwd and config_dir are required")
	}
	if err := a.Start(ctx, p); err != nil {
		return nil, err
	}
	return a.Status(), nil
}

// Start starts the IDE server if it is not running. A running server is left
// as it is (the CLI may be connected to it).
func (a *App) Start(ctx context.Context, p startParams) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("nvim-claude is shutting down")
	}
	// setup() may have run again since the last start: the boundary takes
	// the options of every start request.
	a.boundary.Update(workspace.Settings{Deny: p.Security.Deny, AllowHome: p.Security.AllowHome})
	if a.srv != nil {
		return nil
	}
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
		ServerVersion:    Version,
		Logger:           a.log.With("component", "mcp"),
		OnIDEConnected: func(c mcp.ClientInfo) {
			a.log.Info("CLI connected", "client", c.ID, "pid", c.PID)
			if p.SingleSession {
				a.handOver(c)
			}
			a.post("connected", map[string]any{"pid": c.PID, "id": c.ID})
			a.postClients()
			for _, comp := range a.components {
				if o, ok := comp.(connectionObserver); ok {
					o.clientConnected(c)
				}
			}
		},
		OnDisconnect: func(c mcp.ClientInfo) {
			a.log.Info("CLI disconnected", "client", c.ID, "pid", c.PID)
			if c.PID > 0 {
				a.post("disconnected", map[string]any{"pid": c.PID, "id": c.ID})
			}
			a.postClients()
			for _, comp := range a.components {
				if o, ok := comp.(connectionObserver); ok {
					o.clientDisconnected(c)
				}
			}
		},
	}
	srv, err := a.newServer(cfg)
	if err != nil {
		return fmt.Errorf("create IDE server: %w", err)
	}
	for _, c := range a.components {
		if tp, ok := c.(toolProvider); ok {
			for _, t := range tp.tools() {
				if err := srv.RegisterTool(t); err != nil {
					return fmt.Errorf("%s: register tool %s: %w", c.name(), t.Name, err)
				}
			}
		}
		if mp, ok := c.(methodProvider); ok {
			for name, h := range mp.methods() {
				srv.HandleMethod(name, h)
			}
		}
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("start IDE server: %w", err)
	}
	a.srv = srv
	a.params = p
	a.log.Info("IDE server listening", "port", srv.Port(), "lock", srv.LockPath())
	for _, c := range a.components {
		if o, ok := c.(serverObserver); ok {
			o.serverStarted()
		}
	}
	return nil
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
	srv := a.server()
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
	srv := a.server()
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

// server is the running IDE server, or nil.
func (a *App) server() Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.srv
}

// broadcast sends a notification to every connected CLI; it returns how
// many received it (0 when the server is not running).
func (a *App) broadcast(method string, params any) int {
	srv := a.server()
	if srv == nil {
		return 0
	}
	return srv.Broadcast(method, params)
}

// workspaceDir is the editor's global working directory as Lua last told us.
func (a *App) workspaceDir() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.params.Cwd
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
	for _, c := range a.components {
		if o, ok := c.(serverObserver); ok {
			o.serverStopped()
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

func (a *App) handleCwdChanged(raw json.RawMessage) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.Cwd == "" {
		a.log.Warn("cwd_changed: bad parameters", "err", err)
		return
	}
	a.mu.Lock()
	srv := a.srv
	a.params.Cwd = p.Cwd
	a.mu.Unlock()
	if srv == nil {
		return
	}
	a.refreshWorkspaceFolders()
}

// workspaceFoldersProvider is a component that knows more workspace folders
// than the cwd (e.g. those of attached language servers).
type workspaceFoldersProvider interface {
	workspaceFolders() []string
}

// refreshWorkspaceFolders rewrites the lock file's workspaceFolders: the
// cwd, plus what components add.
func (a *App) refreshWorkspaceFolders() {
	srv := a.server()
	if srv == nil {
		return
	}
	folders := []string{a.workspaceDir()}
	for _, c := range a.components {
		if p, ok := c.(workspaceFoldersProvider); ok {
			folders = p.workspaceFolders()
			break
		}
	}
	if err := srv.SetWorkspaceFolders(folders); err != nil {
		a.log.Error("rewrite lock file", "err", err)
	}
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
	err := a.StopServer()
	for _, c := range a.components {
		if cl, ok := c.(closer); ok {
			cl.close()
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
