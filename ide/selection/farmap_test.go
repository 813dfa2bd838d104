package selection

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/workspace"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// A Claude elsewhere (an SSH host, a container) is told the selection and
// mentions under its own path; a mention outside the mapping is refused,
// naming the file.
func TestFarMapSelectionAndMention(t *testing.T) {
	ws := workspace.New()
	h := startSelHarness(t, selHarnessOpts{ws: ws, noAttach: true})
	m, err := pathmap.New("/workspaces/app", h.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ws.SetMap(m)
	h.attach(t)
	c := h.connect(t, 4242)
	if got, want := c.selection(t), h.cursorAt("/workspaces/app/sample.txt", 0, 0); got != want {
		t.Fatalf("greeting = %+v, want %+v", got, want)
	}
	h.mention(t, fmt.Sprintf(`{"mentions":[{"filePath":%q,"lineStart":1,"lineEnd":2}]}`, h.dir+"/other.txt"))
	if got, want := string(c.notification(t, "at_mentioned")), `{"filePath":"/workspaces/app/other.txt","lineStart":1,"lineEnd":2}`; got != want {
		t.Fatalf("at_mentioned = %s, want %s", got, want)
	}
	_, err = host.Request("mention", h.sel.handleMention)(context.Background(), json.RawMessage(`{"mentions":[{"filePath":"/elsewhere/x.go"}]}`))
	if err == nil || !strings.Contains(err.Error(), strconv.Quote("/elsewhere/x.go")) {
		t.Fatalf("outside mention: err = %v", err)
	}
}
