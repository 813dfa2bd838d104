package chatpanel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/display"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/verdict"
)

// Editor is what the chat panel needs from Neovim: events delivered to
// require("claude.chat") in order.
type Editor interface {
	Emit(ctx context.Context, event string, data any) error
}

// Reviewer is the diff review the chat's edit permissions open
// (diff.Reviews).
type Reviewer interface {
	// Begin registers a proposal's review at once (a decision from the
	// chat finds it from then on); its Wait shows it and waits for the
	// user's verdict.
	Begin(r verdict.Request) verdict.Pending
	// DecideOwned ends owner's pending diff named tabName as if the user
	// had decided in Neovim; false when none was pending.
	DecideOwned(ctx context.Context, owner, tabName string, v verdict.Verdict) bool
}

// EditorTools is the `nvim` MCP server a chat's CLI may be given
// (edtools.Tools): its --mcp-config JSON and socket, when it runs.
type EditorTools interface {
	Relay() (mcpConfig, socket string, ok bool)
}

// Peers are what the chat panel uses of other features, wired by app.
type Peers struct {
	Review Reviewer
	Tools  EditorTools
	// Sessions, when set, hears every chat's events (the sessions
	// dashboard, issue 20).
	Sessions SessionWatch
}

// SessionWatch hears what a chat tells Lua (the event's name and data,
// which it must not keep or change); it runs on the chat's goroutines and
// must not block.
type SessionWatch interface {
	ChatEvent(id, cwd, name string, data map[string]any)
}

// chatStartTimeout bounds a chat's startup (process + initialize), which
// happens in the background; chatRequestTimeout any request to its CLI.
const (
	chatStartTimeout   = 15 * time.Second
	chatRequestTimeout = 30 * time.Second
)

// Panel is the feature for the native chat panel (issue 10): one Claude
// CLI in stream-json mode per chat, its events delivered to
// require("claude.chat") in order.
type Panel struct {
	// startTimeout bounds a CLI's start (tests shorten it); 0 means
	// chatStartTimeout.
	startTimeout time.Duration

	h     host.Host
	ed    Editor
	log   *slog.Logger
	peers Peers

	mu     sync.Mutex
	seq    int
	byID   map[string]*chatProc
	closed bool
	wg     sync.WaitGroup // chat_close goroutines
}

// New makes the chat panel; a chat starts with chat_open. ed may be nil
// (tests): events then go nowhere.
func New(h host.Host, ed Editor, peers Peers) *Panel {
	return &Panel{h: h, ed: ed, log: h.Logger().With("feature", "chat"), peers: peers, byID: map[string]*chatProc{}}
}

// Name names the feature.
func (c *Panel) Name() string { return "chat" }

// Hooks are the feature's Lua handlers.
func (c *Panel) Hooks() host.Hooks {
	return host.Hooks{LuaRequests: c.luaRequests(), Close: c.close}
}

func (c *Panel) luaRequests() map[string]host.LuaRequest {
	return map[string]host.LuaRequest{
		"chat_open":       host.Request("chat_open", c.handleOpen),
		"chat_send":       withChat(c, "chat_send", (*chatProc).handleSend),
		"chat_interrupt":  withChat(c, "chat_interrupt", func(ch *chatProc, ctx context.Context, _ idParams) (any, error) { return ch.handleInterrupt(ctx) }),
		"chat_set_mode":   withChat(c, "chat_set_mode", (*chatProc).handleSetMode),
		"chat_set_model":  withChat(c, "chat_set_model", (*chatProc).handleSetModel),
		"chat_permission": withChat(c, "chat_permission", (*chatProc).handlePermission),
		"chat_dialog":     withChat(c, "chat_dialog", (*chatProc).handleDialog),
		"chat_close":      host.Request("chat_close", c.handleClose),
		"chat_list":       c.handleList,
		"chat_sessions":   host.Request("chat_sessions", c.handleSessions),
		"chat_history":    host.Request("chat_history", c.handleHistory),
		"chat_rewind":     withChat(c, "chat_rewind", func(ch *chatProc, _ context.Context, p rewindParams) (any, error) { return ch.handleRewind(p) }),
		"chat_fork":       host.Request("chat_fork", c.handleFork),
		"chat_plan":       withChat(c, "chat_plan", func(ch *chatProc, ctx context.Context, _ idParams) (any, error) { return ch.handlePlan(ctx) }),
	}
}

// get finds a chat by id.
func (c *Panel) get(id string) (*chatProc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.byID[id]
	if ch == nil {
		return nil, fmt.Errorf("no chat with id %q", id)
	}
	return ch, nil
}

// idParams name a chat; every per-chat request's parameters embed them.
type idParams struct {
	ID string `json:"id"`
}

func (p idParams) chatID() string { return p.ID }

// withChat makes the Lua handler of a per-chat request: its parameters
// are decoded once (host.Request), the chat is found by their id and h gets
// both, with a timeout, as Lua waits for the answer.
func withChat[P interface{ chatID() string }](c *Panel, name string, h func(*chatProc, context.Context, P) (any, error)) host.LuaRequest {
	return host.Request(name, func(ctx context.Context, p P) (any, error) {
		ch, err := c.get(p.chatID())
		if err != nil {
			return nil, err
		}
		if err := ch.ready(); err != nil {
			return nil, err
		}
		// A CLI that never answers a control request must not hang Neovim.
		ctx, cancel := context.WithTimeout(ctx, chatRequestTimeout)
		defer cancel()
		return h(ch, ctx, p)
	})
}

