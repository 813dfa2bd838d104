package selection

import (
	"log/slog"
	"reflect"
	"testing"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// routeHost records where notifications go.
type routeHost struct {
	host.Host
	sent []string // "*" for a broadcast, else the client id
}

func (h *routeHost) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h *routeHost) Broadcast(string, any) int {
	h.sent = append(h.sent, "*")
	return 3
}
func (h *routeHost) Notify(id, _ string, _ any) error {
	h.sent = append(h.sent, id)
	return nil
}
func (h *routeHost) Clients() []mcp.ClientInfo   { return nil }
func (h *routeHost) Workspace() workspace.View   { return nil }
func (h *routeHost) Running() bool               { return true }
func (h *routeHost) EditorPID() int              { return 1 }
func (h *routeHost) Emit(event string, data any) {}

type pathRouter map[string][]string

func (r pathRouter) Route(path string) ([]string, bool) {
	ids, ok := r[path]
	return ids, ok
}

// TestRoute: a routed file's selection and mention go to its CLIs only
// (a greeting too); an unrouted one, and any without a router, to every CLI.
func TestRoute(t *testing.T) {
	r := pathRouter{"/p/wt/b/x.go": {"B"}}
	tests := []struct {
		name   string
		router Router
		path   string
		want   []string
	}{
		{"routed", r, "/p/wt/b/x.go", []string{"B"}},
		{"no rule", r, "/p/x.go", []string{"*"}},
		{"no router", nil, "/p/wt/b/x.go", []string{"*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &routeHost{}
			c := &Tracker{h: h, log: h.Logger()}
			c.SetRouter(tt.router)
			c.sendSelection(selPayload{FilePath: tt.path})
			if !reflect.DeepEqual(h.sent, tt.want) {
				t.Fatalf("selection went to %v, want %v", h.sent, tt.want)
			}
			h.sent = nil
			if n := c.sendMention(mention{FilePath: tt.path}); n == 0 || !reflect.DeepEqual(h.sent, tt.want) {
				t.Fatalf("mention went to %v (%d), want %v", h.sent, n, tt.want)
			}
			away := c.routedAway("A", selPayload{FilePath: tt.path})
			if away != (tt.want[0] == "B") {
				t.Fatalf("routedAway(A) = %v", away)
			}
		})
	}
}
