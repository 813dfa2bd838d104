//go:build unix

package workspace_test

import (
	"path/filepath"
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// TestDenyTable runs the one table of deny-list cases (globs, dotfiles,
// "..", symlinks, hard links, case) against the host's judge; the same
// table is run against what the plugin shares in internal/e2e.
func TestDenyTable(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tb := testkit.LoadDenyTable(t, "testdata/deny_table.json", home)
	project := filepath.Join(home, "proj")
	b := workspace.NewBoundary(workspace.Settings{Home: home, Deny: append(tb.Deny, tb.DenyExtra...)})
	for _, c := range tb.Cases {
		t.Run(c.Path, func(t *testing.T) {
			if got := b.DeniedIn([]string{project}, filepath.Join(home, c.Path)); got != c.Want() {
				t.Errorf("DeniedIn(%s) = %v, want %v (%s)", c.Path, got, c.Want(), c.Rule)
			}
		})
	}
}
