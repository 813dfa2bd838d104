package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// Editor is what executeCode needs from Neovim.
type Editor interface {
	// ExecuteTarget tells which buffer's kernel runs code now, the kernel
	// its notebook names, and the execute options.
	ExecuteTarget(ctx context.Context) (nvimbridge.ExecuteTarget, error)
	// ExecuteConfirm shows the code and returns; the user's answer comes
	// back as a nvimbridge.ExecuteDecisionMethod notification.
	ExecuteConfirm(ctx context.Context, req nvimbridge.ExecuteConfirmRequest) error
	// CloseExecuteConfirm closes a confirmation nobody waits for.
	CloseExecuteConfirm(ctx context.Context, id string) error
	// WatchKernelBuffer reports the buffer's deletion as a
	// nvimbridge.KernelBufferGoneMethod notification.
	WatchKernelBuffer(ctx context.Context, bufnr int) error
}

// defaultKernelName is the kernel a buffer gets when its notebook names
// none.
const defaultKernelName = "python3"

// executeOptions are the resolved execute options of one run.
type executeOptions struct {
	confirm   bool
	timeout   time.Duration // 0: none
	maxOutput int           // 0: no cap
	python    string        // "" finds one
}

// resolveExecuteOptions turns the user's execute options (as Lua
// validated them: none is negative) into a run's.
func resolveExecuteOptions(o ExecuteOptions) executeOptions {
	return executeOptions{
		confirm:   o.Confirm,
		timeout:   time.Duration(max(o.TimeoutMS, 0) * float64(time.Millisecond)),
		maxOutput: int(max(o.MaxOutput, 0)),
		python:    o.Python,
	}
}

// setOptions takes the user's options (whenever Lua sends them).
func (c *Kernels) setOptions(o host.Options) error {
	var e ExecuteOptions
	if err := o.Decode("execute", &e); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts = &e
	return nil
}

// ExecuteOptions are setup()'s execute table, as the host needs it.
type ExecuteOptions struct {
	// Numbers are float64 as Lua's are: a fractional value never fails the
	// whole request.
	Confirm   bool    `json:"confirm"`    // ask before each run
	TimeoutMS float64 `json:"timeout_ms"` // 0: no limit
	MaxOutput float64 `json:"max_output"` // characters kept per run; 0: no cap
	Python    string  `json:"python"`     // "": python3, then /usr/bin/python3
}

// options are the execute options, or false before any start request
// brought them.
func (c *Kernels) options() (executeOptions, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts == nil {
		return executeOptions{}, false
	}
	return resolveExecuteOptions(*c.opts), true
}

// bufferKernel is the kernel of one buffer, and the turn to use it.
type bufferKernel struct {
	bufnr int
	name  string        // buffer name, for messages
	turn  chan struct{} // holds one token: one confirmation or run at a time

	// guarded by kernels.mu
	proc       *kernelProc
	kernelName string
}

// Kernels is the feature for executeCode and :ClaudeKernel: one Jupyter
// kernel per buffer, started on first use, stopped with the buffer, on
// :ClaudeKernel stop, and when the host exits.
type Kernels struct {
	h   host.Host
	ed  Editor
	log *slog.Logger

	mu      sync.Mutex
	opts    *ExecuteOptions // nil until Lua sent the options
	bufs    map[int]*bufferKernel
	python  string                 // the interpreter that worked last
	always  map[string]bool        // CLI connections the user allowed to run without asking
	waiting map[string]chan string // confirmation id → the user's decision
	seq     uint64
	closed  bool
	wg      sync.WaitGroup // stops started from notifications
}

// New makes the kernel feature; no kernel starts before executeCode.
func New(h host.Host, ed Editor) *Kernels {
	return &Kernels{
		h:       h,
		ed:      ed,
		log:     h.Logger().With("feature", "kernel"),
		bufs:    map[int]*bufferKernel{},
		always:  map[string]bool{},
		waiting: map[string]chan string{},
	}
}

// Name names the feature.
func (c *Kernels) Name() string { return "kernel" }

// Hooks are the feature's tool, Lua handlers and observers.
func (c *Kernels) Hooks() host.Hooks {
	return host.Hooks{
		Tools: func() []mcp.Tool { return []mcp.Tool{c.executeCodeTool()} },
		LuaRequests: map[string]host.LuaRequest{
			"kernel": host.Request("kernel", c.handleKernelCommand),
		},
		LuaNotifications: map[string]host.LuaNotification{
			nvimbridge.ExecuteDecisionMethod:  host.Notification(c.log, nvimbridge.ExecuteDecisionMethod, c.handleDecision),
			nvimbridge.KernelBufferGoneMethod: host.Notification(c.log, nvimbridge.KernelBufferGoneMethod, c.handleBufferGone),
		},
		ClientDisconnected: c.clientDisconnected,
		Options:            c.setOptions,
		Close:              c.close,
	}
}

