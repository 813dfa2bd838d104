package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/nvim-claude/nvim-claude/edtools/discovery"
)

// runMCP is `nvim-claude mcp`: the editor tools' MCP server as the Claude
// Code CLI runs it (stdio transport). It relays bytes between its stdio and
// the Neovim host's private unix socket, named by NVIM_CLAUDE_MCP_SOCKET
// (set only for the CLI that :ClaudeStart launches), or else found through
// the discovery file of the Neovim whose workspace holds the working
// directory. The token comes from the 0600 discovery file beside the socket
// (or NVIM_CLAUDE_MCP_TOKEN, for hand-made setups): no secret in argv or
// the environment. The host does all
// the MCP work; this process only carries it.
func runMCP(stdin io.Reader, stdout io.Writer, stderr io.Writer, getenv func(string) string) int {
	sock, token := getenv(discovery.EnvSocket), getenv(discovery.EnvToken)
	how := "from " + discovery.EnvSocket
	if sock != "" && token == "" {
		var err error
		if token, err = discovery.Token(sock); err != nil {
			fmt.Fprintln(stderr, "nvim-claude mcp:", err)
			return 1
		}
	}
	if sock == "" {
		how = "found by working directory"
		cwd, err := os.Getwd()
		if err == nil {
			sock, token, err = discovery.Find(cwd)
		}
		if err != nil {
			fmt.Fprintln(stderr, "nvim-claude mcp:", err)
			return 1
		}
	}
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "nvim-claude mcp: cannot reach Neovim at %s: %v (is :ClaudeStart still running?)\n", sock, err)
		return 1
	}
	defer conn.Close()
	// stderr goes to the CLI's MCP log: say which Neovim this is.
	fmt.Fprintf(stderr, "nvim-claude mcp: relaying to %s (%s)\n", sock, how)
	hello, _ := json.Marshal(map[string]string{"token": token})
	if _, err := conn.Write(append(hello, '\n')); err != nil {
		fmt.Fprintln(stderr, "nvim-claude mcp: cannot talk to Neovim:", err)
		return 1
	}
	// stdin → host; at stdin's end (the CLI is done) the host sees EOF,
	// finishes the calls in flight and closes, which ends host → stdout.
	go func() {
		_, _ = io.Copy(conn, stdin)
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}()
	if _, err := io.Copy(stdout, conn); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintln(stderr, "nvim-claude mcp: connection to Neovim lost:", err)
		return 1
	}
	return 0
}
