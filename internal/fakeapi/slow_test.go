package fakeapi

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A slow turn pauses after each event, and stops streaming when the client
// goes away; a normal turn is not held up.
func TestSlowTurn(t *testing.T) {
	s := New(t)
	const delay = 200 * time.Millisecond
	s.Script(Reply(Text("slow answer in pieces")).Slow(delay), Reply(Text("fast")))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages",
		bytes.NewReader(msgBody(true, editTools(), "user", "hi")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read up to the first text delta, then go away: the rest of the
	// stream must not have been sent in one go.
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "text_delta") {
			break
		}
	}
	if !strings.Contains(strings.Join(seen, "\n"), "text_delta") {
		t.Fatalf("no text delta in %q", seen)
	}
	// The stream is paused: nothing more is buffered beyond the current
	// event, so message_stop cannot be in what the client holds.
	if strings.Contains(strings.Join(seen, "\n"), "message_stop") {
		t.Errorf("the slow stream was sent at once: %q", seen)
	}
	cancel()

	// The next turn streams without pauses and gets its own text.
	if got := streamText(t, s, msgBody(true, editTools(), "user", "again")); got != "fast" {
		t.Errorf("second turn = %q, want fast", got)
	}
}

func TestImageSource(t *testing.T) {
	raw := []byte(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"what is this"}]}]}`)
	ms := Request{Body: raw}.Messages()
	if len(ms) != 1 || len(ms[0].Content) != 2 {
		t.Fatalf("Messages = %+v", ms)
	}
	if got := string(ms[0].Content[0].Source); got != `{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}` {
		t.Errorf("image source = %s", got)
	}
}