// clientDisconnected ends the "always" the user gave that CLI session.
func (c *Kernels) clientDisconnected(ci mcp.ClientInfo) {
	c.mu.Lock()
	delete(c.always, ci.ID)
	c.mu.Unlock()
}

// close stops every kernel (the host is exiting).
func (c *Kernels) close() {
	c.mu.Lock()
	c.closed = true
	procs := make([]*kernelProc, 0, len(c.bufs))
	for _, b := range c.bufs {
		if b.proc != nil {
			procs = append(procs, b.proc)
			b.proc = nil
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func(p *kernelProc) {
			defer wg.Done()
			p.stop()
		}(p)
	}
	wg.Wait()
	c.wg.Wait()
}

// buffer returns the buffer's kernel slot, making it on first use.
func (c *Kernels) buffer(bufnr int, name string) *bufferKernel {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bufs[bufnr]
	if b == nil {
		b = &bufferKernel{bufnr: bufnr, turn: make(chan struct{}, 1)}
		b.turn <- struct{}{}
		c.bufs[bufnr] = b
	}
	if name != "" {
		b.name = name
	}
	return b
}

// decisionParams are execute_decision's parameters.
type decisionParams struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
}

// handleDecision receives the user's answer to a confirmation.
func (c *Kernels) handleDecision(d decisionParams) {
	c.mu.Lock()
	ch := c.waiting[d.ID]
	delete(c.waiting, d.ID)
	c.mu.Unlock()
	if ch == nil {
		c.log.Info("execute_decision for a confirmation no longer pending", "id", d.ID)
		return
	}
	ch <- d.Decision
}

// bufnrParams name a buffer.
type bufnrParams struct {
	Bufnr int `json:"bufnr"`
}

// handleBufferGone stops the kernel of a deleted buffer, off the
// notification goroutine.
func (c *Kernels) handleBufferGone(p bufnrParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bufs[p.Bufnr]
	if b == nil || c.closed {
		return
	}
	delete(c.bufs, p.Bufnr)
	proc := b.proc
	b.proc = nil
	if proc == nil {
		return
	}
	c.log.Info("buffer gone: stopping its kernel", "bufnr", p.Bufnr)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		proc.stop()
	}()
}

// confirm asks the user; it returns "run", "always" or "cancel".
func (c *Kernels) confirm(ctx context.Context, ed Editor, req nvimbridge.ExecuteConfirmRequest) (string, error) {
	ch := make(chan string, 1)
	c.mu.Lock()
	c.seq++
	req.ID = fmt.Sprintf("exec-%d", c.seq)
	c.waiting[req.ID] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.waiting, req.ID)
		c.mu.Unlock()
	}
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := ed.ExecuteConfirm(openCtx, req)
	cancel()
	if err != nil {
		forget()
		// The float may still open once Neovim gets to it (the call was
		// abandoned, not cancelled): close it after it, in order.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if cerr := ed.CloseExecuteConfirm(closeCtx, req.ID); cerr != nil {
			c.log.Debug("close confirmation", "err", cerr)
		}
		cancel()
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("could not ask the user to confirm in Neovim: %w", err)
	}
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		forget()
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := ed.CloseExecuteConfirm(closeCtx, req.ID); err != nil {
			c.log.Debug("close confirmation", "err", err)
		}
		cancel()
		return "", ctx.Err()
	}
}

// pythonCandidates are the interpreters to try, in order.
func (c *Kernels) pythonCandidates(opt string) []string {
	if opt != "" {
		return []string{opt}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" {
			return
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		if !seen[real] {
			seen[real] = true
			out = append(out, p)
		}
	}
	c.mu.Lock()
	add(c.python)
	c.mu.Unlock()
	if p, err := exec.LookPath("python3"); err == nil {
		add(p)
	}
	add("/usr/bin/python3")
	return out
}

// startProc starts a helper with the first interpreter that has the
// Jupyter packages.
func (c *Kernels) startProc(ctx context.Context, python string) (*kernelProc, error) {
	var tried []string
	for _, py := range c.pythonCandidates(python) {
		p, err := startHelper(ctx, py)
		if err == nil {
			c.mu.Lock()
			c.python = py
			c.mu.Unlock()
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var missing *helperMissing
		switch {
		case errors.As(err, &missing):
			tried = append(tried, fmt.Sprintf("%s: no module %s", py, missing.module))
		case errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "no such file"):
			tried = append(tried, py+": not found")
		default:
			tried = append(tried, fmt.Sprintf("%s: %v", py, err))
		}
	}
	if len(tried) == 0 {
		tried = []string{"python3: not found"}
	}
	return nil, &errNoJupyter{tried: tried}
}

