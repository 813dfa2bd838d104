// Package chat runs the Claude Code CLI in its stream-json mode for a chat
// panel: one long-lived process per chat, NDJSON on stdin and stdout, the
// control protocol both ways (initialize, interrupt, mode and model
// changes, can_use_tool permission requests), and the CLI's session
// transcripts for listing and resuming past chats.
//
// It knows nothing of Neovim; see /work/shared/STREAM-JSON.md (the
// protocol as verified against CLI 2.1.330) for the wire.
package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Options configure a [Session].
type Options struct {
	// Bin is the CLI binary ("claude" on PATH when empty).
	Bin string
	// Cwd is the directory the CLI runs in.
	Cwd string
	// Env is the process environment; nil means os.Environ(). The session
	// adds CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true.
	Env []string
	// Mode is the starting permission mode (see [Modes]; "" leaves it to
	// the user's CLI settings).
	Mode string
	// Model is a model alias or id; Effort an effort level.
	Model, Effort string
	// Resume is a session id to resume; with Fork the resumed session is
	// forked into a new one.
	Resume string
	Fork   bool
	// SessionID fixes the new session's id (a uuid).
	SessionID string
	// MCPConfig is passed as --mcp-config when not empty.
	MCPConfig string
	// AllowedTools and DisallowedTools become --allowedTools /
	// --disallowedTools.
	AllowedTools, DisallowedTools []string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// Wrap, when set, makes the command line that runs the CLI elsewhere
	// (ssh …, docker exec -i …) of its arguments; Bin and the
	// environment are then the far side's business, and the command line
	// must carry CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING itself.
	Wrap func(args []string) ([]string, error)
	// DialogKinds are the request_user_dialog kinds the host renders,
	// declared in initialize (a subset of [RenderedDialogKinds]); the CLI
	// falls back to its no-dialog behaviour for any other.
	DialogKinds []string
	// OnEvent receives every event in order, from one goroutine. It must
	// not block for long (queue the event); the last event is an
	// [ExitEvent].
	OnEvent func(Event)
	// Trace, when set, sees every line written ("in") and read ("out"),
	// e.g. to record a transcript. It is called from several goroutines,
	// never concurrently for the same direction.
	Trace func(dir string, line []byte)
}

// Args returns the CLI arguments for o.
func (o Options) Args() []string {
	// --permission-prompts host: whatever would prompt comes to us as
	// can_use_tool (said explicitly: "none", which denies it all
	// silently, must never become ours by a change of default).
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-prompts", "host", "--include-partial-messages"}
	if o.Mode != "" {
		args = append(args, "--permission-mode", ModeName(o.Mode))
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	if o.Effort != "" {
		args = append(args, "--effort", o.Effort)
	}
	if o.Resume != "" {
		args = append(args, "--resume", o.Resume)
		if o.Fork {
			args = append(args, "--fork-session")
		}
	}
	if o.SessionID != "" {
		args = append(args, "--session-id", o.SessionID)
	}
	if o.MCPConfig != "" {
		args = append(args, "--mcp-config", o.MCPConfig)
	}
	for _, t := range o.AllowedTools {
		args = append(args, "--allowedTools", t)
	}
	for _, t := range o.DisallowedTools {
		args = append(args, "--disallowedTools", t)
	}
	return append(args, o.ExtraArgs...)
}

// Init is the CLI's answer to initialize.
type Init struct {
	Models   []Model   `json:"models"`
	Commands []Command `json:"commands"`
	PID      int       `json:"pid"`
	Version  string    `json:"claude_code_version"`
	Mode     string    `json:"current_permission_mode"`
}

// Model is one entry of the CLI's model catalogue.
type Model struct {
	Value         string `json:"value"`
	ResolvedModel string `json:"resolvedModel"`
	DisplayName   string `json:"displayName"`
	Description   string `json:"description"`
}

// Command is one slash command the CLI offers.
type Command struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
}

// ControlError is an error answer to a control request.
type ControlError struct {
	Subtype string
	Message string
	Code    string
}

func (e *ControlError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Subtype, e.Message, e.Code)
	}
	return e.Subtype + ": " + e.Message
}

// ErrExited is returned for requests to a session whose process ended.
var ErrExited = errors.New("the Claude CLI process has exited")

// stderrTail is how much of stderr is kept for the exit report.
const stderrTail = 8 << 10

// killAfter is how long Close waits for the process to exit by itself.
const killAfter = 3 * time.Second

