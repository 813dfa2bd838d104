//go:build unix

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestSingleSessionHandsOver: with single_session, a newer CLI replaces the
// connected one with close code 4001; the real CLI then says it switched to
// another session and stays away.
func TestSingleSessionHandsOver(t *testing.T) {
	s := startSession(t, sessionOpts{extra: ", single_session = true"})
	old := s.st.Terminal.PID

	newer := dialIDE(t, s.st.Port, readLock(t, s.st.LockFile).AuthToken)
	newer.handshake(t, 777777)
	s.WaitFor(t, 20*time.Second, `#require("claude").status().clients == 1 and require("claude").status().clients[1].pid == 777777`,
		`return require("claude").status().clients`, "the older CLI to be closed")
	s.waitScreen(t, 20*time.Second, "switched to another Claude Code session")

	// It does not come back: the CLI reconnects within ~10 ms after other
	// close codes (PROTOCOL.md §2), so two seconds is plenty to see it.
	time.Sleep(2 * time.Second)
	st := s.status(t)
	for _, c := range st.Clients {
		if c.PID == old {
			t.Fatalf("the replaced CLI reconnected: %+v", st.Clients)
		}
	}
	if !alive(old) {
		t.Fatalf("the replaced CLI exited; it should stay usable")
	}
	if strings.Contains(s.screen(t), "disconnected") && !strings.Contains(s.screen(t), "switched") {
		t.Fatalf("unexpected screen:\n%s", s.screen(t))
	}
}
