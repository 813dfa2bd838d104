package diff

import (
	"strings"
	"testing"
)

func TestCloseTabTranscripts(t *testing.T) {
	proposal := strings.Replace(diffMainText, "four", "FOUR", 1)
	open := "-> " + diffOpenCall(1, "$FILE", diffTab, proposal)
	waitOpen := `?? #require("claude.diff").pending() == 1`
	closed := `?? #require("claude.diff").pending() == 0 and #vim.api.nvim_list_wins() == 2`
	tests := []struct {
		name       string
		transcript string
	}{
		{"the user answered in the terminal: the pending diff gets TAB_CLOSED", diffLines(
			open, waitOpen,
			"-> "+diffCloseTabCall(2, diffTab),
			"<* "+diffTextResult(1, "TAB_CLOSED"),
			"<* "+diffTextResult(2, "TAB_CLOSED"),
			closed,
			// idempotent: the CLI sends it twice
			"-> "+diffCloseTabCall(3, diffTab),
			"<- "+diffTextResult(3, "TAB_CLOSED"),
			"..",
		)},
		{"after the user decided", diffLines(
			open, waitOpen,
			`!! vim.cmd("write")`,
			"<- "+diffTextResult(1, "FILE_SAVED", proposal),
			"-> "+diffCloseTabCall(2, diffTab),
			"<- "+diffTextResult(2, "TAB_CLOSED"),
			closed,
		)},
		{"an unknown tab", diffLines(
			"-> "+diffCloseTabCall(1, "no such tab"),
			"<- "+diffTextResult(1, "TAB_CLOSED"),
		)},
		{"another tab's close leaves this diff open", diffLines(
			open, waitOpen,
			"-> "+diffCloseTabCall(2, "✻ [Claude Code] other.txt (1) ⧉"),
			"<- "+diffTextResult(2, "TAB_CLOSED"),
			"..",
			waitOpen,
			`!! vim.cmd("ClaudeDiffReject")`,
			"<- "+diffTextResult(1, "DIFF_REJECTED"),
		)},
		{"another CLI's close_tab leaves this CLI's diff open", diffLines(
			open, waitOpen,
			"2-> "+diffCloseTabCall(1, diffTab),
			"2<- "+diffTextResult(1, "TAB_CLOSED"),
			"1..",
			waitOpen,
			"-> "+diffCloseTabCall(2, diffTab),
			"<* "+diffTextResult(1, "TAB_CLOSED"),
			"<* "+diffTextResult(2, "TAB_CLOSED"),
			closed,
		)},
		{"bad arguments", diffLines(
			"-> "+diffToolCall(1, "close_tab", map[string]string{}),
			"<- "+diffErrorResult(1, "close_tab: tab_name is required"),
			"-> "+diffToolCall(2, "close_tab", map[string]int{"tab_name": 1}),
			"<- "+diffErrorResult(2, "close_tab: invalid arguments: tab_name must be a string"),
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startDiffHarness(t, "")
			clis := []*diffCLI{h.connect(t, 4242), h.connect(t, 4343)}
			h.run(t, clis, tt.transcript)
			if n := h.diffWindows(t); n != 0 {
				t.Fatalf("%d diff windows left", n)
			}
		})
	}
}
