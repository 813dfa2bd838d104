package selection

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// Editor is what the selection tracker (selection_changed),
// mentions (at_mentioned) and the selection tools need from Neovim.
type Editor interface {
	// PullSelection gathers the current window's selection once the
	// cursor has come to rest (SelectionKindWait while it still moves,
	// unless force).
	PullSelection(ctx context.Context, force bool) (nvimbridge.SelectionState, error)
	// CurrentSelection is the active editor's selection.
	CurrentSelection(ctx context.Context) (nvimbridge.SelectionState, error)
}

const (
	// selPullTimeout bounds one pull: Neovim may be busy (a long :make),
	// and the next move asks again anyway.
	selPullTimeout = 2 * time.Second
	// selInboxSize is how many Lua notifications may wait for the tracker.
	// Lua sends at most one "dirty" per pull, so this is never reached in
	// practice.
	selInboxSize = 256
	// selPullRetries is how many times a failed pull is retried, a second
	// apart (Neovim busy): the move autocmds come back with a pull.
	selPullRetries = 3
	// selGreetDelay is how long after ide_connected a CLI is first sent
	// anything. CLI 2.1.330 sends ide_connected before it has installed its
	// notification handlers and silently drops what arrives meanwhile (~30
	// ms on a loaded 2-core machine, measured with the real CLI); a mention
	// lost that way would never reach the prompt box.
	selGreetDelay = 750 * time.Millisecond
)

// Tracker is the feature for the selection tracker (selection_changed),
// mentions (at_mentioned) and the selection tools.
//
// Lua tells it that the cursor moved (selection_dirty, once per quiet
// period), pushes a state it gathered at once (selection_update: a
// selection that just ended, or the first move after a rest — the leading
// edge; either may also ask for a pull after the debounce, as
// selection_dirty does, which sends the final state of a burst) and turns
// sharing on and off (selection_share). One goroutine (run) owns the
// debounce: after debounce_ms it pulls the state from Neovim, lets the
// coalescer drop stale and duplicate observations and broadcasts the rest.
// The same goroutine greets a newly connected CLI with the latest selection
// and the mentions queued for it, so that nothing reaches a client out of
// order.
type Tracker struct {
	h           host.Host
	ed          Editor
	log         *slog.Logger
	pullTimeout time.Duration

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	inbox  chan selEvent
	done   chan struct{} // closed when run returns

	// sendMu serializes deciding what to send and sending it, so that
	// CLIs receive selections in the order they were decided (a clear
	// after sharing stops is never overtaken by a selection).
	sendMu sync.Mutex

	mu         sync.Mutex
	greetDelay time.Duration
	// holdDebounce (tests) makes every debounce an hour, whatever Lua says.
	holdDebounce bool
	sharing      bool
	debounce     time.Duration
	co           selCoalescer
	queue        []queuedMention     // mentions waiting for a CLI (mentions.go)
	ready        map[string]struct{} // CLIs greeted: they take notifications
	router       Router              // nil: every selection to every CLI
}

// New makes the selection feature and starts its tracker; Hooks().Close
// stops it.
func New(h host.Host, ed Editor) *Tracker {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Tracker{
		h:           h,
		ed:          ed,
		log:         h.Logger().With("feature", "selection"),
		pullTimeout: selPullTimeout,
		greetDelay:  selGreetDelay,
		ctx:         ctx,
		ready:       map[string]struct{}{},
		cancel:      cancel,
		inbox:       make(chan selEvent, selInboxSize),
		done:        make(chan struct{}),
	}
	go c.run()
	return c
}

// Name names the feature.
func (c *Tracker) Name() string { return "selection" }

// Hooks are the feature's tools, Lua handlers and connection observers.
func (c *Tracker) Hooks() host.Hooks {
	return host.Hooks{
		Tools: c.tools,
		LuaRequests: map[string]host.LuaRequest{
			"mention":         host.Request("mention", c.handleMention),
			"selection_share": host.Request("selection_share", c.handleShare),
		},
		LuaNotifications: map[string]host.LuaNotification{
			"selection_dirty":  func(json.RawMessage) { c.post(selEvent{kind: selDirty}) },
			"selection_update": host.Notification(c.log, "selection_update", c.handleUpdate),
		},
		ClientConnected:    c.clientConnected,
		ClientDisconnected: c.clientDisconnected,
		ServerStopped:      c.serverStopped,
		Options:            c.setOptions,
		Close:              c.close,
	}
}