// stderrGrace is how long the exit report waits, after the CLI exited,
// for the rest of its stderr (a grandchild may hold it open).
const stderrGrace = 2 * time.Second

// writeTimeout bounds one line written to the CLI when the caller's
// context has no earlier deadline.
const writeTimeout = 30 * time.Second

// maxLine bounds one stdout line (a Read of a big file is one line).
const maxLine = 64 << 20

// Session is one running CLI process. Its methods are safe for concurrent
// use.
type Session struct {
	opts   Options
	cmd    *exec.Cmd
	cancel context.CancelFunc // kills the process

	wmu   sync.Mutex // one writer at a time: every line is whole
	stdin *os.File   // our end of the CLI's stdin pipe (write deadlines work on it)

	mu          sync.Mutex
	seq         int
	pending     map[string]chan controlReply // host requests by id
	openPerms   map[string]bool              // CLI can_use_tool ids not yet answered or cancelled
	openDialogs map[string]string            // CLI request_user_dialog ids not yet settled → kind
	sessionID   string
	exit        *ExitEvent
	stderr      []byte

	done chan struct{} // closed when the process has ended and ExitEvent was delivered
	init Init
}

type controlReply struct {
	resp json.RawMessage
	err  error
}

// Start starts the CLI and waits (bounded by ctx) for its answer to
// initialize. The process belongs to the session, not to ctx: it runs until
// [Session.Close] or [Session.Kill].
func Start(ctx context.Context, o Options) (*Session, error) {
	bin := o.Bin
	if bin == "" {
		bin = "claude"
	}
	argv := append([]string{bin}, o.Args()...)
	if o.Wrap != nil {
		w, err := o.Wrap(o.Args())
		if err != nil {
			return nil, err
		}
		argv, bin = w, w[0]
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("the Claude CLI %q was not found: %w", bin, err)
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)], "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true")
	pctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(pctx, path, argv[1:]...)
	cmd.Dir = o.Cwd
	cmd.Env = env
	setProcessGroup(cmd)
	s := &Session{
		opts: o, cmd: cmd, cancel: cancel,
		pending: map[string]chan controlReply{}, openPerms: map[string]bool{}, openDialogs: map[string]string{},
		done: make(chan struct{}),
	}
	// Our own pipe for stdin (not StdinPipe): an *os.File takes write
	// deadlines, so a CLI that stops reading cannot block a writer forever.
	pr, pw, err := os.Pipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	cmd.Stdin = pr
	s.stdin = pw
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	// stderr is copied by exec itself, and WaitDelay bounds that copy once
	// the CLI has exited: a grandchild that keeps stderr open must not
	// delay the exit report (the group is killed right after Wait).
	cmd.Stderr = stderrSink{s}
	cmd.WaitDelay = stderrGrace
	if err := cmd.Start(); err != nil {
		cancel()
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	pr.Close() // the child has its copy
	if o.Resume != "" && !o.Fork {
		s.sessionID = o.Resume
	}
	if o.SessionID != "" {
		s.sessionID = o.SessionID
	}
	go s.readStdout(stdout)

	var initFields map[string]any
	if len(o.DialogKinds) > 0 {
		initFields = map[string]any{"supportedDialogKinds": o.DialogKinds}
	}
	raw, err := s.Request(ctx, "initialize", initFields)
	if err != nil {
		s.Kill()
		<-s.done
		if errors.Is(err, ErrExited) {
			ex := s.Exit()
			return nil, fmt.Errorf("the Claude CLI exited during startup (code %d): %s", ex.Code, ex.Stderr)
		}
		return nil, fmt.Errorf("initialize the Claude CLI: %w", err)
	}
	if err := json.Unmarshal(raw, &s.init); err != nil {
		s.Kill()
		<-s.done
		return nil, fmt.Errorf("initialize the Claude CLI: bad answer: %w", err)
	}
	return s, nil
}

// Init returns the CLI's answer to initialize.
func (s *Session) Init() Init { return s.init }

// SessionID returns the CLI's session id as last reported ("" before the
// first turn of a new session).
func (s *Session) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// Done is closed when the process has ended and its ExitEvent was
// delivered.
func (s *Session) Done() <-chan struct{} { return s.done }

// Exit returns how the process ended, or nil while it runs.
func (s *Session) Exit() *ExitEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exit
}

// stderrSink keeps the tail of the CLI's stderr.
type stderrSink struct{ s *Session }

