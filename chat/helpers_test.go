package chat

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// slack scales the failure guards of the tests (env-free: the CLI is slow
// on a shared machine).
const slack = 3

// guard is how long a test waits for something that should happen.
const guard = 60 * slack * time.Second

// collector records a session's events and lets a test wait for them.
type collector struct {
	mu      sync.Mutex
	evs     []Event
	changed chan struct{}
}

func newCollector() *collector { return &collector{changed: make(chan struct{})} }

func (c *collector) add(ev Event) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *collector) events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.evs...)
}

// waitN waits until the n-th (1-based) event matching pred has arrived and
// returns it.
func (c *collector) waitN(t *testing.T, n int, what string, pred func(Event) bool) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	for {
		c.mu.Lock()
		evs, ch := c.evs, c.changed
		c.mu.Unlock()
		k := 0
		for _, ev := range evs {
			if pred(ev) {
				k++
				if k == n {
					return ev
				}
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; events:\n%s", what, dumpEvents(evs))
			return nil
		}
	}
}

// waitResult waits for the n-th turn end.
func (c *collector) waitResult(t *testing.T, n int) ResultEvent {
	t.Helper()
	return c.waitN(t, n, fmt.Sprintf("result #%d", n), func(ev Event) bool {
		_, ok := ev.(ResultEvent)
		return ok
	}).(ResultEvent)
}

// waitPerm waits for the n-th permission request.
func (c *collector) waitPerm(t *testing.T, n int) PermissionRequestEvent {
	t.Helper()
	return c.waitN(t, n, fmt.Sprintf("permission request #%d", n), func(ev Event) bool {
		_, ok := ev.(PermissionRequestEvent)
		return ok
	}).(PermissionRequestEvent)
}

func dumpEvents(evs []Event) string {
	s := ""
	for _, ev := range evs {
		line := fmt.Sprintf("%T %+v", ev, ev)
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		s += "  " + line + "\n"
	}
	return s
}

// count returns how many events match pred.
func (c *collector) count(pred func(Event) bool) int {
	n := 0
	for _, ev := range c.events() {
		if pred(ev) {
			n++
		}
	}
	return n
}

// sendText sends text as a user message and returns its id.
func sendText(t *testing.T, s *Session, text string) string {
	t.Helper()
	id := uuid.NewString()
	if err := s.Send(context.Background(), id, []ContentBlock{{Type: "text", Text: text}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// readFile is the content of the file p.
func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
