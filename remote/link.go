package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/display"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// Link is the feature that runs a session's CLI on the far side: Lua asks
// it (off the main loop) to open the Hold for the running IDE server and
// to give the terminal's command line; it sets the workspace's mapping for
// as long as the hold lives, closes the hold when the server stops or the
// application ends, and tells Lua ("remote.lost") when the channel ended
// on its own — the connection dropped, ssh was killed.
type Link struct {
	h host.Host
	p Peers

	startMu sync.Mutex // one start at a time

	mu     sync.Mutex
	cur    *active
	closed bool
	wg     sync.WaitGroup // watchers and closers
}

// Peers is what the Link needs of the application.
type Peers struct {
	// SetMap sets the workspace's far↔local mapping (the zero Map: none).
	SetMap func(pathmap.Map)
	// Lock is the running IDE server's port and its lock file's JSON
	// (an error when the server does not run).
	Lock func() (port int, lock []byte, err error)
	// Settings is the settings layer of terminal session id (the
	// sessions feature's HTTP hooks, to the far port farPort, with their
	// token), "" when the session has none (nil: no session has one).
	Settings func(id string, farPort int) (string, error)
}

type active struct {
	key     string
	t       Target
	m       pathmap.Map
	hold    *Hold
	port    int
	closing bool // we close it: its end is no loss
	// settings are the far paths of the sessions' settings layers
	// written over this hold, by session id (l.mu).
	settings map[string]string
}

// NewLink makes the feature.
func NewLink(h host.Host, p Peers) *Link { return &Link{h: h, p: p} }

// Name names the feature.
func (l *Link) Name() string { return "remote" }

// Hooks are the Lua requests and the server's lifetime.
func (l *Link) Hooks() host.Hooks {
	return host.Hooks{
		LuaRequests: map[string]host.LuaRequest{
			"remote_start": host.Request("remote_start", l.handleStart),
			"remote_stop":  host.Request("remote_stop", l.handleStop),
			"remote_check": host.Request("remote_check", l.handleCheck),
			"remote_state": host.Request("remote_state", l.handleState),
		},
		ServerStopped: func() { l.release(true) },
		Close:         l.close,
	}
}

// Params are a far side as Lua resolved the remote option (and a
// command's --ssh / --container / --devcontainer).
type Params struct {
	Kind      string   `json:"kind"`
	Dest      string   `json:"dest"`
	Dir       string   `json:"dir"`
	ConfigDir string   `json:"config_dir"`
	Bin       string   `json:"bin"`
	Claude    string   `json:"claude"`
	Options   []string `json:"options"`
	MapRemote string   `json:"map_remote"`
	MapLocal  string   `json:"map_local"`
	// Cwd is Neovim's directory: the local end of a mapping by default,
	// and the folder the devcontainer CLI is given.
	Cwd string `json:"cwd"`
	// Args are the CLI's arguments (the terminal's).
	Args []string `json:"args"`
	// Session is the terminal's session id (the sessions feature's), whose
	// settings layer goes to the far side ("": none).
	Session string `json:"session"`
}

