// Package nvimbridge is the Neovim side of nvim-claude: the only package that
// imports go-client. It carries editor facts in and editor actions out.
//
// Every exchange with Neovim crosses as a single JSON string: Lua requests
// arrive as one JSON argument and get one JSON string back, and Go calls into
// the plugin's Lua module claude.bridge (lua/claude/bridge/) with one JSON
// argument and decodes a JSON reply. A compound query is one Lua function, so it costs one round
// trip, and large results (whole buffers) stay one msgpack string instead of
// a table of thousands of small objects.
package nvimbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
	"unsafe"

	"github.com/neovim/go-client/nvim"
)

// moduleKey is where the loader keeps claude.bridge for this host's calls.
// The bridge's Lua is the plugin's own (lua/claude/bridge/, one tree with
// the modules it calls), not a copy inside the binary: the "options"
// handshake already refuses a host of another version, so the two cannot
// drift apart.
const moduleKey = "nvim-claude.bridge"

// DefaultTimeout bounds a call into Neovim when the caller's context has no
// deadline. Neovim answers API calls from its main loop; a prompt that blocks
// the loop (hit-enter, input()) would otherwise stall a caller forever.
const DefaultTimeout = 10 * time.Second

// ErrTimeout reports that Neovim did not answer in time.
var ErrTimeout = errors.New("neovim did not answer in time")

// ErrBlocked reports that Neovim is waiting for input (a hit-enter or
// more prompt, a pending operator): it runs no request until the user
// answers, so the call gives up at once instead of at its deadline.
var ErrBlocked = errors.New("neovim is waiting for input (a prompt is open): answer it in Neovim, then try again")

// blockedProbe is how long a call waits before asking Neovim (with the
// fast nvim_get_mode) whether it is blocked.
const blockedProbe = 100 * time.Millisecond

// Bridge is a connection to the Neovim that runs this process (or, in tests,
// to a child Neovim).
type Bridge struct {
	v   *nvim.Nvim
	log *slog.Logger

	ctx    context.Context // cancelled by Close; handed to request handlers
	cancel context.CancelFunc

	loadSem chan struct{} // one loader at a time, honouring each caller's ctx
	loaded  bool

	proposals proposals // diff proposals handed to Neovim as files
}

// New connects to Neovim over r/w (stdin/stdout for an RPC job). Call Serve
// to process messages.
func New(r io.Reader, w io.Writer, c io.Closer, log *slog.Logger) (*Bridge, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	v, err := nvim.New(r, w, c, func(format string, args ...any) {
		log.Debug("go-client: " + fmt.Sprintf(format, args...))
	})
	if err != nil {
		return nil, fmt.Errorf("msgpack-rpc endpoint: %w", err)
	}
	return Wrap(v, log), nil
}

// Wrap makes a Bridge from an existing client (tests use a child Neovim).
func Wrap(v *nvim.Nvim, log *slog.Logger) *Bridge {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bridge{v: v, log: log, ctx: ctx, cancel: cancel, loadSem: make(chan struct{}, 1)}
}

// Serve processes messages from Neovim until it disconnects.
func (b *Bridge) Serve() error {
	defer b.proposals.close()
	defer b.cancel()
	return b.v.Serve()
}

// Close cancels in-flight handlers, closes the connection and removes the
// proposal files Neovim still had.
func (b *Bridge) Close() error {
	b.cancel()
	b.proposals.close()
	return b.v.Close()
}

// Done is closed when the connection to Neovim is gone or Close was called.
func (b *Bridge) Done() <-chan struct{} { return b.ctx.Done() }

// HandleRequest registers a handler for rpcrequest(chan, method, json) from
// Lua. The handler's result is returned to Lua as a JSON string; an error
// becomes a Lua error whose message is err.Error().
func (b *Bridge) HandleRequest(method string, h func(ctx context.Context, params json.RawMessage) (any, error)) error {
	// The second argument is declared []byte so that go-client hands over
	// the buffer it decoded a large string into, instead of copying it
	// into a Go string (a whole file is several MB).
	return b.v.RegisterHandler(method, func(first any, blob []byte, _ ...any) (string, error) {
		ctx := b.ctx
		if blob != nil {
			ctx = context.WithValue(ctx, blobKey{}, blob)
		}
		res, err := h(ctx, firstArg([]any{first}))
		if err != nil {
			b.log.Debug("lua request failed", "method", method, "err", err)
			return "", err
		}
		out, err := json.Marshal(res)
		if err != nil {
			return "", fmt.Errorf("%s: encode result: %w", method, err)
		}
		return string(out), nil
	})
}