// openParams are chat_open's parameters.
type openParams struct {
	Cwd             string            `json:"cwd"`
	Mode            string            `json:"mode"`
	Model           string            `json:"model"`
	Effort          string            `json:"effort"`
	Resume          string            `json:"resume"`
	Fork            bool              `json:"fork"`
	EditorTools     bool              `json:"editor_tools"`
	AllowedTools    []string          `json:"allowed_tools"`
	DisallowedTools []string          `json:"disallowed_tools"`
	Env             map[string]string `json:"env"`
	Bin             string            `json:"bin"`
}

// chatMode reports whether the panel offers mode (a name of chat.Modes,
// or "default", the old name of manual).
func chatMode(mode string) bool {
	return chat.WireMode(mode) != ""
}

// modeList names the modes for an error message.
func modeList() string { return strings.Join(chat.Modes(), ", ") }

func (c *Panel) handleOpen(_ context.Context, p openParams) (any, error) {
	ch, err := c.open(p, nil)
	if err != nil {
		return nil, fmt.Errorf("could not open a chat: %w", err)
	}
	return ch.openResult(), nil
}

// open registers a chat and starts its CLI in the background (boot): it
// returns at once, with the chat "starting". after (may be nil) runs once
// the CLI has started, and may add fields to the "ready" event.
func (c *Panel) open(p openParams, after func(*chatProc, *chat.Session) (map[string]any, error)) (*chatProc, error) {
	if p.Cwd == "" || !filepath.IsAbs(p.Cwd) {
		return nil, fmt.Errorf("cwd must be an absolute path, got %q", p.Cwd)
	}
	if st, err := os.Stat(p.Cwd); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("cwd %s is not a directory", p.Cwd)
	}
	if p.Mode != "" && !chatMode(p.Mode) {
		return nil, fmt.Errorf("unknown mode %q (want one of %s)", p.Mode, modeList())
	}
	p.Mode = chat.ModeName(p.Mode)
	if p.Fork && p.Resume == "" {
		return nil, errors.New("fork needs resume (the session to fork)")
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("nvim-claude is shutting down")
	}
	c.seq++
	id := strconv.Itoa(c.seq)
	c.mu.Unlock()

	env := os.Environ()
	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+p.Env[k])
	}
	ch := &chatProc{
		c: c, id: id, params: p, env: env, configDir: chat.ConfigDir(env),
		state: "starting", mode: p.Mode, model: p.Model, booted: make(chan struct{}),
		perms: map[string]*chatPerm{}, dialogs: map[string]dialogState{}, streamed: map[string]bool{}, cpSeen: map[string]bool{},
		toolUses: map[string]toolUse{}, taskNames: map[string]string{},
	}
	if ch.mode == "" {
		ch.mode = "manual" // until the CLI says which its settings chose
	}
	ch.ctx, ch.cancel = context.WithCancel(context.Background())
	ch.out = newOutbox(func(ctx context.Context, name string, data any) error {
		if c.ed == nil {
			return nil
		}
		return c.ed.Emit(ctx, name, data)
	}, c.log.Warn)
	model := p.Model
	if model == "default" {
		model = "" // the CLI's own default
	}
	// The editor tools (mcp__nvim__*) reach the chat's model the way they
	// reach the terminal's CLI: the stdio relay in --mcp-config, and the
	// socket in the relay's environment. (The CLI drops ws-ide servers in
	// stream-json mode, STREAM-JSON.md §8.)
	var mcpConfig, toolsNote string
	if p.EditorTools {
		if cfg, sock, ok := c.peers.Tools.Relay(); ok {
			mcpConfig = cfg
			env = append(env, "NVIM_CLAUDE_MCP_SOCKET="+sock)
		} else {
			toolsNote = "The editor tools (mcp__nvim__*) are not offered to this chat: they are served " +
				"while the IDE server runs (:ClaudeServe or :ClaudeStart) with editor_tools enabled."
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		ch.cancel()
		return nil, errors.New("nvim-claude is shutting down")
	}
	c.byID[id] = ch
	c.wg.Add(1)
	c.mu.Unlock()
	ch.out.start()
	ch.pushStatus()
	go func() {
		defer c.wg.Done()
		ch.boot(chat.Options{
			Bin: p.Bin, Cwd: p.Cwd, Env: env, Mode: p.Mode, Model: model, Effort: p.Effort,
			Resume: p.Resume, Fork: p.Fork, AllowedTools: p.AllowedTools, DisallowedTools: p.DisallowedTools,
			MCPConfig: mcpConfig, OnEvent: ch.onEvent, DialogKinds: dialogKinds(),
		}, toolsNote, after)
	}()
	return ch, nil
}