// ensureKernel returns the buffer's running kernel, starting one if there
// is none or the last one died. note tells the model about a kernel that
// had died (its state is gone).
func (c *Kernels) ensureKernel(ctx context.Context, ed Editor, b *bufferKernel, tgt nvimbridge.ExecuteTarget, opts executeOptions) (p *kernelProc, note string, err error) {
	name := tgt.Kernel
	if name == "" {
		name = defaultKernelName
	}
	c.mu.Lock()
	p = b.proc
	c.mu.Unlock()
	if p != nil && p.alive() {
		return p, "", nil
	}
	if p != nil {
		note = "Note: the previous kernel of this buffer had died; a new one was started, so earlier variables and imports are gone."
		p.stop()
	}
	p, err = c.startProc(ctx, opts.python)
	if err != nil {
		return nil, "", err
	}
	if err := p.start(ctx, name, tgt.Dir); err != nil {
		p.stop()
		return nil, "", err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		p.stop()
		return nil, "", errors.New("nvim-claude is shutting down")
	}
	b.proc, b.kernelName = p, name
	c.mu.Unlock()
	if err := ed.WatchKernelBuffer(ctx, b.bufnr); err != nil {
		c.log.Warn("watch kernel buffer", "bufnr", b.bufnr, "err", err)
	}
	c.log.Info("kernel started", "bufnr", b.bufnr, "kernel", name, "python", p.python, "pid", p.pid())
	return p, note, nil
}

// kernelFor picks the kernel :ClaudeKernel acts on: the buffer's, else the
// only one running.
func (c *Kernels) kernelFor(bufnr int) (*bufferKernel, *kernelProc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.bufs[bufnr]; b != nil && b.proc != nil {
		return b, b.proc
	}
	var only *bufferKernel
	n := 0
	for _, b := range c.bufs {
		if b.proc != nil {
			only = b
			n++
		}
	}
	if n == 1 {
		return only, only.proc
	}
	return nil, nil
}

// handleKernelCommand runs :ClaudeKernel restart|interrupt|stop|status for
// the buffer Lua names. It answers {ok, message}.
// kernelParams are :ClaudeKernel's parameters.
type kernelParams struct {
	Action string `json:"action"`
	Bufnr  int    `json:"bufnr"`
}

func (c *Kernels) handleKernelCommand(ctx context.Context, p kernelParams) (any, error) {
	answer := func(ok bool, format string, args ...any) (any, error) {
		return map[string]any{"ok": ok, "message": "nvim-claude: " + fmt.Sprintf(format, args...)}, nil
	}
	if p.Action == "status" {
		return answer(true, "%s", c.statusText())
	}
	b, proc := c.kernelFor(p.Bufnr)
	if proc == nil {
		return answer(false, "no kernel runs for this buffer (executeCode starts one)%s", c.othersText())
	}
	label := c.label(b)
	switch p.Action {
	case "interrupt":
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		rep, err := proc.call(ictx, map[string]any{"op": "interrupt"})
		if err != nil || !rep.OK {
			return answer(false, "interrupt %s failed: %s", label, callFailure(err, rep))
		}
		if rep.Running {
			return answer(true, "interrupted the run in %s", label)
		}
		return answer(true, "%s was idle; sent the interrupt anyway", label)
	case "restart":
		rctx, cancel := context.WithTimeout(ctx, kernelStartTimeout+10*time.Second)
		defer cancel()
		rep, err := proc.call(rctx, map[string]any{"op": "restart"})
		if err != nil || !rep.OK {
			return answer(false, "restart %s failed: %s", label, callFailure(err, rep))
		}
		proc.setPID(rep.KernelPID)
		return answer(true, "restarted %s (its variables are gone)", label)
	case "stop":
		c.mu.Lock()
		if b.proc == proc {
			b.proc = nil
		}
		c.mu.Unlock()
		proc.stop()
		return answer(true, "stopped %s", label)
	}
	return answer(false, "unknown action %q: use restart, interrupt, stop or status", p.Action)
}

func (c *Kernels) label(b *bufferKernel) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.labelLocked(b)
}

func (c *Kernels) labelLocked(b *bufferKernel) string {
	name := b.name
	if name == "" {
		name = fmt.Sprintf("buffer %d", b.bufnr)
	} else {
		name = filepath.Base(name)
	}
	return fmt.Sprintf("the %s kernel of %s", b.kernelName, name)
}

func (c *Kernels) statusText() string {
	c.mu.Lock()
	var lines []string
	for _, b := range c.bufs {
		if b.proc != nil && b.proc.alive() {
			lines = append(lines, fmt.Sprintf("%s (pid %d)", c.labelLocked(b), b.proc.pid()))
		}
	}
	c.mu.Unlock()
	if len(lines) == 0 {
		return "no kernel is running"
	}
	sort.Strings(lines)
	return "kernels: " + strings.Join(lines, "; ")
}

func (c *Kernels) othersText() string {
	if s := c.statusText(); s != "no kernel is running" {
		return "; " + s
	}
	return ""
}

// callFailure is why a helper call failed.
func callFailure(err error, rep helperReply) string {
	if err != nil {
		return err.Error()
	}
	return rep.Error
}
