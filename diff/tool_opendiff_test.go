package diff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const diffTab = "✻ [Claude Code] main.txt (6c8f53) ⧉"

// Each case is what the CLI sends, what the user does in Neovim, and what
// the CLI must get back, frame for frame.
func TestOpenDiffTranscripts(t *testing.T) {
	proposal := strings.Replace(diffMainText, "three", "THREE", 1)
	twoHunks := strings.NewReplacer("two", "TWO", "nine", "NINE").Replace(diffMainText)
	open := "-> " + diffOpenCall(1, "$FILE", diffTab, proposal)
	waitOpen := `?? #require("claude.diff").pending() == 1`
	waitClosed := `?? #require("claude.diff").pending() == 0 and #vim.api.nvim_list_wins() == 2`
	tests := []struct {
		name       string
		transcript string
	}{
		{"accept with :w after an edit", diffLines(
			open, waitOpen,
			"..", // openDiff blocks until the user decides
			`!! vim.api.nvim_buf_set_lines(0, 0, 1, false, { "ONE (edited by the user)" }) vim.cmd("write")`,
			"<- "+diffTextResult(1, "FILE_SAVED", strings.Replace(proposal, "one", "ONE (edited by the user)", 1)),
			waitClosed,
			// The CLI then sends close_tab, usually twice.
			"-> "+diffCloseTabCall(2, diffTab), "<- "+diffTextResult(2, "TAB_CLOSED"),
			"-> "+diffCloseTabCall(3, diffTab), "<- "+diffTextResult(3, "TAB_CLOSED"),
		)},
		{"accept unchanged with :ClaudeDiffAccept", diffLines(
			open, waitOpen,
			`!! vim.cmd("ClaudeDiffAccept")`,
			"<- "+diffTextResult(1, "FILE_SAVED", proposal),
			waitClosed,
		)},
		{"reject with :q", diffLines(
			open, waitOpen,
			`!! vim.cmd("quit")`,
			"<- "+diffTextResult(1, "DIFF_REJECTED"),
			waitClosed,
			"-> "+diffCloseTabCall(2, diffTab), "<- "+diffTextResult(2, "TAB_CLOSED"),
		)},
		{"reject with :ClaudeDiffReject", diffLines(
			open, waitOpen,
			`!! vim.cmd("ClaudeDiffReject")`,
			"<- "+diffTextResult(1, "DIFF_REJECTED"),
			waitClosed,
		)},
		{"partial accept: do takes one hunk back", diffLines(
			"-> "+diffOpenCall(1, "$FILE", diffTab, twoHunks), waitOpen,
			`!! vim.api.nvim_win_set_cursor(0, { 9, 0 }) vim.cmd("diffget") vim.cmd("write")`,
			"<- "+diffTextResult(1, "FILE_SAVED", strings.Replace(diffMainText, "two", "TWO", 1)),
			waitClosed,
		)},
		{"a new file, CRLF and multibyte, byte for byte", diffLines(
			"-> "+diffOpenCall(1, "$DIR/new/ünï.txt", "✻ [Claude Code] ünï.txt (1) ⧉", "héllo\r\n日本\r\n😀"), waitOpen,
			`!! vim.cmd("write")`,
			"<- "+diffTextResult(1, "FILE_SAVED", "héllo\r\n日本\r\n😀"),
			waitClosed,
		)},
		{"the CLI cancels: the diff closes, no answer", diffLines(
			open, waitOpen,
			`-> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user interrupted"}}`,
			waitClosed,
			"..",
		)},
		{"the same tab again replaces the first, which gets a no", diffLines(
			open, waitOpen,
			"-> "+diffOpenCall(2, "$FILE", diffTab, twoHunks),
			"<- "+diffTextResult(1, "DIFF_REJECTED"),
			`?? #require("claude.diff").pending() == 1 and vim.api.nvim_buf_get_lines(require("claude.diff").pending()[1].proposal_bufnr, 1, 2, false)[1] == "TWO"`,
			`!! vim.cmd("ClaudeDiffAccept")`,
			"<- "+diffTextResult(2, "FILE_SAVED", twoHunks),
			waitClosed,
		)},
		{"a relative path is the workspace's", diffLines(
			"-> "+diffOpenCall(1, "main.txt", diffTab, proposal), waitOpen,
			`?? require("claude.diff").pending()[1].file == vim.fn.getcwd() .. "/main.txt"`,
			`!! vim.cmd("ClaudeDiffReject")`,
			"<- "+diffTextResult(1, "DIFF_REJECTED"),
		)},
		{"bad arguments", diffLines(
			"-> "+diffToolCall(1, "openDiff", map[string]string{"new_file_path": "$FILE", "tab_name": "x"}),
			"<- "+diffErrorResult(1, "openDiff: new_file_contents is required"),
			"-> "+diffToolCall(2, "openDiff", map[string]string{"new_file_contents": "x"}),
			"<- "+diffErrorResult(2, "openDiff: new_file_path is required"),
			"-> "+diffToolCall(3, "openDiff", map[string]any{"new_file_path": 7}),
			"<- "+diffErrorResult(3, "openDiff: invalid arguments: new_file_path must be a string"),
			`?? #require("claude.diff").pending() == 0`,
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startDiffHarness(t, "")
			cli := h.connect(t, 4242)
			h.run(t, []*diffCLI{cli}, tt.transcript)
			if b, _ := os.ReadFile(filepath.Join(h.dir, "main.txt")); string(b) != diffMainText {
				t.Fatalf("main.txt was written: %q", b)
			}
			if _, err := os.Stat(filepath.Join(h.dir, "new")); !os.IsNotExist(err) {
				t.Fatal("a directory for the new file was created: the CLI does that")
			}
			if n := h.diffWindows(t); n != 0 {
				t.Fatalf("%d diff windows left", n)
			}
		})
	}
}