// close stops the tracker's goroutine and waits for it.
func (c *Tracker) close() {
	c.cancel()
	<-c.done
}

func (c *Tracker) tools() []mcp.Tool {
	return []mcp.Tool{c.CurrentSelectionTool(), c.getLatestSelectionTool()}
}

func (c *Tracker) clientConnected(ci mcp.ClientInfo) {
	c.post(selEvent{kind: selConnected, client: ci.ID})
}

func (c *Tracker) clientDisconnected(ci mcp.ClientInfo) {
	c.mu.Lock()
	delete(c.ready, ci.ID)
	c.mu.Unlock()
	c.post(selEvent{kind: selGone, client: ci.ID})
}

// serverStopped forgets what the old clients were sent and tells the user
// about mentions that will now never be delivered.
func (c *Tracker) serverStopped() {
	c.mu.Lock()
	c.co.forgetSent()
	c.ready = map[string]struct{}{}
	lost := c.takeQueue()
	c.mu.Unlock()
	c.reportUndelivered(lost, undeliveredStopped, 0)
}

// Tracker events ----------------------------------------------------------

type selEventKind int

const (
	selDirty     selEventKind = iota // the cursor moved: debounce, then pull
	selUpdate                        // Lua pushed a state (visual mode ended, a move after a rest); pull: then as selDirty
	selShare                         // sharing turned off: drop a pending pull
	selFlush                         // pull now if a pull is pending (tools)
	selConnected                     // a CLI connected: greet it after greetDelay
	selGone                          // a CLI disconnected: do not greet it
	selMentions                      // the mention queue changed: re-arm its timer
)

// selGreeting is a CLI waiting to be greeted.
type selGreeting struct {
	client string
	due    time.Time
}

type selEvent struct {
	kind   selEventKind
	state  nvimbridge.SelectionState
	pull   bool // selUpdate: Lua asks for a pull after the debounce
	client string
	reply  chan struct{}
}

// post hands an event to run without blocking a handler.
func (c *Tracker) post(ev selEvent) bool {
	select {
	case c.inbox <- ev:
		return true
	default:
		c.log.Warn("selection tracker busy; dropping an event", "kind", int(ev.kind))
		return false
	}
}

// updateParams are selection_update's parameters.
type updateParams struct {
	State nvimbridge.SelectionState `json:"state"`
	// Pull: Lua left its move autocmds disarmed; the pull after the
	// debounce sends what changed since and re-arms them once the cursor
	// rests.
	Pull bool `json:"pull"`
}

func (c *Tracker) handleUpdate(p updateParams) {
	c.post(selEvent{kind: selUpdate, state: p.State, pull: p.Pull})
}

// shareParams are selection_share's parameters.
type shareParams struct {
	On bool `json:"on"`
}

// handleShare turns sharing on or off. It is a request, not a
// notification: when :ClaudeShare off returns, nothing more is shared and
// the CLIs have been told to forget the selection.
func (c *Tracker) handleShare(_ context.Context, p shareParams) (any, error) {
	c.setSharing(p.On)
	if !p.On {
		c.post(selEvent{kind: selShare}) // drop a pending pull
	}
	return map[string]bool{"sharing": p.On}, nil
}