// boot starts the chat's CLI off Lua's request (chat_open has answered
// with the chat in state "starting"): a "ready" event (the CLI's models
// and commands, and what after adds) or a "failed" one (what to check)
// tells Lua how it went. Closing the chat meanwhile cancels the start.
func (ch *chatProc) boot(o chat.Options, toolsNote string, after func(*chatProc, *chat.Session) (map[string]any, error)) {
	defer close(ch.booted)
	limit := ch.c.startLimit()
	sctx, cancel := context.WithTimeout(ch.ctx, limit)
	sess, err := chat.Start(sctx, o)
	timedOut := sctx.Err() == context.DeadlineExceeded
	cancel()
	if err != nil {
		if ch.ctx.Err() != nil {
			return // closed while starting
		}
		ch.fail(startFailure(o.Bin, err, timedOut, limit))
		return
	}
	ch.mu.Lock()
	if o.Mode == "" && sess.Init().Mode != "" {
		ch.mode = chat.ModeName(sess.Init().Mode)
	}
	if ch.model == "" {
		ch.model = "default"
	}
	ch.sessionID = sess.SessionID()
	ch.mu.Unlock()
	if ch.ctx.Err() != nil {
		sess.Kill() // closed while starting
		return
	}
	ready := ch.readyEvent(sess)
	if after != nil {
		extra, err := after(ch, sess)
		if err != nil {
			sess.Kill()
			<-sess.Done()
			ch.fail(err.Error())
			return
		}
		for k, v := range extra {
			ready[k] = v
		}
	}
	ch.mu.Lock()
	ch.sess = sess
	ch.state = "idle"
	ch.mu.Unlock()
	if ch.ctx.Err() != nil {
		sess.Kill() // closed meanwhile: shutdown waits for booted, then for sess
		return
	}
	// The status (idle) first: whoever waits for "ready" finds the chat's
	// state already told.
	ch.pushStatus()
	ch.push("ready", ready)
	if toolsNote != "" {
		ch.system("warn", toolsNote)
	}
	ch.c.log.Info("chat started", "id", ch.id, "cwd", o.Cwd, "resume", o.Resume, "fork", o.Fork, "pid", sess.Init().PID)
}

// startLimit bounds a CLI's start.
func (c *Panel) startLimit() time.Duration {
	if c.startTimeout > 0 {
		return c.startTimeout
	}
	return chatStartTimeout
}

// fail ends a chat whose CLI did not start: Lua shows msg in its transcript.
func (ch *chatProc) fail(msg string) {
	ch.mu.Lock()
	ch.state = "failed"
	ch.failure = msg
	ch.mu.Unlock()
	ch.c.log.Warn("chat did not start", "id", ch.id, "err", msg)
	ch.push("failed", map[string]any{"message": shown(msg)})
	ch.pushStatus()
}

// startFailure says why a CLI did not start and what to check, in one
// sentence a person can act on.
func startFailure(bin string, err error, timedOut bool, limit time.Duration) string {
	if bin == "" {
		bin = "claude"
	}
	if timedOut {
		return fmt.Sprintf("The Claude CLI (%s) did not start within %s. Check chat.cmd, the CLI's version (%s --version) and :checkhealth claude.",
			bin, limit, bin)
	}
	return fmt.Sprintf("The Claude CLI (%s) did not start: %v. Check chat.cmd, the CLI's version (%s --version) and :checkhealth claude.", bin, err, bin)
}

func (c *Panel) handleClose(ctx context.Context, p idParams) (any, error) {
	ch, err := c.get(p.ID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	delete(c.byID, p.ID)
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		ch.shutdown(true)
	}()
	return map[string]any{}, nil
}

func (c *Panel) handleList(context.Context, json.RawMessage) (any, error) {
	c.mu.Lock()
	list := make([]*chatProc, 0, len(c.byID))
	for _, ch := range c.byID {
		list = append(list, ch)
	}
	c.mu.Unlock()
	sort.Slice(list, func(i, j int) bool {
		a, _ := strconv.Atoi(list[i].id)
		b, _ := strconv.Atoi(list[j].id)
		return a < b
	})
	out := []map[string]any{}
	for _, ch := range list {
		ch.mu.Lock()
		out = append(out, map[string]any{"id": ch.id, "cwd": ch.params.Cwd, "session_id": ch.sessionID,
			"state": ch.state, "mode": ch.mode, "model": ch.model})
		ch.mu.Unlock()
	}
	return map[string]any{"chats": out}, nil
}

// sessionsParams are chat_sessions' parameters.
type sessionsParams struct {
	Cwd       string `json:"cwd"`
	ConfigDir string `json:"config_dir"` // optional; default from the environment
}

func (c *Panel) handleSessions(_ context.Context, p sessionsParams) (any, error) {
	if p.Cwd == "" {
		return nil, errors.New("chat_sessions: cwd is required")
	}
	dir := p.ConfigDir
	if dir == "" {
		dir = chat.ConfigDir(os.Environ())
	}
	list, err := chat.ListSessions(dir, p.Cwd)
	if err != nil {
		return nil, fmt.Errorf("chat_sessions: %w", err)
	}
	return map[string]any{"sessions": list}, nil
}

// forkParams are chat_fork's parameters.
type forkParams struct {
	ID   string `json:"id"`
	UUID string `json:"uuid"`
}