// A CLI that goes away while its diff is pending: the diff closes (the
// answer goes nowhere), and the layout is back.
func TestOpenDiffDisconnect(t *testing.T) {
	h := startDiffHarness(t, "")
	cli := h.connect(t, 4242)
	h.run(t, []*diffCLI{cli}, diffLines(
		"-> "+diffOpenCall(1, "$FILE", diffTab, "changed\n"),
		`?? #require("claude.diff").pending() == 1`,
	))
	_ = cli.WS.Close()
	h.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 0 and #vim.api.nvim_list_wins() == 2`,
		`return require("claude.diff").pending()`, "the diff to close")
	if n := h.diffWindows(t); n != 0 {
		t.Fatalf("%d diff windows left", n)
	}
	var events []string
	h.Eval(t, `return vim.tbl_map(function(b) return vim.fn.bufname(b) end, vim.api.nvim_list_bufs())`, &events)
	for _, name := range events {
		if strings.Contains(name, "Claude Code") {
			t.Fatalf("proposal buffer left behind: %v", events)
		}
	}
}

// The host stopping (:ClaudeStop, the job exiting) closes what is open.
func TestOpenDiffServerStop(t *testing.T) {
	h := startDiffHarness(t, "")
	cli := h.connect(t, 4242)
	h.run(t, []*diffCLI{cli}, diffLines(
		"-> "+diffOpenCall(1, "$FILE", diffTab, "changed\n"),
		`?? #require("claude.diff").pending() == 1`,
	))
	if err := h.app.StopServer(); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 0 and #vim.api.nvim_list_wins() == 2`,
		`return require("claude.diff").pending()`, "the diff to close")
}

// A 5 MB proposal goes through the socket, Neovim and back in one piece.
func TestOpenDiffLarge(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 5<<20; i++ {
		sb.WriteString("a fairly long generated line of text, number ")
		sb.WriteString(strings.Repeat("x", i%40))
		sb.WriteString("\n")
	}
	big := sb.String()
	h := startDiffHarness(t, "")
	cli := h.connect(t, 4242)
	h.run(t, []*diffCLI{cli}, diffLines(
		"-> "+diffOpenCall(1, "$FILE", diffTab, big),
		`?? #require("claude.diff").pending() == 1`,
		`!! vim.cmd("ClaudeDiffAccept")`,
		"<- "+diffTextResult(1, "FILE_SAVED", big),
	))
}
