//go:build unix

package e2e

// stubLSP is a language server that points into a file it is told of:
// every answer that names files names the file it was asked about and the
// "secret" file ($NVIM_CLAUDE_E2E_STUB_SECRET, a deny-listed .env in the
// tests). It lets a test check that the editor tools withhold what a
// language server says about a deny-listed file, whatever the server.
// It is this test binary itself, run by Neovim with
// NVIM_CLAUDE_E2E_STUB_LSP=1 in its environment (init below), so it needs
// no build step and runs under every Neovim line.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	envStubLSP    = "NVIM_CLAUDE_E2E_STUB_LSP"
	envStubSecret = "NVIM_CLAUDE_E2E_STUB_SECRET"
)

func init() {
	if os.Getenv(envStubLSP) == "1" {
		os.Exit(runStubLSP(os.Stdin, os.Stdout, os.Getenv(envStubSecret)))
	}
}

// stubLSPSetup is the Lua that starts the stub for the current buffer:
// vim.lsp.start on 0.8+, start_client and buf_attach_client on 0.7.
const stubLSPSetup = `local bin, secret, root = ...
local cfg = { name = "stub", cmd = { bin, "-test.run=^$" }, root_dir = root,
  cmd_env = { ` + envStubLSP + ` = "1", ` + envStubSecret + ` = secret } }
if vim.lsp.start then
  vim.lsp.start(cfg)
else
  vim.lsp.buf_attach_client(0, vim.lsp.start_client(cfg))
end`

func fileURIOf(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

func runStubLSP(in io.Reader, out io.Writer, secret string) int {
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	secretURI := fileURIOf(secret)
	rng := func(line, col, endCol int) map[string]any {
		return map[string]any{"start": map[string]any{"line": line, "character": col}, "end": map[string]any{"line": line, "character": endCol}}
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "Content-Length: %d\r\n\r\n%s", len(b), b)
		_ = w.Flush()
	}
	for {
		n := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return 0
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length:"); ok {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if n < 0 {
			return 1
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return 0
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TextDocument struct {
					URI string `json:"uri"`
				} `json:"textDocument"`
				Item map[string]any `json:"item"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil {
			continue
		}
		if msg.Method == "exit" {
			return 0
		}
		if len(msg.ID) == 0 || msg.Method == "" {
			continue // a notification, or an answer to us
		}
		here := msg.Params.TextDocument.URI
		if here == "" { // workspace/symbol names no document: the workspace's main.stub
			here = fileURIOf(filepath.Join(filepath.Dir(secret), "main.stub"))
		}
		item := func(uri, name string) map[string]any {
			return map[string]any{"name": name, "kind": 12, "uri": uri, "range": rng(0, 0, 5), "selectionRange": rng(0, 0, 5)}
		}
		var result any
		switch msg.Method {
		case "initialize":
			result = map[string]any{"capabilities": map[string]any{
				"definitionProvider": true, "referencesProvider": true, "implementationProvider": true,
				"typeDefinitionProvider": true, "hoverProvider": true, "documentSymbolProvider": true,
				"workspaceSymbolProvider": true, "callHierarchyProvider": true, "renameProvider": true,
				"codeActionProvider": true, "textDocumentSync": 1,
			}}
		case "shutdown":
			result = nil
		case "textDocument/definition", "textDocument/references", "textDocument/implementation", "textDocument/typeDefinition":
			result = []any{
				map[string]any{"uri": here, "range": rng(0, 0, 5)},
				map[string]any{"uri": secretURI, "range": rng(0, 0, 7)},
			}
		case "textDocument/hover":
			result = map[string]any{"contents": map[string]any{"kind": "plaintext", "value": "stub hover"}}
		case "textDocument/documentSymbol":
			result = []any{map[string]any{"name": "hello", "kind": 12, "range": rng(0, 0, 5), "selectionRange": rng(0, 0, 5)}}
		case "workspace/symbol":
			result = []any{
				map[string]any{"name": "hello", "kind": 12, "location": map[string]any{"uri": here, "range": rng(0, 0, 5)}},
				map[string]any{"name": "API_KEY", "kind": 14, "location": map[string]any{"uri": secretURI, "range": rng(0, 0, 7)}},
			}
		case "textDocument/prepareCallHierarchy":
			result = []any{item(here, "hello")}
		case "callHierarchy/incomingCalls":
			result = []any{map[string]any{"from": item(secretURI, "API_KEY"), "fromRanges": []any{rng(0, 0, 7)}}}
		case "callHierarchy/outgoingCalls":
			result = []any{map[string]any{"to": item(secretURI, "API_KEY"), "fromRanges": []any{rng(0, 0, 5)}}}
		case "textDocument/rename":
			result = map[string]any{"changes": map[string]any{
				here:      []any{map[string]any{"range": rng(0, 0, 5), "newText": "howdy"}},
				secretURI: []any{map[string]any{"range": rng(0, 0, 7), "newText": "RENAMED"}},
			}}
		case "textDocument/codeAction":
			result = []any{map[string]any{"title": "Touch the secret", "kind": "quickfix",
				"edit": map[string]any{"changes": map[string]any{secretURI: []any{map[string]any{"range": rng(0, 0, 7), "newText": "PWNED"}}}}}}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "not in the stub: " + msg.Method}})
			continue
		}
		send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}
}