func (c *Panel) handleFork(_ context.Context, p forkParams) (any, error) {
	src, err := c.get(p.ID)
	if err != nil {
		return nil, err
	}
	src.mu.Lock()
	op := src.params
	sid := src.sessionID
	op.Mode, op.Model = src.mode, src.model
	src.mu.Unlock()
	if sid == "" {
		return nil, errors.New("chat_fork: this chat has no session yet (send a message first)")
	}
	if op.Model == "default" {
		op.Model = ""
	}
	op.Resume, op.Fork = sid, true
	var after func(*chatProc, *chat.Session) (map[string]any, error)
	if p.UUID != "" {
		// Once the fork's CLI runs, its conversation goes back to the
		// message; a failure shows in the new chat (Lua has it by then).
		after = func(ch *chatProc, sess *chat.Session) (map[string]any, error) {
			rctx, cancel := context.WithTimeout(ch.ctx, chatRequestTimeout)
			defer cancel()
			resp, err := sess.Request(rctx, "rewind_conversation", map[string]any{"target_message_uuid": p.UUID})
			var r struct {
				Rewound     *bool  `json:"rewound"`
				PrefillText string `json:"prefillText"`
				Error       string `json:"error"`
			}
			if err == nil {
				_ = json.Unmarshal(resp, &r)
				if r.Rewound != nil && !*r.Rewound {
					err = fmt.Errorf("the CLI did not rewind (%s)", r.Error)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("the fork could not go back to the chosen message: %w", err)
			}
			ch.mu.Lock()
			ch.forkCut = p.UUID
			ch.mu.Unlock()
			return map[string]any{"prefill": r.PrefillText}, nil
		}
	}
	ch, err := c.open(op, after)
	if err != nil {
		return nil, fmt.Errorf("could not fork the chat: %w", err)
	}
	return ch.openResult(), nil
}

func (c *Panel) close() {
	c.mu.Lock()
	c.closed = true
	list := make([]*chatProc, 0, len(c.byID))
	for _, ch := range c.byID {
		list = append(list, ch)
	}
	c.byID = map[string]*chatProc{}
	c.mu.Unlock()
	for _, ch := range list {
		ch.shutdown(false)
	}
	c.wg.Wait()
}

// chatProc is one chat: its CLI session and what the panel shows of it.
type chatProc struct {
	c         *Panel
	id        string
	params    openParams
	env       []string
	configDir string
	out       *outbox

	ctx    context.Context // ends when the chat ends: stops its reviews
	cancel context.CancelFunc
	wg     sync.WaitGroup // review goroutines

	booted chan struct{} // closed when boot returns

	mu        sync.Mutex
	sess      *chat.Session // nil until the CLI has started
	state     string        // starting, idle, running, exited or failed
	failure   string        // why it failed to start
	mode      string
	model     string
	sessionID string
	cost      float64
	ctxTokens int
	ctxWindow int
	perms     map[string]*chatPerm   // open permission requests by request id
	dialogs   map[string]dialogState // open CLI dialogs by request id
	note      string                 // "the user edited your proposal", for the next send
	turnUUID  string                 // the running turn's user message
	lastSent  string
	sent      []string // user message uuids in send order
	forkCut   string   // a fork's rewind target: history stops before it
	// interrupted: this turn was interrupted and the user was told so.
	interrupted bool
	taskNames   map[string]string // running background tasks by id, as shown
	streamed    map[string]bool
	// checkpoints: each file's contents before the first edit of a turn.
	checkpoints []checkpoint
	cpSeen      map[string]bool // turn uuid + "\x00" + path
	toolUses    map[string]toolUse
}

// noteInterrupted tells the user the turn was interrupted, once a turn.
func (ch *chatProc) noteInterrupted() {
	ch.mu.Lock()
	said := ch.interrupted
	ch.interrupted = true
	ch.mu.Unlock()
	if !said {
		ch.system("info", "Interrupted.")
	}
}

// wasInterrupted reports whether this turn was interrupted (forgotten
// when the next turn starts).
func (ch *chatProc) wasInterrupted() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.interrupted
}

// toolUse is what a tool result needs to know of its call.
type toolUse struct {
	name, path, turn string // path: the file an edit tool changes
	// todos: a TodoWrite's list, shown once the CLI ran the call (it
	// answers "No such tool available" when it has no TodoWrite, as
	// 2.1.331 in stream-json mode).
	todos []map[string]any
}

type checkpoint struct {
	turn     string
	path     string
	contents *string // nil: the file did not exist
}

// ready is nil once the chat's CLI has started, else why it cannot be
// asked yet.
func (ch *chatProc) ready() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch {
	case ch.sess != nil:
		return nil
	case ch.state == "failed":
		return errors.New("this chat's CLI did not start: " + ch.failure)
	}
	return errors.New("this chat is still starting; try again when its header says idle")
}

func (ch *chatProc) session() *chat.Session {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.sess
}

// openResult is chat_open's answer: the chat, starting.
func (ch *chatProc) openResult() map[string]any {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return map[string]any{"id": ch.id, "cwd": ch.params.Cwd, "mode": ch.mode, "model": ch.model, "state": ch.state,
		"models": []map[string]any{}, "commands": []map[string]any{}, "modes": chat.Modes()}
}

// readyEvent is what Lua learns once the CLI has started: its models and
// commands, the session, the mode and the model.
func (ch *chatProc) readyEvent(sess *chat.Session) map[string]any {
	models := []map[string]any{}
	commands := []map[string]any{}
	for _, m := range sess.Init().Models {
		models = append(models, map[string]any{"value": m.Value, "display_name": m.DisplayName, "description": m.Description})
	}
	for _, cm := range sess.Init().Commands {
		commands = append(commands, map[string]any{"name": cm.Name, "description": cm.Description, "argument_hint": cm.ArgumentHint})
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	res := map[string]any{"mode": ch.mode, "model": ch.model, "models": models, "commands": commands, "modes": chat.Modes()}
	if ch.sessionID != "" {
		res["session_id"] = ch.sessionID
	}
	return res
}

// shutdown ends the chat: gracefully (end_session, stdin closed, kill after
// 3 s) or at once.
func (ch *chatProc) shutdown(graceful bool) {
	sess := ch.session()
	if sess == nil {
		// Still starting (boot gives up when ctx ends) or failed.
		ch.cancel()
		<-ch.booted
		sess = ch.session()
		if sess == nil {
			ch.wg.Wait()
			ch.out.halt()
			return
		}
	}
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = sess.Close(ctx)
		cancel()
	} else {
		sess.Kill()
	}
	<-sess.Done()
	ch.cancel()
	ch.wg.Wait()
	if graceful {
		select {
		case <-ch.out.done:
		case <-time.After(chatEmitTimeout):
			ch.out.halt()
		}
		return
	}
	ch.out.halt()
}