// Resolve makes the Target and the mapping of p. A far directory without
// a declared mapping maps to Neovim's directory; with neither, the far
// side sees the same paths (a shared mount) and nothing is mapped.
func Resolve(p Params, home string) (Target, pathmap.Map, error) {
	t := Target{Kind: p.Kind, Dest: p.Dest, Dir: p.Dir, ConfigDir: p.ConfigDir, Bin: p.Bin, Claude: p.Claude, Options: p.Options}
	remote, local := p.MapRemote, p.MapLocal
	if t.Kind == Devcontainer {
		if t.Dest == "" {
			t.Dest = p.Cwd
		}
		if remote == "" || t.Dir == "" {
			d, err := ReadDevcontainer(t.Dest)
			if err != nil {
				return Target{}, pathmap.Map{}, err
			}
			if remote == "" {
				remote, local = d.Remote, d.Local
			}
			if t.Dir == "" {
				t.Dir = d.Folder
			}
		}
	}
	if remote == "" && local == "" && t.Dir != "" {
		remote = t.Dir
	}
	if remote != "" && local == "" {
		local = p.Cwd
	}
	if remote == "" && local != "" {
		return Target{}, pathmap.Map{}, fmt.Errorf("%w: map.local %q without map.remote", ErrTarget, local)
	}
	if err := t.Validate(); err != nil {
		return Target{}, pathmap.Map{}, err
	}
	if t.Dir != "" {
		t.Dir = path.Clean(t.Dir)
	}
	if !t.Remote() {
		return Target{}, pathmap.Map{}, fmt.Errorf("%w: no far side (ssh, container or devcontainer)", ErrTarget)
	}
	var m pathmap.Map
	if remote != "" {
		var err error
		if m, err = pathmap.New(remote, local, home); err != nil {
			return Target{}, pathmap.Map{}, fmt.Errorf("%w: the mapping: %w", ErrTarget, err)
		}
		if st, err := os.Stat(m.Local()); err != nil || !st.IsDir() {
			return Target{}, pathmap.Map{}, fmt.Errorf("%w: the mapping's local folder %s is not a directory here", ErrTarget, m.Local())
		}
		if t.Dir == "" {
			t.Dir = m.Remote()
		}
	}
	return t, m, nil
}

// Label is how messages name the far side: "ssh me@box:/w".
func (t Target) Label() string {
	s := t.Kind + " " + t.Dest
	if t.Kind == Devcontainer {
		s = "devcontainer of " + t.Dest
	}
	if t.Dir != "" && t.Kind != Devcontainer {
		s += ":" + t.Dir
	}
	return s
}

func (t Target) key() string {
	b, _ := json.Marshal(t)
	return string(b)
}

func home() string {
	h, _ := os.UserHomeDir()
	return h
}

// startTimeout bounds the hold's start: ssh's own connect and
// authentication, then the far shell writing the lock.
const startTimeout = 60 * time.Second

func (l *Link) handleStart(ctx context.Context, p Params) (any, error) {
	t, m, err := Resolve(p, home())
	if err != nil {
		return nil, err
	}
	a, err := l.Start(ctx, t, m)
	if err != nil {
		return nil, err
	}
	args, warning := l.farSettings(ctx, a, p.Session, p.Args)
	argv, err := t.Terminal(a.port, args)
	if err != nil {
		return nil, err
	}
	res := map[string]any{
		"argv": argv, "label": display.Line(t.Label(), 300), "port": a.port,
		"far": m.Remote(), "local": m.Local(), "hold": a.hold.Argv(), "hold_pid": a.hold.Pid(),
	}
	if warning != "" {
		res["warning"] = display.Line(warning, 600)
	}
	return res, nil
}

// farSettings writes the settings layer of terminal session id to the far
// side open in a and adds its --settings to args (the CLI keeps the last
// one: the layer carries the user's own). A layer that cannot be written
// leaves the session without hooks, and the warning says why.
func (l *Link) farSettings(ctx context.Context, a *active, id string, args []string) ([]string, string) {
	if id == "" || l.p.Settings == nil {
		return args, ""
	}
	layer, err := l.p.Settings(id, a.t.farPort(a.port))
	if err != nil {
		return args, "the session's state comes from its diffs only: " + err.Error()
	}
	if layer == "" {
		return args, ""
	}
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	path, err := a.t.WriteSettings(wctx, a.port, id, []byte(layer))
	cancel()
	if err != nil {
		return args, "the session's state comes from its diffs only: " + err.Error()
	}
	l.mu.Lock()
	if a.settings == nil {
		a.settings = map[string]string{}
	}
	a.settings[id] = path
	l.mu.Unlock()
	return append(append([]string{}, args...), "--settings", path), ""
}

// Forget removes the far settings layer of terminal session id, whose CLI
// ended, off the caller's goroutine (the far side may be slow to answer);
// the hold's end removes the ones left.
func (l *Link) Forget(id string) {
	l.mu.Lock()
	a := l.cur
	if a == nil || a.settings[id] == "" || l.closed {
		l.mu.Unlock()
		return
	}
	delete(a.settings, id)
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := a.t.RemoveSettings(ctx, a.port, id); err != nil {
			l.h.Logger().Warn("remote: the far settings layer stays until the hold ends", "session", id, "err", err)
		}
	}()
}

