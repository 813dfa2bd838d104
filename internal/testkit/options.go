package testkit

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// LuaOptions are the host options as the plugin's Lua in n resolves them
// from its setup() (require("claude.config").host_options()): what Lua
// sends with "start". Tests take them from Lua, the options' one source,
// rather than writing defaults of their own.
func LuaOptions(t testing.TB, n *nvimtest.Nvim) *host.Options {
	t.Helper()
	var o host.Options
	n.Eval(t, `return require("claude.config").host_options()`, &o)
	return &o
}
