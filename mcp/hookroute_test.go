package mcp

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Requests under HTTPPrefix go to Config.HTTP after the checks every
// request gets (loopback, no Origin, our Host), POST only, without the
// IDE's token; other paths are still the IDE's; without Config.HTTP the
// prefix is an unknown path.
func TestHookRoute(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "hook "+r.URL.Path+" "+string(b))
	})
	s := startServer(t, cfg, nil)
	port := strconv.Itoa(s.Port())
	host := "127.0.0.1:" + port
	post := func(path, host string, extra map[string]string) handshakeRequest {
		h := map[string]string{"Content-Length": "2", "Content-Type": "application/json"}
		for k, v := range extra {
			h[k] = v
		}
		return handshakeRequest{method: "POST", path: path, host: host, header: h}
	}
	for _, tc := range []struct {
		name   string
		req    handshakeRequest
		status int
		body   string
	}{
		{"a hook", post("/hook/PreToolUse/t1", host, nil), http.StatusOK, "hook /hook/PreToolUse/t1 {}"},
		{"localhost", post("/hook/Stop/t1", "localhost:"+port, nil), http.StatusOK, "hook /hook/Stop/t1 {}"},
		{"another host (DNS rebinding)", post("/hook/Stop/t1", "evil.example:"+port, nil), http.StatusForbidden, ""},
		{"another port", post("/hook/Stop/t1", "127.0.0.1:1", nil), http.StatusForbidden, ""},
		{"a browser", post("/hook/Stop/t1", host, map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden, ""},
		{"GET", handshakeRequest{method: "GET", path: "/hook/Stop/t1", host: host}, http.StatusMethodNotAllowed, ""},
		{"not under the prefix", post("/hooks", host, nil), http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req.String()
			if tc.req.method == "POST" {
				req += "{}"
			}
			resp := roundTrip(t, s.Port(), req)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || (tc.body != "" && string(b) != tc.body) {
				t.Fatalf("status %d body %q, want %d %q", resp.StatusCode, b, tc.status, tc.body)
			}
		})
	}
}

// Without Config.HTTP the prefix is not served; a hook waiting in the
// handler is let go when the server closes.
func TestHookRouteOffAndClose(t *testing.T) {
	s := startServer(t, testConfig(t), nil)
	resp := roundTrip(t, s.Port(), handshakeRequest{method: "POST", path: "/hook/Stop/t1", host: "127.0.0.1:" + strconv.Itoa(s.Port()),
		header: map[string]string{"Content-Length": "0"}}.String())
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("without HTTP: status %d", resp.StatusCode)
	}

	cfg := testConfig(t)
	entered, released := make(chan struct{}), make(chan error, 1)
	cfg.HTTP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
		released <- r.Context().Err()
	})
	s2 := startServer(t, cfg, nil)
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", "http://127.0.0.1:"+strconv.Itoa(s2.Port())+"/hook/PermissionRequest/t1", strings.NewReader("{}"))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-entered:
	case <-time.After(guard):
		t.Fatal("the hook never reached the handler")
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-released:
		if err == nil {
			t.Fatal("released without a context error")
		}
	case <-time.After(guard):
		t.Fatal("the waiting hook was not let go when the server closed")
	}
}