// Start opens the hold on t for the running IDE server (or keeps the one
// open on the same target) and sets the mapping m for its life.
func (l *Link) Start(ctx context.Context, t Target, m pathmap.Map) (*active, error) {
	l.startMu.Lock()
	defer l.startMu.Unlock()
	port, lock, err := l.p.Lock()
	if err != nil {
		return nil, err
	}
	key := t.key()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("nvim-claude is shutting down")
	}
	if a := l.cur; a != nil && a.key == key && a.port == port && a.hold.Err() == nil {
		l.mu.Unlock()
		return a, nil
	}
	l.mu.Unlock()
	l.release(false) // another target (or a server restarted): the old hold goes first
	l.p.SetMap(m)
	far, err := farLock(lock, m)
	if err != nil {
		l.p.SetMap(pathmap.Map{})
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	h, err := t.Start(sctx, port, far)
	cancel()
	if err != nil {
		l.p.SetMap(pathmap.Map{})
		return nil, fmt.Errorf("could not reach %s: %w", t.Label(), err)
	}
	a := &active{key: key, t: t, m: m, hold: h, port: port}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		h.Close()
		return nil, errors.New("nvim-claude is shutting down")
	}
	l.cur = a
	l.wg.Add(1)
	l.mu.Unlock()
	go l.watch(a)
	l.h.Logger().Info("remote hold open", "target", t.Label(), "argv", h.Argv())
	return a, nil
}

// farLock is the far side's lock: the local one with the far folders and
// pid 0 (the far holding shell puts its own).
func farLock(local []byte, m pathmap.Map) ([]byte, error) {
	var lk mcp.LockFile
	if err := json.Unmarshal(local, &lk); err != nil {
		return nil, fmt.Errorf("remote: the lock file: %w", err)
	}
	lk.PID = 0
	if m.Active() {
		var out []string
		for _, f := range lk.WorkspaceFolders {
			if p, err := m.ToRemote(f); err == nil {
				out = append(out, p)
			} else if strings.HasPrefix(f, "/") && (f == m.Remote() || strings.HasPrefix(f, strings.TrimSuffix(m.Remote(), "/")+"/")) {
				out = append(out, path.Clean(f)) // already far (the workspace wrote it so)
			}
		}
		if len(out) == 0 {
			out = []string{m.Remote()}
		}
		lk.WorkspaceFolders = out
	}
	if lk.WorkspaceFolders == nil {
		lk.WorkspaceFolders = []string{}
	}
	return json.Marshal(lk) // pid is the first field: {"pid":0,…
}

// watch waits for a's channel to end; an end we did not ask for is a
// loss, which Lua hears about.
func (l *Link) watch(a *active) {
	defer l.wg.Done()
	<-a.hold.Done()
	l.mu.Lock()
	lost := !a.closing
	if l.cur == a {
		l.cur = nil
	}
	l.mu.Unlock()
	if !lost {
		return
	}
	l.p.SetMap(pathmap.Map{})
	why := "the channel ended"
	if err := a.hold.Err(); err != nil {
		why = err.Error()
	}
	l.h.Logger().Warn("remote hold lost", "target", a.t.Label(), "err", why)
	l.h.Emit("remote.lost", map[string]any{
		"label":   display.Line(a.t.Label(), 300),
		"message": display.Line(why, 600),
	})
}

// release closes the current hold: at once when async (the server's stop
// runs on Lua's request; closing waits on the far side), else before it
// returns.
func (l *Link) release(async bool) {
	l.mu.Lock()
	a := l.cur
	l.cur = nil
	if a != nil {
		a.closing = true
	}
	if a != nil && async {
		l.wg.Add(1)
	}
	l.mu.Unlock()
	if a == nil {
		return
	}
	l.p.SetMap(pathmap.Map{})
	if async {
		go func() {
			defer l.wg.Done()
			a.hold.Close()
		}()
		return
	}
	a.hold.Close()
}

