package edtools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// withhold drops every part of an LSP result that names a deny-listed file,
// and counts what it dropped.
func TestWithhold(t *testing.T) {
	denied := func(p string) bool { return strings.HasSuffix(p, ".env") }
	loc := func(p string) nvimbridge.LSPLocation { return nvimbridge.LSPLocation{Path: p, Text: "text of " + p} }
	for _, tt := range []struct {
		name string
		in   nvimbridge.LSPResult
		n    int
		keep string // what the result must still hold
	}{
		{"locations", nvimbridge.LSPResult{Total: 3, Locations: []nvimbridge.LSPLocation{loc("/p/a.go"), loc("/p/.env"), loc("/p/b.go")}}, 1, "/p/b.go"},
		{"symbols", nvimbridge.LSPResult{Symbols: []nvimbridge.LSPSymbol{{Name: "S", Path: "/p/.env"}, {Name: "T", Path: "/p/a.go"}}}, 1, "/p/a.go"},
		{"calls and their sites", nvimbridge.LSPResult{Calls: []nvimbridge.LSPCall{
			{Name: "f", Path: "/p/a.go", Sites: []nvimbridge.LSPLocation{loc("/p/.env"), loc("/p/a.go")}},
			{Name: "g", Path: "/p/.env"},
		}}, 2, "/p/a.go"},
		{"rename diffs and edits", nvimbridge.LSPResult{
			Files: []nvimbridge.LSPFileDiff{{Path: "/p/.env", Diff: "-SECRET"}},
			Edits: []nvimbridge.LSPFileEdit{{Path: "/p/.env", Before: "SECRET"}, {Path: "/p/a.go"}},
		}, 2, "/p/a.go"},
		{"resolved and item", nvimbridge.LSPResult{Resolved: &nvimbridge.LSPLocation{Path: "/p/.env"}, Item: &nvimbridge.LSPItem{Path: "/p/.env"}}, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in
			if n := withhold(&r, denied); n != tt.n {
				t.Errorf("withheld %d, want %d", n, tt.n)
			}
			s := sprint(r)
			if strings.Contains(s, ".env") || strings.Contains(s, "SECRET") {
				t.Errorf("still names the deny-listed file: %s", s)
			}
			if tt.keep != "" && !strings.Contains(s, tt.keep) {
				t.Errorf("lost %s: %s", tt.keep, s)
			}
		})
	}
}

func sprint(r nvimbridge.LSPResult) string {
	s := fmt.Sprintf("%+v", r)
	if r.Resolved != nil {
		s += fmt.Sprintf("%+v", *r.Resolved)
	}
	if r.Item != nil {
		s += fmt.Sprintf("%+v", *r.Item)
	}
	return s
}