// blobKey carries a request's second argument in the handler's context.
type blobKey struct{}

// RequestBlob returns the second argument of the rpcrequest a HandleRequest
// handler serves, when Lua sent a string there. Lua sends bulk text (a whole
// file) that way, as a msgpack string beside the JSON parameters: encoding
// it into the JSON would cost an escape in Lua and a decode here.
func RequestBlob(ctx context.Context) (string, bool) {
	b, ok := ctx.Value(blobKey{}).([]byte)
	if !ok {
		return "", false
	}
	if len(b) == 0 {
		return "", true
	}
	// go-client decoded the argument into a buffer of its own (copying
	// small ones out of its read buffer), which nothing else holds or
	// writes: the string can share it rather than copy a whole file.
	return unsafe.String(&b[0], len(b)), true
}

// HandleNotification registers a handler for rpcnotify(chan, method, json).
// Notifications run one at a time in arrival order, so handlers must return
// quickly: hand work to a goroutine or a channel.
func (b *Bridge) HandleNotification(method string, h func(params json.RawMessage)) error {
	return b.v.RegisterHandler(method, func(args ...any) {
		h(firstArg(args))
	})
}

// firstArg turns the first argument from Lua into JSON. Lua normally sends a
// JSON string; anything else (a table from a hand-written rpcnotify) is
// re-encoded rather than allowed to break the msgpack decoder, which would
// end the whole connection.
func firstArg(args []any) json.RawMessage {
	if len(args) == 0 || args[0] == nil {
		return json.RawMessage("null")
	}
	if s, ok := args[0].(string); ok {
		if s == "" || !json.Valid([]byte(s)) {
			out, _ := json.Marshal(s)
			return out
		}
		return json.RawMessage(s)
	}
	out, err := json.Marshal(normalize(args[0]))
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}

// normalize converts msgpack-decoded maps with interface keys into
// JSON-encodable maps.
func normalize(v any) any {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			m[fmt.Sprint(k)] = normalize(val)
		}
		return m
	case map[string]any:
		for k, val := range t {
			t[k] = normalize(val)
		}
		return t
	case []any:
		for i, val := range t {
			t[i] = normalize(val)
		}
		return t
	case []byte:
		return string(t)
	}
	return v
}

// reply is bridge.lua's envelope around every result.
type reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// LuaError is an error raised by the Lua side of a call.
type LuaError struct {
	Func    string
	Message string
}

func (e *LuaError) Error() string { return "lua " + e.Func + ": " + e.Message }

// Call runs bridge.lua's function fn with args (JSON-encoded) and decodes its
// result into result (which may be nil). The call is abandoned, not
// cancelled, when ctx ends: Neovim finishes it on its own time.
func (b *Bridge) Call(ctx context.Context, fn string, args any, result any) error {
	return b.call(ctx, fn, args, result)
}

// call is Call with extra arguments after the JSON ones, which bridge.lua
// passes to fn as they are: bulk text crosses as a msgpack string that Lua
// receives without a JSON decode (and Go sends without an escape).
func (b *Bridge) call(ctx context.Context, fn string, args any, result any, extra ...any) error {
	return b.callWith(ctx, callOnce, fn, args, result, extra...)
}

// callMode is what a call promises about running late, when Neovim
// reaches it only after the caller gave up.
type callMode int

const (
	// callOnce: a call reported as failed never acts. Nothing is sent to
	// a Neovim waiting at a prompt (one nvim_get_mode first), and a call
	// that Neovim reaches after its deadline does nothing.
	callOnce callMode = iota
	// callCleanup: the call acts whenever Neovim reaches it (see cleanup).
	callCleanup
	// callRepeatable: the call's Lua drops a repeat, so a late run does
	// no harm: it is sent at once, without asking Neovim first whether it
	// is blocked (the caller's retry of it is then the repeat). Neovim
	// found blocked while the call waits still fails it with ErrBlocked.
	callRepeatable
)

