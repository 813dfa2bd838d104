// Package edtools is the editor tools feature: a second MCP server, named
// "nvim", that serves what Neovim knows (language servers, tree-sitter,
// buffers) over a private unix socket the `nvim-claude mcp` relay reaches
// (its discovery is the subpackage edtools/discovery, small enough for the
// relay).
//
// What it needs of other features (the diff review, the path rule, the
// IDE server's tools it also serves) is declared in Peers. It must never
// import another feature, the IDE server's lifecycle or go-client.
package edtools