// push queues an event for Lua ("chat.<name>"), adding the chat id.
func (ch *chatProc) push(name string, data map[string]any) {
	data["id"] = ch.id
	if w := ch.c.peers.Sessions; w != nil {
		w.ChatEvent(ch.id, ch.params.Cwd, name, data)
	}
	ch.out.push("chat."+name, data)
}

func (ch *chatProc) pushStatus() {
	ch.mu.Lock()
	d := map[string]any{"state": ch.state, "mode": ch.mode, "model": ch.model, "cost_usd": ch.cost}
	if ch.sessionID != "" {
		d["session_id"] = ch.sessionID
	}
	if ch.ctxTokens > 0 {
		d["context_tokens"] = ch.ctxTokens
	}
	if ch.ctxWindow > 0 {
		d["context_window"] = ch.ctxWindow
	}
	ch.mu.Unlock()
	ch.push("status", d)
}

func (ch *chatProc) system(level, text string) {
	ch.push("system", map[string]any{"level": level, "text": shown(text)})
}

// onEvent translates the session's events; it runs on the session's
// reader goroutine and must not block.
func (ch *chatProc) onEvent(ev chat.Event) {
	switch e := ev.(type) {
	case chat.InitEvent:
		ch.mu.Lock()
		mode := chat.ModeName(e.PermissionMode)
		changed := e.SessionID != ch.sessionID || (mode != "" && mode != ch.mode)
		ch.sessionID = e.SessionID
		if mode != "" {
			ch.mode = mode
		}
		ch.mu.Unlock()
		if changed {
			ch.pushStatus()
		}
	case chat.StatusEvent:
		if e.PermissionMode != "" {
			ch.mu.Lock()
			mode := chat.ModeName(e.PermissionMode)
			changed := mode != ch.mode
			ch.mode = mode
			ch.mu.Unlock()
			if changed {
				ch.pushStatus()
			}
		}
		if e.Status == "compacting" {
			ch.system("info", "Compacting the conversation…")
		}
		if e.CompactResult != "" && e.CompactResult != "success" {
			ch.system("warn", "Compaction "+e.CompactResult)
		}
	case chat.DeltaEvent:
		if e.Kind != "text" && e.Kind != "thinking" {
			return
		}
		ch.mu.Lock()
		ch.streamed[e.MessageID] = true
		ch.mu.Unlock()
		key := fmt.Sprintf("%s\x00%d", e.MessageID, e.Index)
		ch.out.pushDelta("chat."+e.Kind, map[string]any{"id": ch.id, "message_id": e.MessageID, "index": e.Index}, key, e.Text)
	case chat.AssistantEvent:
		ch.onAssistant(e)
	case chat.ToolResultEvent:
		text := e.Text
		if len(text) > 8<<10 {
			text = text[:8<<10] + "\n… (cut)"
		}
		ch.mu.Lock()
		tu := ch.toolUses[e.ToolUseID]
		delete(ch.toolUses, e.ToolUseID)
		ch.mu.Unlock()
		if tu.path != "" && !e.IsError {
			// An edit nobody was asked about (acceptEdits, allow
			// always): the CLI reports what it replaced.
			ch.checkpointResult(tu, e.Structured)
		}
		ch.push("tool_result", map[string]any{"tool_use_id": e.ToolUseID, "is_error": e.IsError,
			"summary": resultSummary(e), "text": shown(text)})
		if tu.todos != nil && !e.IsError {
			ch.push("todos", map[string]any{"todos": tu.todos})
		}
		switch {
		case e.FilePath != "" && !e.IsError:
			ch.push("file_changed", map[string]any{"paths": []string{e.FilePath}})
		case tu.name == "Bash":
			// A command may have changed any file.
			ch.push("file_changed", map[string]any{"paths": []string{}, "all": true})
		}
	case chat.UserEvent:
		if strings.HasPrefix(e.Text, "[Request interrupted by user") {
			ch.noteInterrupted()
		}
	case chat.ResultEvent:
		// An interrupted turn ends as an error ("aborted_streaming"): the
		// user hears "Interrupted." once, and no error line.
		interrupted := ch.wasInterrupted() || strings.HasPrefix(e.TerminalReason, "aborted")
		if interrupted {
			ch.noteInterrupted() // the CLI's "[Request interrupted…" may come after
		}
		ch.mu.Lock()
		ch.toolUses = map[string]toolUse{} // a turn's results come before its end
		ch.state = "idle"
		// The CLI reports the session's running total; a turn's own cost
		// is the difference.
		turnCost := max(e.CostUSD-ch.cost, 0)
		ch.cost = e.CostUSD
		if e.ContextWindow > 0 {
			ch.ctxWindow = e.ContextWindow
		}
		if ch.ctxTokens == 0 {
			ch.ctxTokens = e.Usage.ContextTokens()
		}
		if e.SessionID != "" {
			ch.sessionID = e.SessionID
		}
		ch.mu.Unlock()
		ch.push("turn_done", map[string]any{"is_error": e.IsError && !interrupted, "interrupted": interrupted,
			"subtype": e.Subtype, "terminal_reason": e.TerminalReason, "result": e.Result,
			"cost_usd": turnCost, "session_cost_usd": e.CostUSD, "duration_ms": e.DurationMS})
		ch.push("file_changed", map[string]any{"paths": []string{}, "all": true})
		ch.pushStatus()
	case chat.SystemEvent:
		ch.onSystem(e)
	case chat.UndeclaredDialogEvent:
		// Left unanswered, as the CLI requires for a kind the chat did
		// not declare; shown so the user knows the CLI wanted something.
		ch.system("info", "The Claude CLI asked for a dialog the chat cannot show ("+display.Line(e.Kind, 60)+"); it was left unanswered.")
	case chat.ConversationResetEvent:
		// The new session id comes with the next init (status then).
		ch.system("info", "The conversation was cleared; a new session starts.")
	case chat.LifecycleEvent:
		ch.push("lifecycle", map[string]any{"uuid": e.UUID, "state": e.State})
		if e.State == "started" {
			ch.mu.Lock()
			ch.turnUUID = e.UUID
			ch.interrupted = false
			changed := ch.state != "running"
			ch.state = "running"
			ch.mu.Unlock()
			if changed {
				ch.pushStatus()
			}
		}
	case chat.PermissionRequestEvent:
		ch.onPermission(e)
	case chat.PermissionCancelEvent:
		ch.onPermissionCancel(e)
	case chat.DialogRequestEvent:
		ch.onDialog(e)
	case chat.DialogCancelEvent:
		ch.onDialogCancel(e)
	case chat.ExitEvent:
		ch.onExit(e)
	}
}