func (w stderrSink) Write(b []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	s.stderr = append(s.stderr, b...)
	if len(s.stderr) > stderrTail {
		s.stderr = append([]byte(nil), s.stderr[len(s.stderr)-stderrTail:]...)
	}
	s.mu.Unlock()
	return len(b), nil
}

// readStdout decodes events until EOF, then reaps the process and reports
// its exit.
func (s *Session) readStdout(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var d decoder
	for sc.Scan() {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if s.opts.Trace != nil {
			s.opts.Trace("out", b)
		}
		evs, l, err := d.decode(b)
		if err != nil {
			s.emit(OtherEvent{Type: "invalid", Raw: json.RawMessage(strconv.Quote(string(b)))})
			continue
		}
		s.handleLine(l, evs)
	}
	// A line too long for the scanner, or a read error: the stream is
	// unusable, the process must go.
	if sc.Err() != nil {
		s.Kill()
		_, _ = io.Copy(io.Discard, r)
	}
	err := s.cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // exited 0; a grandchild still held stderr
	}
	// Our end of stdin is ours to close (exec closes only its own pipes).
	// Not under wmu: closing unblocks a writer stuck on a full pipe.
	_ = s.stdin.Close()
	// Whatever the CLI started (MCP servers, shells) goes with it; the
	// group id cannot have been reused while those still run.
	killGroup(s.cmd)
	s.cancel()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	s.mu.Lock()
	ex := &ExitEvent{Code: code, Stderr: string(s.stderr)}
	if sc.Err() != nil {
		ex.Stderr += "\n(nvim-claude: reading the CLI's output failed: " + sc.Err().Error() + ")"
	}
	s.exit = ex
	pending := s.pending
	s.pending = map[string]chan controlReply{}
	s.mu.Unlock()
	for _, ch := range pending {
		ch <- controlReply{err: ErrExited}
	}
	s.emit(*ex)
	close(s.done)
}

func (s *Session) emit(ev Event) {
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(ev)
	}
}

func (s *Session) handleLine(l *line, evs []Event) {
	switch l.Type {
	case "control_response":
		var r struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Response  json.RawMessage `json:"response"`
			Error     string          `json:"error"`
			ErrorCode string          `json:"error_code"`
		}
		if json.Unmarshal(l.Response, &r) != nil {
			return
		}
		s.mu.Lock()
		ch := s.pending[r.RequestID]
		delete(s.pending, r.RequestID)
		s.mu.Unlock()
		if ch == nil {
			return
		}
		if r.Subtype == "error" {
			ch <- controlReply{err: &ControlError{Subtype: "error", Message: r.Error, Code: r.ErrorCode}}
			return
		}
		ch <- controlReply{resp: r.Response}
		return
	case "control_request":
		var req canUseTool
		_ = json.Unmarshal(l.Request, &req)
		if req.Subtype == "request_user_dialog" {
			var d dialogRequest
			_ = json.Unmarshal(l.Request, &d)
			if !s.opts.declared(d.DialogKind) {
				// An undeclared kind is never answered: an answer is
				// either discarded or a fake dismissal. The host says so.
				s.emit(UndeclaredDialogEvent{RequestID: l.RequestID, Kind: d.DialogKind})
				return
			}
			s.mu.Lock()
			_, dup := s.openDialogs[l.RequestID]
			s.openDialogs[l.RequestID] = d.DialogKind
			s.mu.Unlock()
			if dup {
				return // one request, one dialog
			}
			s.emit(DialogRequestEvent{RequestID: l.RequestID, Kind: d.DialogKind, Payload: d.Payload, ToolUseID: d.ToolUseID})
			return
		}
		if req.Subtype != "can_use_tool" {
			// Nothing else is registered; answer so nothing waits forever.
			_ = s.writeLine(context.Background(), map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "error", "request_id": l.RequestID, "error": "nvim-claude does not support " + req.Subtype,
			}})
			return
		}
		s.mu.Lock()
		s.openPerms[l.RequestID] = true
		s.mu.Unlock()
		s.emit(PermissionRequestEvent{
			RequestID: l.RequestID, ToolName: req.ToolName, DisplayName: req.DisplayName, Input: req.Input,
			Description: req.Description, ToolUseID: req.ToolUseID, Suggestions: req.PermissionSuggestions,
			DecisionReason: req.DecisionReason, DecisionReasonType: req.DecisionReasonType,
			BlockedPath: req.BlockedPath, RequiresUserInteraction: req.RequiresUserInteraction,
		})
		return
	case "control_cancel_request":
		s.mu.Lock()
		open := s.openPerms[l.RequestID]
		delete(s.openPerms, l.RequestID)
		_, dialog := s.openDialogs[l.RequestID]
		delete(s.openDialogs, l.RequestID)
		s.mu.Unlock()
		if open {
			s.emit(PermissionCancelEvent{RequestID: l.RequestID})
		}
		if dialog {
			s.emit(DialogCancelEvent{RequestID: l.RequestID})
		}
		return
	}
	for _, ev := range evs {
		switch e := ev.(type) {
		case InitEvent:
			s.setSessionID(e.SessionID)
		case ResultEvent:
			s.setSessionID(e.SessionID)
		}
		// conversation_reset's new_conversation_id is NOT the new session
		// id (CLI 2.1.330): the init that follows it names the new session.
		s.emit(ev)
	}
}

