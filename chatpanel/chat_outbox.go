package chatpanel

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// chatEmitTimeout bounds one delivery attempt to Lua (a failed attempt is
// retried: chat events are never dropped).
const chatEmitTimeout = 10 * time.Second

// outbox delivers one chat's events to Lua in order, one call at a time,
// never dropping any (unlike App.post): its queue grows as needed. Deltas
// of the same block that queue up are merged.
//
// Streamed text and thinking go to Lua when Neovim is free to take them:
// the first delta after a pause goes at once, and the deltas of the same
// block that arrive while a delivery is in flight merge into the next one,
// which starts as soon as Neovim has answered. A fixed frame would make
// every delta wait for it (its p99 is the frame) while saving nothing when
// deltas come slower than Neovim renders them; waiting for Neovim batches
// exactly as much as Neovim is behind (at 2,000 deltas/s, several a write).
//
// Every event delivered carries a seq ("<outbox>.<n>", the same in each
// attempt), which require("claude.chat") remembers: an attempt reported
// failed (Neovim blocked at a prompt) may still run once the prompt is
// answered, and the retry that follows it is then dropped rather than
// shown twice. This is what lets emit send without asking Neovim first
// whether it is blocked — one request a delta instead of two.
type outbox struct {
	emit func(ctx context.Context, name string, data any) error
	log  func(msg string, args ...any)

	token string // this outbox's part of each seq
	sent  int    // events taken from the queue so far

	mu      sync.Mutex
	items   []*outItem
	wake    chan struct{} // buffered 1
	closing bool          // stop once drained
	// stopped ends with halt: delivery stops now (an emit in flight is
	// cancelled).
	stopped context.Context
	stop    context.CancelFunc
	done    chan struct{}
}

type outItem struct {
	name  string
	data  map[string]any
	key   string // for deltas: event, message id and index
	delta string
}

func newOutbox(emit func(ctx context.Context, name string, data any) error, log func(string, ...any)) *outbox {
	o := &outbox{emit: emit, log: log, token: uuid.NewString()[:8], wake: make(chan struct{}, 1), done: make(chan struct{})}
	o.stopped, o.stop = context.WithCancel(context.Background())
	return o
}

func (o *outbox) start() { go o.run() }

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push queues an event.
func (o *outbox) push(name string, data map[string]any) {
	o.mu.Lock()
	o.items = append(o.items, &outItem{name: name, data: data})
	o.mu.Unlock()
	o.signal()
}

// pushDelta queues a streamed piece of text (event "chat.text" or
// "chat.thinking"), merged into the last queued item when that is a delta
// of the same block.
func (o *outbox) pushDelta(name string, data map[string]any, key, delta string) {
	o.mu.Lock()
	if n := len(o.items); n > 0 && o.items[n-1].key == key && o.items[n-1].name == name {
		o.items[n-1].delta += delta
		o.mu.Unlock()
		return
	}
	o.items = append(o.items, &outItem{name: name, data: data, key: key, delta: delta})
	o.mu.Unlock()
	o.signal()
}

// closeDrained makes run return once everything queued was delivered.
func (o *outbox) closeDrained() {
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	o.signal()
}

// halt stops delivery now and waits for run to return.
func (o *outbox) halt() {
	o.stop()
	<-o.done
}

func (o *outbox) run() {
	defer close(o.done)
	defer o.stop() // releases o.stopped once drained too
	for {
		o.mu.Lock()
		var it *outItem
		if len(o.items) > 0 {
			it = o.items[0]
		}
		closing := o.closing
		o.mu.Unlock()
		if it == nil {
			if closing {
				return
			}
			select {
			case <-o.wake:
				continue
			case <-o.stopped.Done():
				return
			}
		}
		o.mu.Lock()
		o.items = o.items[1:]
		if it.key != "" {
			it.data["delta"] = it.delta
		}
		o.sent++
		it.data["seq"] = o.token + "." + strconv.Itoa(o.sent)
		o.mu.Unlock()
		// it is out of the queue (nothing merges into it any more) but
		// not delivered: it goes before anything else, however long
		// Neovim stays busy or blocked at a prompt.
		if !o.deliver(it) {
			return
		}
	}
}

// Retry backoff while Neovim does not take an event.
const (
	chatRetryFirst = 100 * time.Millisecond
	chatRetryMax   = 500 * time.Millisecond
)

// deliver emits it until Neovim takes it, the error is permanent (the Lua
// side failed on this very payload: logged and skipped), or the outbox
// stops (false).
func (o *outbox) deliver(it *outItem) bool {
	wait := chatRetryFirst
	for attempt := 1; ; attempt++ {
		ectx, ecancel := context.WithTimeout(o.stopped, chatEmitTimeout)
		err := o.emit(ectx, it.name, it.data)
		ecancel()
		if err == nil {
			return true
		}
		select {
		case <-o.stopped.Done():
			return false
		default:
		}
		if chatEmitPermanent(err) {
			o.log("chat event REJECTED by the Lua side and skipped (a bug: please report it)",
				"event", it.name, "err", err)
			return true
		}
		if attempt == 1 || attempt%50 == 0 {
			o.log("chat event not delivered yet; retrying", "event", it.name, "attempt", attempt, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-o.stopped.Done():
			t.Stop()
			return false
		}
		if wait *= 2; wait > chatRetryMax {
			wait = chatRetryMax
		}
	}
}

// chatEmitPermanent reports whether a failed delivery must not be retried:
// the Lua side ran and raised an error for this payload. Timeouts, a
// Neovim blocked at a prompt, a call that expired before Neovim reached
// it, are all retried.
func chatEmitPermanent(err error) bool {
	var le *nvimbridge.LuaError
	if !errors.As(err, &le) {
		return false
	}
	return !strings.HasPrefix(le.Message, "expired")
}
