package archtest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestModuleGraph fails when any package of the module breaks the rules:
// add `import _ "github.com/nvim-claude/nvim-claude/diff"` to a file of
// kernel/ and it names that import.
func TestModuleGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := Load(ctx, "../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(Features, "app", "host", "app/core", "mcp", "nvimbridge", "workspace", "display", "verdict", "cmd/nvim-claude") {
		if _, ok := g[f]; !ok {
			t.Errorf("package %s is not in the graph: the rules check a layout that is not there", f)
		}
	}
	if _, ok := g["plugin"]; ok {
		t.Error("the Go package plugin/ is back")
	}
	if _, ok := g["app/host"]; ok {
		t.Error("host is back under app/: features would import app")
	}
	for _, v := range Check(g) {
		t.Error(v)
	}
}

// TestCheck runs the rules on synthetic graphs: each forbidden edge is
// reported, each allowed one is not.
func TestCheck(t *testing.T) {
	base := Graph{
		"app":               {"app/core", "host", "review", "kernel", "ide/selection", "edtools", "chatpanel", "mcp", "workspace"},
		"app/core":          {"host", "mcp", "workspace"},
		"host":              {"mcp", "workspace"},
		"review":            {"host", "mcp", "nvimbridge", "verdict", "display"},
		"kernel":            {"host", "mcp", "nvimbridge"},
		"edtools":           {"host", "edtools/discovery", "mcp", "workspace", "verdict"},
		"edtools/discovery": {},
		"chatpanel":         {"host", "chat", "verdict", "display"},
		"cmd/nvim-claude":   {"app", "edtools/discovery"},
		"nvimbridge":        {},
		"mcp":               {},
		"display":           {},
		"verdict":           {},
	}
	if v := Check(base); len(v) != 0 {
		t.Fatalf("the allowed graph is refused: %v", v)
	}
	for _, tt := range []struct {
		from, to, want string
	}{
		{"kernel", "review", "never imports another feature"},
		{"chatpanel", "edtools", "never imports another feature"},
		{"ide/selection", "ide/editorcontext", "never imports another feature"},
		{"review", "app", "never imports app"},
		{"review", "app/core", "never imports app"},
		{"app/core", "review", "know no feature"},
		{"host", "app/core", "mcp and workspace only"},
		{"host", "verdict", "mcp and workspace only"},
		{"host", "display", "mcp and workspace only"},
		{"host", "review", "know no feature"},
		{"nvimbridge", "kernel", "nvimbridge never imports"},
		{"nvimbridge", "host", "nvimbridge never imports"},
		{"mcp", "workspace", "import nothing of the module"},
		{"display", "mcp", "import nothing of the module"},
		{"verdict", "host", "import nothing of the module"},
		{"cmd/nvim-claude", "review", "cmd imports app and the relay's"},
		{"cmd/nvim-claude", "app/core", "cmd imports app and the relay's"},
		{"cmd/nvim-claude", "nvimbridge", "cmd imports app and the relay's"},
	} {
		g := Graph{}
		for k, v := range base {
			g[k] = append([]string(nil), v...)
		}
		g[tt.from] = append(g[tt.from], tt.to)
		v := Check(g)
		if len(v) != 1 || !strings.Contains(v[0], tt.from+" imports "+tt.to) || !strings.Contains(v[0], tt.want) {
			t.Errorf("%s → %s: got %v, want one violation saying %q", tt.from, tt.to, v, tt.want)
		}
	}
}