func (ch *chatProc) onAssistant(e chat.AssistantEvent) {
	if e.Usage.InputTokens > 0 && e.ParentToolUseID == "" {
		ch.mu.Lock()
		ch.ctxTokens = e.Usage.ContextTokens()
		ch.mu.Unlock()
	}
	ch.mu.Lock()
	streamed := ch.streamed[e.MessageID]
	ch.mu.Unlock()
	for i, b := range e.Blocks {
		switch b.Type {
		case "text", "thinking":
			if streamed || e.ParentToolUseID != "" {
				continue // already sent as deltas
			}
			text := b.Text
			if b.Type == "thinking" {
				text = b.Thinking
			}
			ch.push(b.Type, map[string]any{"message_id": e.MessageID, "index": i, "delta": text})
		case "tool_use":
			// Every edit is checkpointed, a subagent's too: when it is
			// allowed (chat_permission) or from its result (unasked).
			tu := toolUse{name: b.Name, path: chat.EditPath(b.Name, b.Input)}
			if b.Name == "TodoWrite" && e.ParentToolUseID == "" {
				tu.todos = []map[string]any{}
				for _, t := range chat.Todos(b.Input) {
					tu.todos = append(tu.todos, map[string]any{"content": t.Content, "status": t.Status, "active_form": t.ActiveForm})
				}
			}
			ch.mu.Lock()
			tu.turn = ch.turnUUID
			if tu.turn == "" {
				tu.turn = ch.lastSent
			}
			ch.toolUses[b.ID] = tu
			ch.mu.Unlock()
			if e.ParentToolUseID != "" {
				continue // a subagent's own tools are not shown
			}
			ch.push("tool_use", map[string]any{"tool_use_id": b.ID, "name": b.Name, "input": rawOrEmpty(b.Input),
				"summary": summaryOf(b.Name, b.Input, ch.params.Cwd)})
		}
	}
}

func (ch *chatProc) onSystem(e chat.SystemEvent) {
	var f struct {
		Attempt     int    `json:"attempt"`
		MaxRetries  int    `json:"max_retries"`
		ErrorStatus any    `json:"error_status"`
		Error       any    `json:"error"`
		ToolName    string `json:"tool_name"`
		Message     string `json:"message"`
		// background_tasks_changed: the tasks running now (CLI 2.1.331).
		Tasks []struct {
			TaskID       string `json:"task_id"`
			TaskType     string `json:"task_type"`
			Description  string `json:"description"`
			SubagentType string `json:"subagent_type"`
		} `json:"tasks"`
		// task_notification: one task ended.
		Status          string `json:"status"`
		Summary         string `json:"summary"`
		SummaryIsReport bool   `json:"summary_is_report"`
		TaskID          string `json:"task_id"`
	}
	_ = json.Unmarshal(e.Raw, &f)
	switch e.Subtype {
	case "api_retry":
		ch.system("warn", fmt.Sprintf("API error (%v); retry %d of %d", f.ErrorStatus, f.Attempt, f.MaxRetries))
	case "permission_denied":
		ch.system("warn", fmt.Sprintf("%s was denied: %s", f.ToolName, f.Message))
	case "compact_boundary":
		ch.system("info", "Conversation compacted.")
	case "api_error":
		ch.system("error", fmt.Sprintf("API error: %v", f.Error))
	case "background_tasks_changed":
		// The progress CLI 2.1.331 reports (it has no TodoWrite in
		// stream-json mode): its background commands and agents, shown
		// in the to-do window while they run.
		todos := []map[string]any{}
		names := map[string]string{}
		for _, t := range f.Tasks {
			what := t.Description
			switch t.TaskType {
			case "local_bash":
				what = "background command: " + what
			case "local_agent":
				kind := t.SubagentType
				if kind == "" {
					kind = "agent"
				}
				what = kind + " agent: " + what
			}
			names[t.TaskID] = what
			todos = append(todos, map[string]any{"content": what, "status": "in_progress", "active_form": what})
		}
		ch.mu.Lock()
		for id, n := range names {
			ch.taskNames[id] = n
		}
		ch.mu.Unlock()
		ch.push("todos", map[string]any{"todos": todos, "source": "tasks"})
	case "task_notification":
		ch.mu.Lock()
		name := ch.taskNames[f.TaskID]
		delete(ch.taskNames, f.TaskID)
		ch.mu.Unlock()
		if name == "" {
			name = "a background task"
		}
		text := fmt.Sprintf("%s: %s", name, f.Status)
		if f.Summary != "" && !f.SummaryIsReport {
			text = f.Summary // "Background command "bg" completed (exit code 0)"
		}
		level := "info"
		if f.Status != "completed" {
			level = "warn"
		}
		ch.system(level, text)
	}
}

