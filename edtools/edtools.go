package edtools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nvim-claude/nvim-claude/edtools/discovery"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/verdict"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// The editor tools: a second MCP server, named "nvim", through
// which the model asks what Neovim knows — its language servers,
// tree-sitter, its buffers. The CLI shows the model only getDiagnostics and
// executeCode of the IDE server's tools (PROTOCOL.md §4); tools of an MCP
// server registered with --mcp-config reach it as mcp__nvim__<tool>.
//
// Transport: the CLI runs `nvim-claude mcp` (cmd/nvim-claude/mcp.go), which
// speaks the MCP stdio transport and relays every byte to this host over a
// unix socket in a private directory (0700; socket 0600). The relay finds
// the socket in NVIM_CLAUDE_MCP_SOCKET, which only the CLI :ClaudeStart
// launches gets, and the per-session token in the 0600 discovery file next
// to the socket: neither the CLI's argv (the --mcp-config JSON names the
// command only) nor its environment carries a secret (PROTOCOL.md §1). A CLI
// started elsewhere (`claude mcp add nvim -- <bin> mcp`) finds the socket
// through the discovery file next to it, chosen by working directory like
// the IDE lock file (edtools_unix.go).

// Editor is what the editor tools need from Neovim.
type Editor interface {
	LSP(ctx context.Context, q nvimbridge.LSPQuery) (nvimbridge.LSPResult, error)
	TreesitterNode(ctx context.Context, file, rel string, line, col int) (nvimbridge.TSNode, error)
	LSPBuffers(ctx context.Context) ([]nvimbridge.LSPBuffer, error)
	OpenFileAt(ctx context.Context, file, rel string, line, col int) (nvimbridge.OpenedAt, error)
	LSPApplyFiles(ctx context.Context, files []nvimbridge.LSPFileEdit) (nvimbridge.LSPApplied, error)
}

// Environment variables of the relay.
const (
	// EnvMCPSocket names the host's editor-tools socket.
	EnvMCPSocket = discovery.EnvSocket
	// EnvMCPToken may carry the socket's token for a hand-made setup; the
	// relay otherwise reads it from the discovery file next to the socket.
	EnvMCPToken = discovery.EnvToken
	// MCPServerName is the name the CLI knows the server by: its tools are
	// mcp__nvim__<tool>.
	MCPServerName = "nvim"
)

const edtoolsInstructions = "Tools of the Neovim the user is editing in: its language servers " +
	"(definition, references, implementations, type_definition, hover, document_symbols, workspace_symbols, " +
	"call_hierarchy, rename_preview, code_actions; apply_code_action applies one after the user's review), tree-sitter (treesitter_node) and its buffers (open_buffers, " +
	"open_file_at shows a file to the user). Prefer them to grep for questions about code: they know the types. " +
	"Positions are 1-based; give {file, symbol} when you do not know the column."

// Reviewer is the diff review the editor tools put a code action's edits
// before (diff.Reviews).
type Reviewer interface {
	Review(ctx context.Context, r verdict.Request) (verdict.Verdict, error)
}

// Paths checks a path a client names by the one rule of every tool
// (editorcontext.Context).
type Paths interface {
	CheckPath(ctx context.Context, p string, acc workspace.Access) (workspace.Path, error)
}

// Peers are what the editor tools use of other features, wired by app.
type Peers struct {
	Review Reviewer
	Paths  Paths
	// IDETools are the VS Code extension's tools the CLI hides from the
	// model (PROTOCOL.md §4), with the IDE server's own handlers, served
	// here too (getOpenEditors, getWorkspaceFolders, checkDocumentDirty,
	// getCurrentSelection).
	IDETools func() []mcp.Tool
	// Methods are custom JSON-RPC methods served on the socket besides
	// MCP (the CLI hooks' `nvim-claude hook`, package sessions); nil: none.
	Methods func() map[string]mcp.MethodHandler
}

// Tools is the editor tools feature: the `nvim` MCP server.
type Tools struct {
	h       host.Host
	editor  Editor
	log     *slog.Logger
	peers   Peers
	version string

	mu        sync.Mutex
	enabled   bool            // editor_tools.enable (false until Lua sent the options)
	allowList []string        // editor_tools.allow, as given
	allowAll  bool            // editor_tools.allow is nil
	allow     map[string]bool // applied by the last "edtools" request; nil: every tool
	srv       *mcp.StreamServer
	sock      string // socket path, "" when not listening
	disc      string // discovery file path
	cancel    context.CancelFunc
	done      chan struct{}
	seq       atomic.Uint64 // names apply_code_action's diffs apart
}

// New makes the editor tools feature; the socket opens when Lua sends the
// options (the "edtools" request) while the IDE server runs. version is the
// host's, which the server reports.
func New(h host.Host, ed Editor, peers Peers, version string) *Tools {
	return &Tools{h: h, editor: ed, log: h.Logger().With("feature", "edtools"), peers: peers,
		version: version}
}

// Name names the feature.
func (e *Tools) Name() string { return "edtools" }

