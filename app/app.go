// Package app wires nvim-claude: it builds each feature package
// (ide/selection, ide/editorcontext, review, kernel, edtools, chatpanel,
// sessions, remote)
// with the host.Host of the lifecycle (app/core), the editor interface the
// feature declares and the peers it declares, so that what a feature needs
// of another is checked by the compiler here. It is the only package that
// imports features, and it must hold no feature logic and no lifecycle
// logic of its own.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/chatpanel"
	"github.com/nvim-claude/nvim-claude/diff"
	"github.com/nvim-claude/nvim-claude/edtools"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/ide/editorcontext"
	"github.com/nvim-claude/nvim-claude/ide/selection"
	"github.com/nvim-claude/nvim-claude/kernel"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/remote"
	"github.com/nvim-claude/nvim-claude/review"
	"github.com/nvim-claude/nvim-claude/sessions"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Version is the version of the binary and of the Lua side it ships with
// (lua/claude/version.lua must match; a test checks it).
const Version = "0.1.0"

// Editor is what the application needs from Neovim: the interface each
// feature declares (nvimbridge.Bridge in production). An editor missing a
// feature's method is a compile error, never a feature silently off.
type Editor interface {
	selection.Editor
	editorcontext.Editor
	diff.Editor
	kernel.Editor
	edtools.Editor
	chatpanel.Editor
}

// Options configure the application.
type Options struct {
	Editor Editor // nil: no editor (tests of the lifecycle alone)
	Logger *slog.Logger
	// NewServer builds the MCP server; nil means mcp.NewServer.
	NewServer func(cfg mcp.Config) (core.Server, error)
}

// App is the running application (app/core.App with every feature).
type App = core.App

// New builds every feature and starts the application; Close stops it.
func New(opts Options) *App {
	var emitter core.Emitter
	if opts.Editor != nil {
		emitter = opts.Editor
	}
	ws := workspace.New()
	return core.New(core.Options{
		Editor:    emitter,
		Logger:    opts.Logger,
		Version:   Version,
		NewServer: opts.NewServer,
		Workspace: ws,
		Features:  func(h host.Host) []host.Feature { return Features(h, ws, opts.Editor) },
	})
}

// Features builds the features on h and ed and gives each the peers it
// declares; ws is h's workspace, whose folders only the editor context
// changes.
func Features(h host.Host, ws *workspace.Workspace, ed Editor) []host.Feature {
	sel := selection.New(h, ed)
	ctx := editorcontext.New(h, ed, ws, Version)
	rev := diff.New(h, ed)
	sess := sessions.New(h)
	far := remote.NewLink(h, remote.Peers{SetMap: ws.SetMap, Lock: lockOf(h), Settings: sess.FarSettings})
	sess.SetFar(far)
	sel.SetRouter(sessionRouter{h: h, sess: sess})
	rev.SetSessions(sessionNamer{h: h, sess: sess})
	tools := edtools.New(h, ed, edtools.Peers{
		Review: rev,
		Paths:  ctx,
		IDETools: func() []mcp.Tool {
			return []mcp.Tool{ctx.OpenEditorsTool(), ctx.WorkspaceFoldersTool(), ctx.CheckDocumentDirtyTool(),
				sel.CurrentSelectionTool()}
		},
		Methods: sess.Methods,
	}, Version)
	return []host.Feature{
		sel,
		ctx,
		rev,
		kernel.New(h, ed),
		tools,
		chatpanel.New(h, ed, chatpanel.Peers{Review: rev, Tools: tools, Sessions: sess, Remote: far}),
		review.New(h),
		sess,
		far,
	}
}

// lockOf reads the running IDE server's lock file for the remote link,
// which writes its far copy: the lifecycle's server, when h is the
// lifecycle (a feature's own tests give another host, with no server).
func lockOf(h host.Host) func() (int, []byte, error) {
	return func() (int, []byte, error) {
		lc, ok := h.(interface{ Server() core.Server })
		if !ok {
			return 0, nil, host.ErrNotRunning
		}
		srv := lc.Server()
		if srv == nil {
			return 0, nil, host.ErrNotRunning
		}
		b, err := os.ReadFile(srv.LockPath())
		if err != nil {
			return 0, nil, fmt.Errorf("the lock file: %w", err)
		}
		return srv.Port(), b, nil
	}
}

// EarlyStartEnv names the variable Lua starts the host with when the
// server should start at once (auto_start): {"version", "options",
// "start"}, as the "options" and "start" requests would send them.
const EarlyStartEnv = "NVIM_CLAUDE_START"

// Serve runs the application on the msgpack-RPC channel to Neovim (r, w:
// the job's stdin and stdout) until Neovim closes it or ctx ends (a
// signal), then stops the IDE server and every feature.
func Serve(ctx context.Context, r io.Reader, w io.WriteCloser, log *slog.Logger) error {
	bridge, err := nvimbridge.New(r, w, w, log.With("component", "nvim"))
	if err != nil {
		return fmt.Errorf("connect to Neovim: %w", err)
	}
	defer func() { _ = bridge.Close() }()
	a := New(Options{Editor: bridge, Logger: log})
	if err := a.Register(bridge); err != nil {
		_ = a.Close()
		return fmt.Errorf("register handlers: %w", err)
	}
	// auto_start hands the start request to the job itself, so that the
	// server listens while Neovim is still starting, not a main-loop
	// turn and two round trips after it. The variable is not for the CLIs,
	// shells and hooks the host starts: it goes before any request can
	// start one.
	early, isEarly := os.LookupEnv(EarlyStartEnv)
	_ = os.Unsetenv(EarlyStartEnv)
	served := make(chan error, 1)
	go func() { served <- bridge.Serve() }()
	if isEarly {
		err := a.StartEarly(ctx, []byte(early), Version)
		if err != nil {
			// Lua's own options and start requests follow and say what is wrong.
			log.Warn("early start", "err", err)
		}
		// Lua waits for this, not for the host's start, to send its requests.
		a.Emit("early_start", map[string]any{"ok": err == nil})
	}
	log.Info("started", "version", Version, "pid", os.Getpid())
	// A host killed outright could not remove its proposal directory.
	if n := nvimbridge.SweepStaleProposals(); n > 0 {
		log.Info("removed the proposal directories of hosts that are gone", "count", n)
	}
	select {
	case err := <-served:
		// Neovim closed the channel: it exited or stopped the job.
		if err != nil && !errors.Is(err, io.EOF) {
			log.Warn("rpc channel closed", "err", err)
		}
	case <-ctx.Done():
		log.Info("signal received; shutting down")
	}
	if err := a.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