func (ch *chatProc) onExit(e chat.ExitEvent) {
	ch.mu.Lock()
	if ch.sess == nil {
		// It never started (or its start failed): boot says so.
		ch.mu.Unlock()
		return
	}
	ch.state = "exited"
	perms := ch.perms
	ch.perms = map[string]*chatPerm{}
	ch.dialogs = map[string]dialogState{}
	ch.mu.Unlock()
	for _, p := range perms {
		p.stop()
	}
	ch.cancel()
	ch.push("exited", map[string]any{"code": e.Code, "stderr": shown(e.Stderr)})
	ch.pushStatus()
	ch.out.closeDrained()
	ch.c.log.Info("chat CLI exited", "id", ch.id, "code", e.Code)
}

func rawOrEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("{}")
	}
	return r
}

// resultSummary is a one-line summary of a tool result.
func resultSummary(e chat.ToolResultEvent) string {
	t := strings.TrimSpace(e.Text)
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[:i] + " …"
	}
	if r := []rune(t); len(r) > 100 {
		t = string(r[:100]) + "…"
	}
	if e.IsError {
		t = "error: " + t
	}
	return display.Line(t, 120)
}

// shown is text from outside (tool output, the CLI's messages) as lines
// a buffer can show: control characters made visible, runs of blank
// lines collapsed (saying so).
func shown(text string) string {
	if text == "" {
		return ""
	}
	return strings.Join(display.Lines(text, 0, 0), "\n")
}

// checkpoint keeps path's contents before the running turn first edits
// it. It reads the file now: call it only while the CLI waits for our
// permission answer (nothing has written the edit yet).
func (ch *chatProc) checkpoint(path string) {
	ch.mu.Lock()
	turn := ch.turnUUID
	if turn == "" {
		turn = ch.lastSent
	}
	ch.mu.Unlock()
	var contents *string
	if b, err := os.ReadFile(path); err == nil {
		s := string(b)
		contents = &s
	} else if !errors.Is(err, os.ErrNotExist) {
		ch.c.log.Warn("chat checkpoint", "path", path, "err", err)
		return
	}
	ch.addCheckpoint(turn, path, contents)
}

// checkpointResult keeps what an edit that was not asked about replaced:
// the result's originalFile (null for a file the edit created).
func (ch *chatProc) checkpointResult(tu toolUse, structured json.RawMessage) {
	var r map[string]json.RawMessage
	if json.Unmarshal(structured, &r) != nil || r == nil {
		return
	}
	orig, ok := r["originalFile"]
	var contents *string
	switch {
	case ok && string(orig) != "null":
		var s string
		if json.Unmarshal(orig, &s) != nil {
			return
		}
		contents = &s
	case ok, string(r["type"]) == `"create"`:
		// a new file
	default:
		ch.c.log.Warn("chat checkpoint: the result does not say what the edit replaced", "path", tu.path, "tool", tu.name)
		return
	}
	ch.addCheckpoint(tu.turn, tu.path, contents)
}

// addCheckpoint keeps the first checkpoint of path in turn.
func (ch *chatProc) addCheckpoint(turn, path string, contents *string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	key := turn + "\x00" + path
	if ch.cpSeen[key] {
		return
	}
	ch.cpSeen[key] = true
	ch.checkpoints = append(ch.checkpoints, checkpoint{turn: turn, path: path, contents: contents})
}

// rewindParams are chat_rewind's parameters.
type rewindParams struct {
	idParams
	UUID string `json:"uuid"`
	// Plan lists what the rewind would change and changes nothing (not
	// even the files the host restores itself): the user confirms first.
	Plan bool `json:"plan"`
}

func (ch *chatProc) handleRewind(p rewindParams) (any, error) {
	if p.UUID == "" {
		return nil, errors.New("chat_rewind: uuid is required")
	}
	ch.mu.Lock()
	idx := -1
	order := map[string]int{}
	for i, u := range ch.sent {
		order[u] = i
		if u == p.UUID {
			idx = i
		}
	}
	cps := append([]checkpoint(nil), ch.checkpoints...)
	ch.mu.Unlock()
	if idx < 0 {
		return nil, fmt.Errorf("chat_rewind: no message %s in this chat", p.UUID)
	}
	files := []map[string]any{}
	seen := map[string]bool{}
	for _, cp := range cps {
		i, ok := order[cp.turn]
		if !ok || i < idx || seen[cp.path] {
			continue
		}
		seen[cp.path] = true
		cur, err := os.ReadFile(cp.path)
		var changed bool
		if cp.contents == nil {
			changed = err == nil
		} else {
			changed = err != nil || string(cur) != *cp.contents
		}
		f := map[string]any{"path": cp.path, "contents": nil, "changed": changed}
		switch {
		case cp.contents != nil && !utf8.ValidString(*cp.contents):
			// Not text Lua can carry (JSON would turn it into U+FFFD):
			// restored here, byte for byte.
			f["restored_by_host"] = true
			if changed && !p.Plan {
				if err := restoreFile(cp.path, []byte(*cp.contents)); err != nil {
					f["error"] = err.Error()
				}
			}
		case cp.contents != nil:
			f["contents"] = *cp.contents
		}
		files = append(files, f)
	}
	return map[string]any{"files": files}, nil
}