// Command is the command line that runs the CLI with args on the far side
// open now, in its directory, with env (not secret: it is on the command
// line): a chat's stream-json, over a channel of its own.
func (l *Link) Command(args []string, env map[string]string) ([]string, error) {
	l.mu.Lock()
	a := l.cur
	l.mu.Unlock()
	if a == nil {
		return nil, errors.New("no far side is open (the remote option, or :ClaudeChat --ssh …)")
	}
	return a.t.Exec(append([]string{a.t.claude()}, args...), env, false, 0)
}

func (l *Link) handleStop(context.Context, struct{}) (any, error) {
	l.release(true)
	return map[string]any{}, nil
}

func (l *Link) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.release(false)
	l.wg.Wait()
}

// handleState says whether a far session is open, and where.
func (l *Link) handleState(context.Context, struct{}) (any, error) {
	l.mu.Lock()
	a := l.cur
	l.mu.Unlock()
	if a == nil {
		return map[string]any{"active": false}, nil
	}
	return map[string]any{"active": true, "label": display.Line(a.t.Label(), 300), "far": a.m.Remote(), "local": a.m.Local(),
		"hold_pid": a.hold.Pid()}, nil
}

// Check is :checkhealth's look at a far side: each step's finding, and
// the fix when it failed.
type Check struct {
	Target  string `json:"target"`
	Engine  string `json:"engine,omitempty"`
	Map     string `json:"map,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Step    string `json:"step,omitempty"` // which step failed: settings, engine, map, far
}

func (l *Link) handleCheck(ctx context.Context, p Params) (any, error) {
	return CheckTarget(ctx, p, home()), nil
}

// CheckTarget checks p step by step: the settings and the mapping, the
// engine's program here, then the connection and the far CLI's version.
func CheckTarget(ctx context.Context, p Params, home string) Check {
	c := Check{Target: p.Kind + " " + p.Dest}
	t, m, err := Resolve(p, home)
	if err != nil {
		c.Step, c.Error = "settings", display.Line(err.Error(), 600)
		c.Fix = "fix the remote option in setup() (:help nvim-claude-containers)"
		if errors.Is(err, ErrNoDevcontainer) {
			c.Fix = "add .devcontainer/devcontainer.json, or set remote = { container = \"name\" } or { ssh = \"user@host\" }"
		}
		return c
	}
	c.Target = display.Line(t.Label(), 300)
	if m.Active() {
		c.Map = display.Line(m.Remote()+" (far) = "+m.Local()+" (here)", 600)
	}
	bin, err := exec.LookPath(t.bin())
	if err != nil {
		c.Step, c.Error = "engine", display.Line(fmt.Sprintf("%s not found: %v", t.bin(), err), 600)
		c.Fix = map[string]string{
			SSH:          "install OpenSSH's client (ssh)",
			Docker:       "install docker, or set remote.runtime = \"podman\"",
			Podman:       "install podman, or set remote.runtime = \"docker\"",
			Devcontainer: "npm install -g @devcontainers/cli",
		}[t.Kind]
		if t.Bin != "" {
			c.Fix = "set remote.bin to the program's path"
		}
		return c
	}
	c.Engine = display.Line(bin, 300)
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := t.Version(vctx)
	if err != nil {
		c.Step, c.Error = "far", display.Line(err.Error(), 600)
		c.Fix = "check that `" + display.Line(strings.Join(append([]string{t.bin()}, farHint(t)...), " "), 200) +
			" claude --version` works in a shell (keys, the container running, the CLI installed there: npm install -g @anthropic-ai/claude-code; or set remote.claude to its far path)"
		return c
	}
	c.Version = display.Line(v, 200)
	return c
}

func farHint(t Target) []string {
	switch t.Kind {
	case SSH:
		return append(append([]string{}, t.Options...), t.Dest)
	case Devcontainer:
		return []string{"exec", "--workspace-folder", filepath.Clean(t.Dest)}
	default:
		return []string{"exec", t.Dest}
	}
}
