//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// ideClient speaks the IDE protocol to the host as the Claude Code CLI does
// (PROTOCOL.md): the token header, subprotocol mcp, initialize,
// notifications/initialized, ide_connected; then tools/call requests and the
// host's notifications.
type ideClient struct {
	ws  *websocket.Conn
	wmu sync.Mutex

	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan rpcReply
	err     error

	notes chan note
	done  chan struct{}
}

// rpcReply is a response as it arrived; Mono is when the frame was read.
type rpcReply struct {
	Result json.RawMessage
	Error  *rpcError
	Mono   int64 // µs, CLOCK_MONOTONIC, right after the frame was read
	Size   int
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// note is a notification from the host.
type note struct {
	Method string
	Params json.RawMessage
	Mono   int64 // µs, when the frame was read
}

// toolResult is a tools/call result.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// errNoTool marks a tool the host does not have (yet): the scenario reports
// "not available" instead of failing.
var errNoTool = errors.New("tool not available")

// dialIDE connects and completes the CLI's handshake.
func dialIDE(ctx context.Context, l lockFile) (*ideClient, error) {
	ws, err := dialWS(ctx, l)
	if err != nil {
		return nil, err
	}
	c := &ideClient{ws: ws, pending: map[int64]chan rpcReply{}, notes: make(chan note, 4096), done: make(chan struct{})}
	go c.readLoop()
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.call(hctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"roots": map[string]any{"listChanged": true}},
		"clientInfo":      map[string]any{"name": "nvim-claude-bench", "version": "1"},
	}); err != nil {
		c.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.notify("notifications/initialized", nil); err != nil {
		c.close()
		return nil, err
	}
	if err := c.notify("ide_connected", map[string]any{"pid": os.Getpid()}); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// dialWS opens the WebSocket the way the CLI does.
func dialWS(ctx context.Context, l lockFile) (*websocket.Conn, error) {
	h := http.Header{}
	h.Set("X-Claude-Code-Ide-Authorization", l.AuthToken)
	h.Set("User-Agent", "claude-code/bench (cli)")
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: 5 * time.Second}
	port := l.Port
	if l.Via != 0 {
		port = l.Via
		h.Set("Host", fmt.Sprintf("127.0.0.1:%d", l.Port))
	}
	ws, resp, err := d.DialContext(ctx, fmt.Sprintf("ws://127.0.0.1:%d/", port), h)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial 127.0.0.1:%d: %w", port, err)
	}
	ws.SetReadLimit(256 << 20)
	return ws, nil
}

func (c *ideClient) readLoop() {
	defer close(c.done)
	for {
		_, msg, err := c.ws.ReadMessage()
		mono := monoMicros()
		if err != nil {
			c.fail(err)
			return
		}
		var env struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(msg, &env); err != nil {
			c.fail(fmt.Errorf("bad frame from host: %w", err))
			return
		}
		switch {
		case env.Method != "" && env.ID != nil:
			// A request from the host (ping): answer it as the CLI would.
			_ = c.write(map[string]any{"jsonrpc": "2.0", "id": *env.ID, "result": map[string]any{}})
		case env.Method != "":
			select {
			case c.notes <- note{Method: env.Method, Params: env.Params, Mono: mono}:
			default: // nobody is listening for this many: drop
			}
		case env.ID != nil:
			c.mu.Lock()
			ch := c.pending[*env.ID]
			delete(c.pending, *env.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- rpcReply{Result: env.Result, Error: env.Error, Mono: mono, Size: len(msg)}
			}
		}
	}
}

func (c *ideClient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

func (c *ideClient) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.writeRaw(b)
}

func (c *ideClient) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (c *ideClient) notify(method string, params any) error {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	return c.write(m)
}

// pendingCall is a request on its way.
type pendingCall struct {
	c    *ideClient
	id   int64
	ch   chan rpcReply
	Sent int64 // µs, just before the frame was written
}

// start sends a request and returns without waiting for the answer.
func (c *ideClient) start(method string, params any) (*pendingCall, error) {
	id := c.nextID.Add(1)
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	ch := make(chan rpcReply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	p := &pendingCall{c: c, id: id, ch: ch, Sent: monoMicros()}
	if err := c.writeRaw(b); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, err
	}
	return p, nil
}

// wait waits for the answer.
func (p *pendingCall) wait(ctx context.Context) (rpcReply, error) {
	select {
	case r, ok := <-p.ch:
		if !ok {
			p.c.mu.Lock()
			err := p.c.err
			p.c.mu.Unlock()
			return rpcReply{}, fmt.Errorf("connection lost: %w", err)
		}
		if r.Error != nil {
			return r, r.Error
		}
		return r, nil
	case <-ctx.Done():
		return rpcReply{}, ctx.Err()
	}
}

func (c *ideClient) call(ctx context.Context, method string, params any) (rpcReply, error) {
	p, err := c.start(method, params)
	if err != nil {
		return rpcReply{}, err
	}
	return p.wait(ctx)
}

// tool calls a tool and decodes its result. A tool the host does not know
// is errNoTool; an isError result is an error with its text.
func (c *ideClient) tool(ctx context.Context, name string, args any) (toolResult, rpcReply, error) {
	if args == nil {
		args = map[string]any{}
	}
	r, err := c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args, "_meta": map[string]any{"progressToken": 1}})
	return decodeTool(name, r, err)
}

func decodeTool(name string, r rpcReply, err error) (toolResult, rpcReply, error) {
	var re *rpcError
	if errors.As(err, &re) && (re.Code == -32601 || re.Code == -32602) {
		return toolResult{}, r, fmt.Errorf("%w: %s: %s", errNoTool, name, re.Message)
	}
	if err != nil {
		return toolResult{}, r, err
	}
	var res toolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return res, r, fmt.Errorf("%s: bad result: %w", name, err)
	}
	if res.IsError {
		msg := ""
		if len(res.Content) > 0 {
			msg = res.Content[0].Text
		}
		return res, r, fmt.Errorf("%s returned an error: %s", name, msg)
	}
	return res, r, nil
}

// drain discards the notifications received so far.
func (c *ideClient) drain() {
	for {
		select {
		case <-c.notes:
		default:
			return
		}
	}
}

func (c *ideClient) close() {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.ws.Close()
	<-c.done
}

// toolNames lists the tools the host offers (tools/list).
func (c *ideClient) toolNames(ctx context.Context) (map[string]bool, error) {
	r, err := c.call(ctx, "tools/list", map[string]any{})
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	out := map[string]bool{}
	for _, t := range res.Tools {
		out[t.Name] = true
	}
	return out, nil
}