// restoreFile writes data to path atomically (a temporary file in the same
// directory, renamed over it), keeping path's permissions.
func restoreFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".nvim-claude-*")
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return nil
}

// handleHistory answers chat_history. A resumed chat's messages are read
// from its session's transcript while its CLI starts (Lua asks at once);
// a fork's only once its CLI runs, as they stop where it was rewound.
func (c *Panel) handleHistory(_ context.Context, p idParams) (any, error) {
	ch, err := c.get(p.ID)
	if err != nil {
		return nil, err
	}
	if ch.params.Fork {
		if err := ch.ready(); err != nil {
			return nil, err
		}
	}
	ch.mu.Lock()
	resume, cut := ch.params.Resume, ch.forkCut
	ch.mu.Unlock()
	if resume == "" {
		return map[string]any{"messages": []chat.HistoryMessage{}}, nil
	}
	msgs, err := chat.ReadHistory(ch.configDir, ch.params.Cwd, resume)
	if err != nil {
		return nil, fmt.Errorf("chat_history: %w", err)
	}
	if cut != "" {
		for i, m := range msgs {
			if m.UUID == cut {
				msgs = msgs[:i]
				break
			}
		}
	}
	return map[string]any{"messages": msgs}, nil
}

func (ch *chatProc) handlePlan(ctx context.Context) (any, error) {
	resp, err := ch.session().Request(ctx, "get_plan", nil)
	if err != nil {
		return nil, fmt.Errorf("chat_plan: %w", err)
	}
	var r map[string]any
	if err := json.Unmarshal(resp, &r); err != nil || r == nil {
		r = map[string]any{"exists": false}
	}
	return r, nil
}

func (ch *chatProc) handleInterrupt(ctx context.Context) (any, error) {
	if err := ch.session().Interrupt(ctx); err != nil {
		return nil, fmt.Errorf("chat_interrupt: %w", err)
	}
	return map[string]any{}, nil
}

// modeParams are chat_set_mode's parameters.
type modeParams struct {
	idParams
	Mode string `json:"mode"`
}

func (ch *chatProc) handleSetMode(ctx context.Context, p modeParams) (any, error) {
	if !chatMode(p.Mode) {
		return nil, fmt.Errorf("chat_set_mode: mode must be one of %s (got %q)", modeList(), p.Mode)
	}
	p.Mode = chat.ModeName(p.Mode)
	if err := ch.session().SetMode(ctx, p.Mode); err != nil {
		return nil, fmt.Errorf("chat_set_mode: %w", err)
	}
	ch.mu.Lock()
	changed := ch.mode != p.Mode
	ch.mode = p.Mode
	ch.mu.Unlock()
	if changed {
		ch.pushStatus()
	}
	return map[string]any{"mode": p.Mode}, nil
}

// modelParams are chat_set_model's parameters.
type modelParams struct {
	idParams
	Model string `json:"model"`
}

func (ch *chatProc) handleSetModel(ctx context.Context, p modelParams) (any, error) {
	if p.Model == "" {
		return nil, errors.New("chat_set_model: model is required")
	}
	sess := ch.session()
	var known []string
	ok := false
	for _, m := range sess.Init().Models {
		known = append(known, m.Value)
		if m.Value == p.Model || m.ResolvedModel == p.Model {
			ok = true
		}
	}
	if !ok {
		return nil, fmt.Errorf("chat_set_model: unknown model %q (known: %s)", p.Model, strings.Join(known, ", "))
	}
	now, err := sess.SetModel(ctx, p.Model)
	if err != nil {
		return nil, fmt.Errorf("chat_set_model: %w", err)
	}
	// The header shows the model the CLI reports, not the alias asked for.
	ch.mu.Lock()
	ch.model = now
	ch.mu.Unlock()
	ch.pushStatus()
	return map[string]any{"model": now}, nil
}

// sendParams are chat_send's parameters.
type sendParams struct {
	idParams
	Text        string       `json:"text"`
	Attachments []attachment `json:"attachments"`
}

func (ch *chatProc) handleSend(ctx context.Context, p sendParams) (any, error) {
	var blocks []chat.ContentBlock
	var labels []map[string]any
	for _, a := range p.Attachments {
		b, label, err := a.block(ctx, ch.params.Cwd)
		if err != nil {
			return nil, fmt.Errorf("chat_send: %w", err)
		}
		blocks = append(blocks, b)
		labels = append(labels, map[string]any{"type": a.Type, "label": label})
	}
	if strings.TrimSpace(p.Text) == "" && len(blocks) == 0 {
		return nil, errors.New("chat_send: nothing to send")
	}
	if p.Text != "" {
		blocks = append(blocks, chat.ContentBlock{Type: "text", Text: p.Text})
	}
	ch.mu.Lock()
	note := ch.note
	if ch.state == "exited" {
		ch.mu.Unlock()
		return nil, errors.New("chat_send: the chat's CLI has exited (resume it to go on)")
	}
	ch.mu.Unlock()
	if note != "" {
		blocks = append([]chat.ContentBlock{{Type: "text", Text: note}}, blocks...)
	}
	id := uuid.NewString()
	if err := ch.session().Send(ctx, id, blocks); err != nil {
		return nil, fmt.Errorf("chat_send: %w", err)
	}
	ch.mu.Lock()
	if ch.note == note {
		ch.note = ""
	}
	ch.sent = append(ch.sent, id)
	ch.lastSent = id
	ch.mu.Unlock()
	if labels == nil {
		labels = []map[string]any{}
	}
	ch.push("user", map[string]any{"uuid": id, "text": p.Text, "attachments": labels})
	return map[string]any{"uuid": id}, nil
}
