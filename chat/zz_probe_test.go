package chat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

func TestZZProbeProgress(t *testing.T) {
	e := newCLIEnv(t)
	e.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("TodoWrite", map[string]any{"todos": []map[string]any{{"content": "a", "status": "pending", "activeForm": "doing a"}}})),
		fakeapi.Reply(fakeapi.ToolUse("Bash", map[string]any{"command": "sleep 1; echo done-bg", "run_in_background": true, "description": "bg"})),
		fakeapi.Reply(fakeapi.ToolUse("Agent", map[string]any{"description": "look", "prompt": "look around", "subagent_type": "general-purpose"})),
		fakeapi.Reply(fakeapi.Text("sub answer")),
		fakeapi.Reply(fakeapi.Text("Main done.")),
		fakeapi.Reply(fakeapi.Text("extra")),
		fakeapi.Reply(fakeapi.Text("extra2")),
	)
	s, c, rec := e.start(t, Options{Mode: "bypassPermissions"})
	_ = s
	sendText(t, s, "go")
	c.waitResult(t, 1)
	time.Sleep(3 * time.Second)
	rec.mu.Lock()
	for _, l := range rec.lines {
		if strings.Contains(l, `"type\":\"stream_event`) || strings.Contains(l, "stream_event") {
			continue
		}
		if len(l) > 600 {
			l = l[:600]
		}
		fmt.Println("LINE", l)
	}
	rec.mu.Unlock()
}
