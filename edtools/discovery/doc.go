// Package discovery is how the `nvim-claude mcp` relay finds the editor
// tools' socket of a running host: the private socket directory (0700), the
// discovery file beside each socket (0600: the socket, its token, the
// Neovim's workspace and pids), and the search by working directory for a
// relay started without NVIM_CLAUDE_MCP_SOCKET.
//
// It is small on purpose: the relay imports it and nothing else of the
// host. It must never know MCP, Neovim or the editor tools themselves.
package discovery

// Environment variables of the relay.
const (
	// EnvSocket names the host's editor-tools socket.
	EnvSocket = "NVIM_CLAUDE_MCP_SOCKET"
	// EnvToken may carry the socket's token for a hand-made setup; the
	// relay otherwise reads it from the discovery file next to the socket.
	EnvToken = "NVIM_CLAUDE_MCP_TOKEN"
)

// Discovery is the content of a discovery file.
type Discovery struct {
	Socket    string `json:"socket"`
	Token     string `json:"token"`
	Workspace string `json:"workspace"`
	PID       int    `json:"pid"`      // the Neovim's
	HostPID   int    `json:"host_pid"` // the host's
}
