// Package fakeapi is a fake Anthropic Messages API for tests that drive the
// real Claude Code CLI.
//
// A test scripts the assistant's turns ([Server.Script]) and points the CLI at
// [Server.URL] (ANTHROPIC_BASE_URL). Every request is recorded, so the test
// can wait for one ([Server.WaitFor]) and read what the CLI told the model
// ([Request.Text], [Request.Messages]).
//
// # Main and side requests
//
// Each main turn request consumes the next scripted turn, or gets the text
// [NoTurnText] when none is left. Everything else is a side request: it gets
// a short answer ([SideText]) and leaves the script alone. As observed with
// CLI 2.1.330, a POST /v1/messages is a main request when
//
//   - its "tools" array has a tool named "Edit" or "Write" (the agent's tool
//     set always has both, also after ToolSearch loads deferred tools; the
//     session-title request has no tools and a read-only subagent such as
//     Explore has neither), and
//   - it is not a fork: compaction (/compact), prompt suggestions and /btw
//     questions re-send the conversation with the full tool set and append
//     their own instructions. A fork is recognised by those instructions or
//     by its prompt-cache markers: a main request marks its last message
//     with cache_control, a fork marks only the shared prefix.
//
// A subagent that may edit (general-purpose) sends main requests of its
// own; subagents run concurrently with the main thread, so their requests
// take scripted turns in arrival order.
//
// # Wire format
//
// Answers follow the real API: server-sent events (message_start, ping,
// content_block_start / content_block_delta / content_block_stop per block,
// message_delta, message_stop), each flushed as it is written, when the
// request says "stream": true, else one JSON message. A side request that
// asks for structured output (output_config.format json_schema) gets a JSON
// value that fits the schema; one that asks for a <summary> gets one.
// POST /v1/messages/count_tokens gets a plausible count; any other path is
// logged and answered 404 with an API-shaped error. A request whose
// x-api-key is not the server's key gets 401 authentication_error.
package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// APIKey is the API key the server accepts unless [Server.SetAPIKey]
// changes it. It is a plausible-looking key with a unique last 20
// characters, which is what the CLI remembers when the user approves a key.
const APIKey = "sk-ant-api03-fake-nvim-claude-test-key-0000-ABCDEFGHIJKLMNOPQRST"

// NoTurnText is the answer to a main request when the script is empty.
const NoTurnText = "(no scripted turn)"

// SideText is the answer to side requests (see the package documentation;
// a side request that asks for JSON gets a JSON value built from it).
const SideText = "OK"

// maxBody bounds the request body the server reads.
const maxBody = 64 << 20

// Server is a fake Messages API listening on 127.0.0.1. Its methods are
// safe for concurrent use.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	key     string
	script  []Turn
	next    int // index in script of the next turn to answer
	reqs    []Request
	changed chan struct{} // closed and replaced whenever reqs grows
}

// New starts a Server on 127.0.0.1 with a random port. It is closed, and its
// open connections cut, when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, key: APIKey, changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// URL returns the server's base URL, e.g. "http://127.0.0.1:40123", for
// ANTHROPIC_BASE_URL.
func (s *Server) URL() string {
	return s.srv.URL
}

// SetAPIKey changes the API key the server accepts in the x-api-key header.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Script appends turns to the queue of scripted answers. Each main request
// takes the next one.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Pending returns how many scripted turns have not been answered yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// Requests returns every request received so far, in arrival order. The
// requests share their Body with the server: treat them as read-only.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// MainRequests returns the main turn requests received so far, in order.
func (s *Server) MainRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

// WaitFor blocks until a request that satisfies pred has been received (it
// may have been already) and returns the first such request. It returns
// ctx's error if ctx ends first. pred is called without locks held.
func (s *Server) WaitFor(ctx context.Context, pred func(Request) bool) (Request, error) {
	seen := 0
	for {
		s.mu.Lock()
		reqs := s.reqs[seen:len(s.reqs):len(s.reqs)]
		changed := s.changed
		s.mu.Unlock()
		for _, r := range reqs {
			if pred(r) {
				return r, nil
			}
		}
		seen += len(reqs)
		select {
		case <-changed:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("fakeapi: no matching request among %d: %w", seen, ctx.Err())
		}
	}
}

// WaitMainRequests blocks until at least n main turn requests have been
// received and returns all main requests received by then. It returns
// ctx's error (and the main requests so far) if ctx ends first.
func (s *Server) WaitMainRequests(ctx context.Context, n int) ([]Request, error) {
	count := 0
	_, err := s.WaitFor(ctx, func(r Request) bool {
		if r.Main {
			count++
		}
		return count >= n
	})
	mains := s.MainRequests()
	if err != nil {
		return mains, fmt.Errorf("fakeapi: %d of %d main requests: %w", len(mains), n, err)
	}
	return mains, nil
}

// record appends r and wakes every WaitFor.
func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(r)
}

func (s *Server) recordLocked(r Request) {
	s.reqs = append(s.reqs, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req := Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: raw, Turn: -1,
	}
	if err != nil {
		s.record(req)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "reading body: "+err.Error())
		return
	}
	known := r.Method == http.MethodPost && (r.URL.Path == "/v1/messages" || r.URL.Path == "/v1/messages/count_tokens")
	if !known {
		s.record(req)
		s.t.Logf("fakeapi: unknown request %s %s", r.Method, r.URL.RequestURI())
		writeError(w, http.StatusNotFound, "not_found_error", "fakeapi does not serve "+r.Method+" "+r.URL.Path)
		return
	}
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if got := r.Header.Get("x-api-key"); got != key {
		s.record(req)
		s.t.Logf("fakeapi: %s %s: wrong x-api-key %q", r.Method, r.URL.Path, got)
		writeError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	var b body
	if err := json.Unmarshal(raw, &b); err != nil {
		s.record(req)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error())
		return
	}
	if r.URL.Path == "/v1/messages/count_tokens" {
		s.record(req)
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": estimateTokens(len(raw))})
		return
	}

	a := answer{id: newID("msg_01"), model: b.Model, inputTokens: estimateTokens(len(raw))}
	if a.model == "" {
		a.model = "claude-fake"
	}
	s.mu.Lock()
	req.Main = isMain(b)
	switch {
	case req.Main && s.next < len(s.script):
		req.Turn = s.next
		a.blocks = s.script[s.next].Blocks
		a.stopReason = s.script[s.next].StopReason()
		a.delay = s.script[s.next].Delay
		s.next++
	case req.Main:
		a.blocks = []Block{Text(NoTurnText)}
		a.stopReason = "end_turn"
	default:
		a.blocks = []Block{Text(sideAnswer(b))}
		a.stopReason = "end_turn"
	}
	s.recordLocked(req)
	s.mu.Unlock()
	out := 0
	for _, bl := range a.blocks {
		out += len(bl.Text) + len(bl.Input)
	}
	a.outputTokens = estimateTokens(out)

	w.Header().Set("request-id", newID("req_01"))
	if !b.Stream {
		writeJSON(w, http.StatusOK, a.message())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, e := range a.events() {
		if r.Context().Err() != nil {
			return // the client went away
		}
		if err := writeEvent(w, e); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if a.delay > 0 {
			t := time.NewTimer(a.delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
	}
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

// writeError writes an error in the API's shape:
// {"type":"error","error":{"type":…,"message":…}}.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}