func (s *Session) setSessionID(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	s.sessionID = id
	s.mu.Unlock()
}

// writeLine marshals v as one JSON line to the CLI's stdin. The write is
// bounded by ctx and writeTimeout: a CLI that stops reading its input does
// not block the caller (Neovim waits on some of them) forever. A line cut
// short by the deadline leaves the stream unusable: the process is killed.
func (s *Session) writeLine(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	select {
	case <-s.done:
		return ErrExited
	default:
	}
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write to the Claude CLI: %w", err)
	}
	if s.opts.Trace != nil {
		s.opts.Trace("in", b)
	}
	// Ends the write early when ctx is cancelled (not only at its
	// deadline).
	stop := context.AfterFunc(ctx, func() { _ = s.stdin.SetWriteDeadline(time.Now()) })
	_ = s.stdin.SetWriteDeadline(deadline)
	n, err := s.stdin.Write(append(b, '\n'))
	stop()
	_ = s.stdin.SetWriteDeadline(time.Time{})
	if err != nil {
		if s.Exit() != nil || errors.Is(err, os.ErrClosed) {
			return ErrExited
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if n > 0 {
				s.Kill()
				return fmt.Errorf("the Claude CLI stopped reading its input (a message was cut short; the process was ended): %w", err)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("write to the Claude CLI: %w", ctx.Err())
			}
			return fmt.Errorf("the Claude CLI is not reading its input: %w", err)
		}
		return fmt.Errorf("write to the Claude CLI: %w", err)
	}
	return nil
}

// Request sends a control request and waits for its answer (the response
// object, which may be empty). fields are merged into the request next to
// its subtype.
func (s *Session) Request(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	ch := make(chan controlReply, 1)
	s.mu.Lock()
	if s.exit != nil {
		s.mu.Unlock()
		return nil, ErrExited
	}
	s.seq++
	id := "h" + strconv.Itoa(s.seq)
	s.pending[id] = ch
	s.mu.Unlock()
	if err := s.writeLine(ctx, map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		s.forget(id)
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			var ce *ControlError
			if errors.As(r.err, &ce) {
				ce.Subtype = subtype
			}
			return nil, r.err
		}
		return r.resp, nil
	case <-ctx.Done():
		s.forget(id)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.writeLine(cctx, map[string]any{"type": "control_cancel_request", "request_id": id})
		cancel()
		return nil, fmt.Errorf("%s: %w", subtype, ctx.Err())
	}
}

func (s *Session) forget(id string) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// ContentBlock is one block of a user message: text, or a base64 image.
type ContentBlock struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *ImageSource `json:"source,omitempty"`
}

// ImageSource is a base64 image.
type ImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// Send sends a user message with the host's uuid (which command_lifecycle
// events, checkpoints and rewinds refer to). ctx bounds the write.
func (s *Session) Send(ctx context.Context, uuid string, content []ContentBlock) error {
	if len(content) == 0 {
		return errors.New("empty message")
	}
	msg := map[string]any{
		"type":               "user",
		"session_id":         "",
		"message":            map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil,
		"uuid":               uuid,
	}
	return s.writeLine(ctx, msg)
}

// PermissionUpdate is one entry of updatedPermissions.
type PermissionUpdate struct {
	Type        string           `json:"type"`
	Rules       []PermissionRule `json:"rules,omitempty"`
	Behavior    string           `json:"behavior,omitempty"`
	Mode        string           `json:"mode,omitempty"`
	Directories []string         `json:"directories,omitempty"`
	Destination string           `json:"destination"`
}