// Hooks are the feature's Lua handler and server observers.
func (e *Tools) Hooks() host.Hooks {
	return host.Hooks{
		LuaRequests: map[string]host.LuaRequest{
			"edtools": host.Request("edtools", e.handleConfig),
		},
		// The IDE server's start does not start the listener: Lua's
		// terminal.attach(), run right after every start, asks for the
		// server ("edtools" request), and that starts it.
		Options:       e.setOptions,
		ServerStopped: e.stop,
		Close:         e.stop,
	}
}

// setOptions takes setup()'s editor_tools (whenever Lua sends them);
// the next "edtools" request applies them.
func (e *Tools) setOptions(o host.Options) error {
	var t Options
	if err := o.Decode("editor_tools", &t); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enabled = t.Enable
	e.allowList = append([]string(nil), t.Allow...)
	e.allowAll = t.Allow == nil
	return nil
}

// Options are setup()'s editor_tools table.
type Options struct {
	Enable bool     `json:"enable"`
	Allow  []string `json:"allow"` // nil: every tool
}

// EdtoolsInfo is what Lua needs to register the server with a CLI.
type EdtoolsInfo struct {
	Enabled bool     `json:"enabled"`
	Socket  string   `json:"socket,omitempty"`
	Tools   []string `json:"tools"`
	// MCPConfig is the --mcp-config JSON (no secret in it).
	MCPConfig string `json:"mcp_config,omitempty"`
	// AddCommand is the `claude mcp add` command for a CLI run elsewhere.
	AddCommand string `json:"add_command,omitempty"`
	// Unknown lists allow entries that name no tool.
	Unknown []string `json:"unknown,omitempty"`
}

// handleConfig applies the options and returns how to reach the server. It
// starts the listener when the IDE server runs and the tools are enabled.
func (e *Tools) handleConfig(context.Context, struct{}) (any, error) {
	known := map[string]bool{}
	for _, t := range e.allTools() {
		known[t.Name] = true
	}
	var unknown []string
	e.mu.Lock()
	e.allow = nil
	if !e.allowAll {
		e.allow = map[string]bool{}
		for _, n := range e.allowList {
			e.allow[n] = true
			if !known[n] {
				unknown = append(unknown, n)
			}
		}
	}
	enabled := e.enabled
	e.mu.Unlock()
	var err error
	if !enabled {
		e.stop()
	} else if e.h.Running() || e.listening() {
		err = e.start()
	}
	info := e.info()
	info.Unknown = unknown
	return info, err
}

func (e *Tools) listening() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv != nil
}

func (e *Tools) info() EdtoolsInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := EdtoolsInfo{Enabled: e.enabled && e.srv != nil, Tools: []string{}}
	if !info.Enabled {
		return info
	}
	info.Socket = e.sock
	info.Tools = e.srv.ToolNames()
	bin := relayCommand()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		MCPServerName: map[string]any{"type": "stdio", "command": bin, "args": []string{"mcp"}},
	}})
	info.MCPConfig = string(cfg)
	info.AddCommand = fmt.Sprintf("claude mcp add %s -- %s mcp", MCPServerName, shellQuote(bin))
	return info
}

// relayCommand is this binary: the relay is its `mcp` subcommand.
func relayCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "nvim-claude"
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// edTools lists the enabled tools, filtered by allow (not "tools": the
// component is no toolProvider of the IDE server).
func (e *Tools) edTools() []mcp.Tool {
	e.mu.Lock()
	allow := e.allow
	e.mu.Unlock()
	var out []mcp.Tool
	for _, t := range e.allTools() {
		if allow == nil || allow[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// start listens on a fresh socket, or refreshes the tool set when the
// server is already listening.
func (e *Tools) start() error {
	tools := e.edTools()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		return e.srv.SetTools(tools)
	}
	srv := mcp.NewStreamServer(mcp.StreamConfig{
		ServerName:    "nvim-claude-editor",
		ServerVersion: e.version,
		Instructions:  edtoolsInstructions,
		Logger:        e.log,
	})
	if err := srv.SetTools(tools); err != nil {
		return fmt.Errorf("editor tools: %w", err)
	}
	if e.peers.Methods != nil {
		for name, h := range e.peers.Methods() {
			srv.HandleMethod(name, h)
		}
	}
	pid := e.h.EditorPID()
	ln, sock, disc, err := discovery.Listen(pid, discovery.Discovery{Token: srv.Token(), Workspace: e.h.Workspace().Root(), PID: pid, HostPID: os.Getpid()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			e.log.Error("editor tools: serve", "err", err)
		}
	}()
	e.srv, e.sock, e.disc, e.cancel, e.done = srv, sock, disc, cancel, done
	e.log.Info("editor tools listening", "socket", sock, "tools", len(tools))
	return nil
}

// stop closes the socket and its connections and removes its files.
func (e *Tools) stop() {
	e.mu.Lock()
	cancel, done, sock, disc := e.cancel, e.done, e.sock, e.disc
	e.srv, e.sock, e.disc, e.cancel, e.done = nil, "", "", nil, nil
	e.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	_ = os.Remove(sock)
	_ = os.Remove(disc)
}

// Relay is how a chat's CLI reaches the server (chatpanel.EditorTools):
// the --mcp-config JSON and the socket, when the server listens.
func (e *Tools) Relay() (mcpConfig, socket string, ok bool) {
	info := e.info()
	return info.MCPConfig, info.Socket, info.Enabled && info.MCPConfig != ""
}