// cleanup is Call for a call that undoes what an abandoned one showed
// (close the confirmation float an expired request opened): it acts
// whenever Neovim reaches it, even after ctx ended, because the call it
// cleans up after may itself have run late — Neovim busy for longer than
// the caller waited — and a cleanup dropped then would leave its window
// open for good.
func (b *Bridge) cleanup(ctx context.Context, fn string, args any) error {
	return b.callWith(ctx, callCleanup, fn, args, nil)
}

func (b *Bridge) callWith(ctx context.Context, mode callMode, fn string, args any, result any, extra ...any) error {
	payload, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%s: encode args: %w", fn, err)
	}
	if err := b.ensureLoaded(ctx); err != nil {
		return err
	}
	// The deadline travels with the call: a call Neovim reaches only
	// after the caller gave up (it was blocked at a prompt) does nothing.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultTimeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	var out string
	ms := deadline.UnixMilli()
	if mode == callCleanup {
		ms = 0
	}
	callArgs := append([]any{fn, string(payload), ms}, extra...)
	if err := b.exec(ctx, mode != callRepeatable, `return package.loaded["`+moduleKey+`"].call(...)`, &out, callArgs...); err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	var r reply
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return fmt.Errorf("%s: decode reply: %w", fn, err)
	}
	if !r.OK {
		return &LuaError{Func: fn, Message: r.Error}
	}
	if result == nil || len(r.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("%s: decode result: %w", fn, err)
	}
	return nil
}

// ensureLoaded loads claude.bridge into Neovim once per connection.
func (b *Bridge) ensureLoaded(ctx context.Context) error {
	select {
	case b.loadSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("load bridge.lua: %w", ErrTimeout)
	}
	defer func() { <-b.loadSem }()
	if b.loaded {
		return nil
	}
	if err := b.exec(ctx, true, loaderChunk, nil); err != nil {
		return fmt.Errorf("load bridge.lua: %w", err)
	}
	b.loaded = true
	return nil
}

// loaderChunk is the Lua that loads the bridge from the plugin's runtime
// files, or says plainly that they are not there.
const loaderChunk = `local ok, m = pcall(require, "claude.bridge")
if not ok then
  error("nvim-claude's Lua files are not on 'runtimepath': " .. tostring(m), 0)
end
package.loaded["` + moduleKey + `"] = m`

// exec runs nvim_exec_lua bounded by ctx (or DefaultTimeout); with
// precheck, not at all when Neovim is waiting at a prompt.
func (b *Bridge) exec(ctx context.Context, precheck bool, code string, result any, args ...any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	// Nothing is sent to a Neovim waiting at a prompt: it would run the
	// request once the user answers, long after the caller gave up.
	if precheck && b.blocked(ctx) {
		return ErrBlocked
	}
	done := make(chan error, 1)
	go func() { done <- b.v.ExecLua(code, result, args...) }()
	probe := time.NewTimer(blockedProbe)
	defer probe.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-probe.C:
			if b.blocked(ctx) {
				return ErrBlocked
			}
			probe.Reset(blockedProbe)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ErrTimeout
			}
			return ctx.Err()
		case <-b.ctx.Done():
			return errors.New("neovim connection closed")
		}
	}
}

// blocked reports whether Neovim is waiting for input. nvim_get_mode is a
// fast function: Neovim answers it at once even at a prompt, but not while
// it is busy (running Lua, a long :make), which is then "not blocked" once
// blockedProbe has passed.
func (b *Bridge) blocked(ctx context.Context) bool {
	ch := make(chan bool, 1)
	go func() { // ends when Neovim answers or the connection closes
		m, err := b.v.Mode()
		ch <- err == nil && m.Blocking
	}()
	t := time.NewTimer(blockedProbe)
	defer t.Stop()
	select {
	case yes := <-ch:
		return yes
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}