// PermissionRule is a tool rule ("Edit", or Bash with its command).
type PermissionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// Allow answers a can_use_tool request with allow. input is what the tool
// runs with: the original input or the user's edited version; it must be a
// non-empty JSON object.
func (s *Session) Allow(requestID string, input json.RawMessage, perms []PermissionUpdate) error {
	if len(input) == 0 || input[0] != '{' {
		return fmt.Errorf("allow %s: the input must be a JSON object", requestID)
	}
	resp := map[string]any{"behavior": "allow", "updatedInput": input}
	if len(perms) > 0 {
		resp["updatedPermissions"] = perms
	}
	return s.answer(requestID, resp)
}

// Deny answers a can_use_tool request with deny; the model reads message
// and goes on (no interrupt).
func (s *Session) Deny(requestID, message string) error {
	if message == "" {
		message = "The user denied this tool use."
	}
	return s.answer(requestID, map[string]any{"behavior": "deny", "message": message})
}

func (s *Session) answer(requestID string, resp map[string]any) error {
	s.mu.Lock()
	open := s.openPerms[requestID]
	delete(s.openPerms, requestID)
	s.mu.Unlock()
	if !open {
		return fmt.Errorf("permission request %s is not open (answered or cancelled)", requestID)
	}
	return s.respond(requestID, resp)
}

// respond writes the success answer to one of the CLI's control requests.
func (s *Session) respond(requestID string, resp map[string]any) error {
	return s.writeLine(context.Background(), map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID, "response": resp,
	}})
}

// Interrupt stops the running turn (the process stays).
func (s *Session) Interrupt(ctx context.Context) error {
	_, err := s.Request(ctx, "interrupt", nil)
	return err
}

// SetMode changes the permission mode (a name of [Modes], or its wire
// name).
func (s *Session) SetMode(ctx context.Context, mode string) error {
	wire := WireMode(mode)
	if wire == "" {
		return fmt.Errorf("unknown permission mode %q (want one of %v)", mode, Modes())
	}
	_, err := s.Request(ctx, "set_permission_mode", map[string]any{"mode": wire})
	return err
}

// Modes are the permission modes a session offers, by the names the CLI's
// --help gives them (2.1.332): manual asks before edits and commands,
// acceptEdits applies edits unasked, plan only plans, auto lets a
// classifier decide, dontAsk denies whatever is not allowed already.
// bypassPermissions is left out: the CLI takes it only when started with
// --dangerously-skip-permissions, which a chat never is.
func Modes() []string {
	return []string{"manual", "acceptEdits", "plan", "auto", "dontAsk"}
}

// ModeName is a mode's name in [Modes] for a name the CLI reports:
// its control protocol and stream still say "default" for manual.
func ModeName(mode string) string {
	if mode == "default" {
		return "manual"
	}
	return mode
}

// WireMode is the name the control protocol takes for mode (a name of
// [Modes] or "default"), "" when mode is none of them.
func WireMode(mode string) string {
	switch mode {
	case "manual", "default":
		return "default"
	case "acceptEdits", "plan", "auto", "dontAsk":
		return mode
	}
	return ""
}

// SetModel changes the model (not validated by the CLI: validate against
// Init().Models first) and returns the model the CLI reports it now uses
// (the alias resolved: "sonnet" -> "claude-sonnet-5-5").
func (s *Session) SetModel(ctx context.Context, model string) (string, error) {
	resp, err := s.Request(ctx, "set_model", map[string]any{"model": model})
	if err != nil {
		return "", err
	}
	var r struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(resp, &r) == nil && r.Model != "" {
		return r.Model, nil
	}
	return model, nil
}

// Close ends the session: end_session, then stdin closed, then the process
// killed if it has not exited after 3 s. It returns when the process has
// ended (or ctx ends).
func (s *Session) Close(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	ectx, cancel := context.WithTimeout(ctx, killAfter)
	_, _ = s.Request(ectx, "end_session", nil)
	cancel()
	s.wmu.Lock()
	_ = s.stdin.Close()
	s.wmu.Unlock()
	t := time.NewTimer(killAfter)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	s.Kill()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill kills the process (and its process group) at once. It does nothing
// once the process has been reaped.
func (s *Session) Kill() {
	s.mu.Lock()
	reaped := s.exit != nil
	s.mu.Unlock()
	if !reaped {
		killGroup(s.cmd)
	}
	s.cancel()
}
