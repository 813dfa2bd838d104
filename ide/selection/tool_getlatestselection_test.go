package selection

import "testing"

// getLatestSelection answers the selection last shared, even from a file no
// longer active, including a debounced update still pending.
func TestToolGetLatestSelection(t *testing.T) {
	// An hour's debounce: only the tool's flush makes the pending pulls.
	h := startSelHarness(t, selHarnessOpts{hold: true, noAttach: true})
	c := h.connect(t, 4242)
	h.runSelTranscript(t, c, `
# Nothing shared yet (tracking started on a buffer that is no file).
!lua vim.cmd("enew") require("claude.selection").attach($CHAN)
-> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\"No selection available\"}"}]}}

# A cursor move: its pull is pending (debounce), the tool makes it now.
!lua vim.cmd("edit $FILE")
!! 2G
-> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":1,\"character\":0},\"end\":{\"line\":1,\"character\":0},\"isEmpty\":true}}"}]}}

# A visual selection that ended is sent at once, debounce or not.
!! 1G3|vj<Esc>
<- {"jsonrpc":"2.0","method":"selection_changed","params":{"text":"rst line\nsec","filePath":"$FILE","fileUrl":"$URL","selection":{"start":{"line":0,"character":2},"end":{"line":1,"character":3},"isEmpty":false}}}
-> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"rst line\\nsec\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":0,\"character\":2},\"end\":{\"line\":1,\"character\":3},\"isEmpty\":false}}"}]}}

# Windows that show no file change nothing: the latest stays.
!lua vim.cmd("help")
-> {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"rst line\\nsec\",\"filePath\":\"$FILE\",\"fileUrl\":\"$URL\",\"selection\":{\"start\":{\"line\":0,\"character\":2},\"end\":{\"line\":1,\"character\":3},\"isEmpty\":false}}"}]}}

# Another file: the latest is there.
!lua vim.cmd("close") vim.cmd("edit $OTHER")
-> {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"success\":true,\"text\":\"\",\"filePath\":\"$OTHER\",\"fileUrl\":\"file://$OTHER\",\"selection\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,\"character\":0},\"isEmpty\":true}}"}]}}

# A denied file takes the latest back.
!lua vim.cmd("edit $DIR/.env")
-> {"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\"No selection available\"}"}]}}

# Sharing off.
!lua vim.cmd("edit $FILE") require("claude.selection").share("off")
-> {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"getLatestSelection","arguments":{}}}
<- {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\"Selection sharing is off in Neovim (the user can turn it on with :ClaudeShare on)\"}"}]}}
`)
}