// run owns the debounce, greeting and mention-expiry timers; it is the
// only goroutine that sends selection_changed.
func (c *Tracker) run() {
	defer close(c.done)
	debounce := time.NewTimer(time.Hour)
	selStopTimer(debounce)
	expiry := time.NewTimer(time.Hour)
	selStopTimer(expiry)
	greet := time.NewTimer(time.Hour)
	selStopTimer(greet)
	pending := false // a pull is scheduled on debounce
	failures := 0    // pulls failed in a row
	var greetings []selGreeting
	armGreet := func() {
		selStopTimer(greet)
		if len(greetings) > 0 {
			greet.Reset(time.Until(greetings[0].due))
		}
	}
	for {
		select {
		case <-c.ctx.Done():
			selStopTimer(debounce)
			selStopTimer(expiry)
			selStopTimer(greet)
			return
		case ev := <-c.inbox:
			switch ev.kind {
			case selDirty, selUpdate:
				if ev.kind == selUpdate {
					c.apply(&ev.state)
					if !ev.pull {
						break
					}
				}
				if !pending && c.isSharing() {
					pending = true
					// Poll at half the debounce: the cursor counts as
					// resting once unchanged over one poll (see _pull in
					// lua/claude/selection.lua), so the selection goes out
					// 0.5–1 debounce after the last move.
					debounce.Reset(c.debounceDur() / 2)
				}
			case selShare:
				if pending {
					selStopTimer(debounce)
					pending = false
				}
			case selFlush:
				if pending {
					selStopTimer(debounce)
					pending = false
					if _, err := c.pull(true); err == nil {
						failures = 0
					}
				}
				close(ev.reply)
			case selConnected:
				c.mu.Lock()
				due := time.Now().Add(c.greetDelay)
				c.mu.Unlock()
				greetings = append(greetings, selGreeting{client: ev.client, due: due})
				armGreet()
			case selGone:
				for i, g := range greetings {
					if g.client == ev.client {
						greetings = append(greetings[:i], greetings[i+1:]...)
						break
					}
				}
				armGreet()
			case selMentions:
				c.armExpiry(expiry)
			}
		case <-debounce.C:
			pending = false
			wait, err := c.pull(false)
			switch {
			case err != nil && failures < selPullRetries && c.ctx.Err() == nil:
				failures++
				wait = time.Second
			case err != nil:
				failures = 0 // give up; the next move starts over
			default:
				failures = 0
			}
			if wait > 0 {
				pending = true
				debounce.Reset(wait)
			}
		case now := <-expiry.C:
			c.expireMentions(now)
			c.armExpiry(expiry)
		case now := <-greet.C:
			for len(greetings) > 0 && !greetings[0].due.After(now) {
				c.greet(greetings[0].client)
				greetings = greetings[1:]
			}
			armGreet()
		}
	}
}

// selStopTimer stops t and drains a value it may have sent, so that Reset
// starts clean (pre-Go 1.23 timer semantics, which go.mod selects).
func selStopTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}

func (c *Tracker) isSharing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sharing
}

func (c *Tracker) debounceDur() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holdDebounce {
		return time.Hour
	}
	return c.debounce
}

// setOptions takes the user's options: the debounce (selection.debounce_ms).
func (c *Tracker) setOptions(o host.Options) error {
	var s Options
	if err := o.Decode("selection", &s); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.DebounceMS >= 0 {
		c.debounce = time.Duration(s.DebounceMS * float64(time.Millisecond))
	}
	return nil
}

// Options are setup()'s selection table, as the host needs it.
type Options struct {
	// DebounceMS is how long the cursor rests before its selection is
	// shared (selection.debounce_ms).
	DebounceMS float64 `json:"debounce_ms"`
}

// setSharing turns sharing on (a new epoch of Lua's sequence numbers) or
// off, in which case every CLI is told to forget the selection it holds.
func (c *Tracker) setSharing(on bool) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	c.sharing = on
	var p selPayload
	send := false
	if on {
		c.co.newEpoch()
	} else {
		p, send = c.co.clear()
	}
	c.mu.Unlock()
	if send {
		c.h.Broadcast("selection_changed", p)
	}
}

// pull asks Neovim for the state and applies it. It returns how long to
// wait before asking again when the cursor is still moving.
func (c *Tracker) pull(force bool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.pullTimeout)
	defer cancel()
	st, err := c.ed.PullSelection(ctx, force)
	if err != nil {
		c.log.Debug("selection pull failed", "err", err)
		return 0, err
	}
	if st.Kind == nvimbridge.SelectionKindWait {
		w := time.Duration(st.WaitMS) * time.Millisecond
		if d := c.debounceDur(); w > d {
			w = d
		}
		if w < time.Millisecond {
			w = time.Millisecond
		}
		return w, nil
	}
	c.apply(&st)
	return 0, nil
}

