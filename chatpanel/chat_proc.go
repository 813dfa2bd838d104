package chatpanel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/nvim-claude/nvim-claude/chat"
)

// A chat's process: opening it (its CLI started in the background),
// closing it, and what Lua learns when the CLI starts, fails or exits.

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
	// Remote runs the CLI on the far side open now (Peers.Remote): its
	// paths are the far side's, mapped at the workspace.
	Remote bool `json:"remote"`
}

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
		return c.ed.EmitIdempotent(ctx, name, data)
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
	var wrap func([]string) ([]string, error)
	if p.Remote {
		if c.peers.Remote == nil {
			return nil, errors.New("this host cannot run a chat elsewhere")
		}
		// The editor tools' socket is this machine's: a far CLI has none.
		p.EditorTools = false
		wrap = func(args []string) ([]string, error) {
			return c.peers.Remote.Command(args, map[string]string{"CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "true"})
		}
	}
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
			MCPConfig: mcpConfig, OnEvent: ch.onEvent, DialogKinds: dialogKinds(), Wrap: wrap,
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
