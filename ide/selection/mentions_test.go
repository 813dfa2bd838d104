package selection

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

func TestMentionBadRequests(t *testing.T) {
	h := startSelHarness(t, selHarnessOpts{noAttach: true})
	tests := []struct {
		name, req, wantErr string
	}{
		{"not JSON", `{`, "bad parameters"},
		{"no mentions", `{"mentions":[]}`, "nothing to send"},
		{"no path", `{"mentions":[{"lineStart":1,"lineEnd":2}]}`, "needs a filePath"},
		{"relative path", `{"mentions":[{"filePath":"a.go"}]}`, "not absolute"},
		{"start without end", `{"mentions":[{"filePath":"/a.go","lineStart":1}]}`, "both lineStart and lineEnd"},
		{"negative", `{"mentions":[{"filePath":"/a.go","lineStart":-1,"lineEnd":2}]}`, "bad line range"},
		{"end before start", `{"mentions":[{"filePath":"/a.go","lineStart":5,"lineEnd":2}]}`, "bad line range"},
		{"one bad of two", `{"mentions":[{"filePath":"/a.go"},{"filePath":"b"}]}`, "not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := host.Request("mention", h.sel.handleMention)(context.Background(), json.RawMessage(tt.req))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	// Nothing was queued by the bad requests.
	h.sel.mu.Lock()
	n := len(h.sel.queue)
	h.sel.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d mentions queued by bad requests", n)
	}
	if err := h.app.StopServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Request("mention", h.sel.handleMention)(context.Background(), json.RawMessage(`{"mentions":[{"filePath":"/a.go"}]}`)); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("with the server stopped: err = %v", err)
	}
}

func (h *selHarness) mention(t *testing.T, req string) mentionReply {
	t.Helper()
	res, err := host.Request("mention", h.sel.handleMention)(context.Background(), json.RawMessage(req))
	if err != nil {
		t.Fatal(err)
	}
	return res.(mentionReply)
}

// waitNote waits for a vim.notify message containing want.
func (h *selHarness) waitNote(t *testing.T, want string) {
	t.Helper()
	h.WaitFor(t, 10*time.Second, fmt.Sprintf(`(function() for _, n in ipairs(_G.notes) do if n.msg:find(%q, 1, true) then return true end end end)()`, want),
		`return _G.notes`, "a message containing "+want)
}

// TestMentionDelivery: a mention reaches a connected CLI at once; before
// one connects it waits (after the selection greeting), and ClaudeSent
// fires when it is delivered.
func TestMentionDelivery(t *testing.T) {
	h := startSelHarness(t, selHarnessOpts{})
	h.Exec(t, `_G.sent = {}
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeSent", callback = function(a) table.insert(_G.sent, a.data or vim.NIL) end })`)
	notes := filepath.Join(h.dir, "notes.txt")
	m1 := fmt.Sprintf(`{"filePath":%q,"lineStart":4,"lineEnd":6}`, notes)
	m2 := fmt.Sprintf(`{"filePath":%q}`, h.dir)

	// Queued: no CLI yet.
	if r := h.mention(t, `{"mentions":[`+m1+`,`+m2+`]}`); r.Queued != 2 || r.Delivered != 0 {
		t.Fatalf("reply with no CLI = %+v, want 2 queued", r)
	}
	c := h.connect(t, 4242)
	c.selection(t) // the greeting comes first
	for _, want := range []string{m1, m2} {
		if got := string(c.notification(t, "at_mentioned")); got != want {
			t.Fatalf("at_mentioned = %s, want %s", got, want)
		}
	}
	h.WaitFor(t, 10*time.Second, `#_G.sent == 1`, `return _G.sent`, "ClaudeSent for the queued mentions")
	var nv08 bool
	h.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &nv08)
	if nv08 {
		var n int
		h.Eval(t, `return #_G.sent[1].mentions`, &n)
		if n != 2 {
			t.Fatalf("ClaudeSent data has %d mentions, want 2", n)
		}
	}

	// Delivered at once to a greeted CLI.
	if r := h.mention(t, `{"mentions":[`+m1+`]}`); r.Delivered != 1 || r.Queued != 0 {
		t.Fatalf("reply with a CLI = %+v, want delivered to 1", r)
	}
	if got := string(c.notification(t, "at_mentioned")); got != m1 {
		t.Fatalf("at_mentioned = %s, want %s", got, m1)
	}
	h.WaitFor(t, 10*time.Second, `#_G.sent == 2`, `return _G.sent`, "ClaudeSent for the direct mention")
}

// TestMentionUndelivered: nobody connects in time, or the server stops —
// the user is told which mentions did not arrive.
func TestMentionUndelivered(t *testing.T) {
	h := startSelHarness(t, selHarnessOpts{})
	c := h.connect(t, 4242)
	c.selection(t)
	_ = c.WS.Close() // the CLI leaves
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		h.sel.mu.Lock()
		n := len(h.sel.ready)
		h.sel.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CLI that left is still ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	notes := filepath.Join(h.dir, "notes.txt")
	if r := h.mention(t, fmt.Sprintf(`{"mentions":[{"filePath":%q,"lineStart":1,"lineEnd":2}],"timeout_ms":50}`, notes)); r.Queued != 1 {
		t.Fatalf("reply = %+v, want queued", r)
	}
	h.waitNote(t, "no Claude CLI connected within 0.05 s; not delivered: @notes.txt#L2-3")

	h.mention(t, fmt.Sprintf(`{"mentions":[{"filePath":%q}]}`, notes))
	if err := h.app.StopServer(); err != nil {
		t.Fatal(err)
	}
	h.waitNote(t, "the IDE server stopped before a Claude CLI connected; not delivered: @notes.txt")
}