// apply feeds one observation to the coalescer and broadcasts what it
// says must go out.
func (c *Tracker) apply(st *nvimbridge.SelectionState) {
	c.judge(st)
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if !c.sharing {
		c.mu.Unlock()
		return
	}
	p, send := c.co.observe(st)
	c.mu.Unlock()
	if send {
		c.sendSelection(p)
	}
}

// judge turns a selection in a deny-listed file into a denied
// observation. Lua's matcher knows the globs; the host's boundary decides,
// and it also knows another hard link to a deny-listed file, which Lua
// cannot tell from any other file. Nothing of such a file, text or name,
// reaches a CLI.
//
// A Claude elsewhere (an SSH host, a container) gets the path as it sees
// it; a file outside the far↔local mapping is kept back like a denied one.
func (c *Tracker) judge(st *nvimbridge.SelectionState) {
	if st.Kind != nvimbridge.SelectionKindSelection || st.Path == "" {
		return
	}
	ws := c.h.Workspace()
	if ws.Denied(st.Path) {
		*st = nvimbridge.SelectionState{Kind: nvimbridge.SelectionKindDenied, Path: st.Path, Seq: st.Seq}
		return
	}
	far, err := ws.Far(st.Path)
	if err != nil {
		*st = nvimbridge.SelectionState{Kind: nvimbridge.SelectionKindDenied, Path: st.Path, Seq: st.Seq}
		return
	}
	st.Path = far
}

// flush makes a pending debounced pull happen now, so that a tool answers
// with what the CLIs are about to be sent.
func (c *Tracker) flush(ctx context.Context) {
	reply := make(chan struct{})
	if !c.post(selEvent{kind: selFlush, reply: reply}) {
		return
	}
	select {
	case <-reply:
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
}

// latest is the latest shared selection, if any.
func (c *Tracker) latest() (selPayload, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sharing {
		return selPayload{}, false
	}
	return c.co.latestPayload()
}

// greet sends a newly connected CLI the latest selection, then the
// mentions queued for it; from now on it takes mentions directly.
func (c *Tracker) greet(clientID string) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if !c.connected(clientID) {
		c.mu.Unlock()
		return
	}
	c.ready[clientID] = struct{}{}
	p, ok := selPayload{}, false
	if c.sharing {
		p, ok = c.co.latestPayload()
	}
	if ok {
		// Every ready CLI now holds p: a later observation of the same
		// state must not go out again (after forgetSent, the coalescer
		// would otherwise take it for news).
		c.co.markSent(p)
	}
	queued := c.takeQueue()
	c.mu.Unlock()
	if ok && !c.routedAway(clientID, p) {
		c.notifyClient(clientID, "selection_changed", p)
	}
	c.deliverQueued(clientID, queued)
}

// connected reports whether clientID is still connected.
func (c *Tracker) connected(clientID string) bool {
	for _, ci := range c.h.Clients() {
		if ci.ID == clientID {
			return true
		}
	}
	return false
}

// notifyClient sends a notification to one client.
func (c *Tracker) notifyClient(clientID, method string, params any) bool {
	if err := c.h.Notify(clientID, method, params); err != nil {
		c.log.Debug("notify client", "client", clientID, "method", method, "err", err)
		return false
	}
	return true
}

// The coalescer ---------------------------------------------------------------

// selPos, selRange and selPayload are selection_changed's params. They are
// comparable, so a duplicate is found with ==.
type selPos struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type selRange struct {
	Start   selPos `json:"start"`
	End     selPos `json:"end"`
	IsEmpty bool   `json:"isEmpty"`
}

type selPayload struct {
	Text      string   `json:"text"`
	FilePath  string   `json:"filePath"`
	FileURL   string   `json:"fileUrl"`
	Selection selRange `json:"selection"`
}

// selCleared tells a CLI to forget the selection it holds: with no file
// and no text it shows and sends nothing (checked against CLI 2.1.330).
var selCleared = selPayload{Selection: selRange{IsEmpty: true}}

