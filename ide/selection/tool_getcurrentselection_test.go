package selection

import "testing"

// getCurrentSelection reports the active editor's selection: live in visual
// mode, the cursor otherwise, the file window while the Claude terminal has
// the focus — and nothing of a denied file.
func TestToolGetCurrentSelection(t *testing.T) {
	h := startSelHarness(t, selHarnessOpts{})
	c := h.connect(t, 4242)
	h.runSelTranscript(t, c, `
# The cursor alone: an empty selection where it is, in UTF-16 units
# ("second 日本 line": byte 10 is 本, the 9th character).
!lua vim.api.nvim_win_set_cursor(0, {2, 10})
-> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":1,\"character\":8},\"end\":{\"line\":1,\"character\":8},\"isEmpty\":true}}"}]}}

# A charwise selection over an emoji (two UTF-16 units), still in visual mode.
!! 3G7|vl
-> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"😀 \",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":2,\"character\":6},\"end\":{\"line\":2,\"character\":9},\"isEmpty\":false}}"}]}}

# Linewise: whole lines, ending at the start of the next one.
!! <Esc>1GVj
-> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"first line\\nsecond 日本 line\\n\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":2,\"character\":0},\"isEmpty\":false}}"}]}}

# Blockwise: the block's columns on each line.
!! <Esc>1G2|<C-v>jl
-> {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"ir\\nec\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":0,\"character\":1},\"end\":{\"line\":1,\"character\":3},\"isEmpty\":false}}"}]}}

# The visual selection just ended stays until the cursor moves — also
# while the Claude terminal (any non-file window) has the focus.
!! <Esc>5GVj<Esc>
!lua vim.cmd("botright vsplit") vim.cmd("terminal")
-> {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"fifth line\\nsixth line\\n\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":4,\"character\":0},\"end\":{\"line\":6,\"character\":0},\"isEmpty\":false}}"}]}}

# After a move in the file window, its cursor.
!lua vim.cmd("wincmd p") vim.api.nvim_win_set_cursor(0, {1, 3}) vim.cmd("wincmd p")
-> {"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":0,\"character\":3},\"end\":{\"line\":0,\"character\":3},\"isEmpty\":true}}"}]}}

# A denied file: refused, nothing of it shared.
!lua vim.cmd("wincmd p") vim.cmd("edit $DIR/.env") vim.cmd("normal! V")
-> {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\".env matches the deny-list (security.deny): its contents are not shared\"}"}]}}

# No window shows a file.
!! <Esc>
!lua vim.cmd("tabnew") vim.cmd("terminal")
-> {"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\"No active editor found\"}"}]}}

# Sharing off: nothing at all.
!lua vim.cmd("tabclose!") vim.cmd("edit $FILE") require("claude.selection").share("off")
-> {"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"getCurrentSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\"Selection sharing is off in Neovim (the user can turn it on with :ClaudeShare on)\"}"}]}}
`)
}
