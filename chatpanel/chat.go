package chatpanel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/verdict"
)

// Editor is what the chat panel needs from Neovim: events delivered to
// require("claude.chat") in order.
type Editor interface {
	Emit(ctx context.Context, event string, data any) error
	// EmitIdempotent is Emit for an event the Lua side drops when it
	// comes twice (every chat event carries its seq): without first
	// asking Neovim whether it is blocked at a prompt, so one that failed
	// may run late, and its retry is then dropped.
	EmitIdempotent(ctx context.Context, event string, data any) error
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
	// dashboard).
	Sessions SessionWatch
	// Remote, when set, runs a chat's CLI on the far side open now (an
	// SSH host, a container): the chats asked for with remote.
	Remote Remote
}

// Remote makes the command line that runs the CLI with args on the far
// side open now (remote.Link), with env there; an error when none is.
type Remote interface {
	Command(args []string, env map[string]string) ([]string, error)
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

// Panel is the feature for the native chat panel: one Claude
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

func (ch *chatProc) handleInterrupt(ctx context.Context) (any, error) {
	if err := ch.session().Interrupt(ctx); err != nil {
		return nil, fmt.Errorf("chat_interrupt: %w", err)
	}
	return map[string]any{}, nil
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
	var tell func(string) (string, error)
	if ch.params.Remote {
		tell = ch.c.h.Workspace().Far
	}
	for _, a := range p.Attachments {
		b, label, err := a.block(ctx, ch.params.Cwd, tell)
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