// selCoalescer decides which observations become selection_changed: it
// drops observations older than one already applied (a pull answered
// after a pushed update) and duplicates of what was last sent. It does no
// I/O and is not safe for concurrent use.
type selCoalescer struct {
	lastSeq   int64
	latest    selPayload
	hasLatest bool
	sent      selPayload
	hasSent   bool
}

// observe records st and returns the payload to broadcast, if any.
func (c *selCoalescer) observe(st *nvimbridge.SelectionState) (selPayload, bool) {
	switch st.Kind {
	case nvimbridge.SelectionKindSelection:
		if st.Seq <= c.lastSeq || st.Path == "" {
			return selPayload{}, false
		}
		c.lastSeq = st.Seq
		c.latest = selPayload{
			Text:     st.Text,
			FilePath: st.Path,
			FileURL:  c.fileURL(st.Path),
			Selection: selRange{
				Start:   selPos(st.Start),
				End:     selPos(st.End),
				IsEmpty: st.Empty,
			},
		}
		c.hasLatest = true
		return c.send(c.latest)
	case nvimbridge.SelectionKindDenied:
		// A denied file: take back what the CLIs hold rather than leave
		// them pointing at the previous file, and share nothing of it.
		if st.Seq <= c.lastSeq {
			return selPayload{}, false
		}
		c.lastSeq = st.Seq
		return c.clear()
	}
	return selPayload{}, false
}

func (c *selCoalescer) fileURL(path string) string {
	if c.hasLatest && c.latest.FilePath == path {
		return c.latest.FileURL
	}
	return selFileURL(path)
}

func (c *selCoalescer) send(p selPayload) (selPayload, bool) {
	if c.hasSent && c.sent == p {
		return p, false
	}
	c.sent, c.hasSent = p, true
	return p, true
}

// clear forgets the latest selection; it returns the clearing payload when
// the CLIs hold one.
func (c *selCoalescer) clear() (selPayload, bool) {
	c.latest, c.hasLatest = selPayload{}, false
	if !c.hasSent || c.sent == selCleared {
		return selPayload{}, false
	}
	return c.send(selCleared)
}

// newEpoch accepts any sequence number again: Lua (re)attached.
func (c *selCoalescer) newEpoch() { c.lastSeq = 0 }

// markSent records that the CLIs hold p.
func (c *selCoalescer) markSent(p selPayload) { c.sent, c.hasSent = p, true }

// forgetSent: the clients that were sent things are gone.
func (c *selCoalescer) forgetSent() { c.sent, c.hasSent = selPayload{}, false }

func (c *selCoalescer) latestPayload() (selPayload, bool) { return c.latest, c.hasLatest }

// selFileURL is path as a file URI, percent-encoded like VS Code's
// Uri.file(path).toString() for the characters paths usually hold.
func selFileURL(path string) string {
	p := filepath.ToSlash(path)
	if len(p) >= 2 && p[1] == ':' { // Windows drive letter
		p = "/" + p
	}
	u := url.URL{Scheme: "file", Path: p}
	return u.String()
}

// Tools -------------------------------------------------------------------------

// selToolResult is getCurrentSelection's and getLatestSelection's JSON, in
// the VS Code extension's field order.
type selToolResult struct {
	Success   bool      `json:"success"`
	Text      *string   `json:"text,omitempty"`
	FilePath  string    `json:"filePath,omitempty"`
	FileURL   string    `json:"fileUrl,omitempty"`
	Selection *selRange `json:"selection,omitempty"`
	Message   string    `json:"message,omitempty"`
}

func selSuccess(p selPayload) selToolResult {
	text, rng := p.Text, p.Selection
	return selToolResult{Success: true, Text: &text, FilePath: p.FilePath, FileURL: p.FileURL, Selection: &rng}
}

func selFailure(msg string) selToolResult {
	return selToolResult{Success: false, Message: msg}
}

const selSharingOffMessage = "Selection sharing is off in Neovim (the user can turn it on with :ClaudeShare on)"

// selDeniedMessage explains a refusal without naming more than the user's
// own rule does.
func selDeniedMessage(path string) string {
	base := filepath.Base(path)
	if path == "" {
		base = "the active file"
	}
	return fmt.Sprintf("%s matches the deny-list (security.deny): its contents are not shared", strings.TrimSpace(base))
}
