package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// latestProtocolVersion is the MCP version answered to a client that asks
// for one this server does not know.
const latestProtocolVersion = "2025-11-25"

// negotiateVersion echoes a known protocol version, else answers the latest.
func negotiateVersion(requested string) string {
	switch requested {
	case "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		return requested
	}
	return latestProtocolVersion
}

// isBuiltin reports whether method is handled by the server itself and so
// cannot be registered with [Server.HandleMethod].
func isBuiltin(method string) bool {
	switch method {
	case "initialize", "ping", "tools/list", "tools/call", "resources/list", "prompts/list",
		"notifications/initialized", "notifications/cancelled", "ide_connected":
		return true
	}
	return false
}

// Tool is an MCP tool.
type Tool struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema object; nil means
	// {"type":"object","properties":{}}.
	InputSchema json.RawMessage
	Handler     ToolHandler
}

// ToolHandler runs a tool call. ctx is cancelled when the client cancels
// the call, when its connection closes and when the server closes; the
// handler must then return soon, since Close waits for it.
//
// A returned error that is (or wraps) an *[Error] becomes that JSON-RPC
// error. Any other error becomes a tool result with isError set and the
// error's text: a tool failure, bad arguments included, is a result the
// model gets to see, not a protocol error.
type ToolHandler func(ctx context.Context, req *ToolRequest) (*ToolResult, error)

// ToolRequest is one tools/call.
type ToolRequest struct {
	Client        ClientInfo
	Name          string
	Arguments     json.RawMessage // always a JSON object; {} when the client sent none
	ProgressToken json.RawMessage // _meta.progressToken, nil when absent

	args      toolArgs // Arguments split into members (Arg, StringArg)
	validated bool     // Arguments is a span of a message validated on arrival
}

// Content is one item of a tool result. Text is always sent for text
// content, even when empty.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// EscapedText, when not nil, is sent as the text instead of Text: the
	// text already escaped as [AppendEscaped] writes it (the contents of a
	// JSON string, no quotes), written as it is. It lets a large answer
	// that changes seldom (getDiagnostics') be escaped once, not on every
	// call; it is not decoded, and the bytes must not change once given.
	EscapedText []byte `json:"-"`
}

// ToolResult is the result of a tool call.
type ToolResult struct {
	Content []Content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

// TextResult returns a result holding one text item.
func TextResult(text string) *ToolResult {
	return &ToolResult{Content: []Content{{Type: "text", Text: text}}}
}

// EscapedTextResult returns a result holding one text item given already
// escaped (see [Content.EscapedText]).
func EscapedTextResult(escaped []byte) *ToolResult {
	if escaped == nil {
		escaped = []byte{}
	}
	return &ToolResult{Content: []Content{{Type: "text", EscapedText: escaped}}}
}

// ErrorResult returns a result with isError set and a formatted text item.
func ErrorResult(format string, args ...any) *ToolResult {
	r := TextResult(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// JSONResult returns a result holding one text item: the JSON encoding of v,
// without HTML escaping.
func JSONResult(v any) (*ToolResult, error) {
	b, err := marshalJSON(v)
	if err != nil {
		return nil, fmt.Errorf("mcp: encode tool result: %w", err)
	}
	return TextResult(string(b)), nil
}

// MethodHandler answers a custom JSON-RPC request. Its ctx is cancelled like
// a [ToolHandler]'s. A returned error that is (or wraps) an *[Error] becomes
// that error; any other error becomes [CodeInternalError] with the error's
// text. A nil result is sent as {}.
type MethodHandler func(ctx context.Context, req *MethodRequest) (any, error)

// MethodRequest is one request to a custom method.
type MethodRequest struct {
	Client ClientInfo
	Method string
	Params json.RawMessage // nil when the request had none
}

// toolReply is a tool call's result, which encodeResult writes with
// appendToolResult. A *ToolResult that a custom method returns is encoded
// by encoding/json like any other value; this wrapper (pointer-shaped, so
// it goes into an interface without an allocation) tells the two apart.
type toolReply struct{ r *ToolResult }

type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// registry holds the tools, in registration order, and the custom methods.
type registry struct {
	mu      sync.RWMutex
	tools   []Tool
	methods map[string]MethodHandler
}

func (r *registry) addTool(t Tool) error {
	switch {
	case t.Name == "":
		return errors.New("mcp: tool without a name")
	case t.Handler == nil:
		return fmt.Errorf("mcp: tool %q has no handler", t.Name)
	case t.InputSchema == nil:
		t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	case !json.Valid(t.InputSchema) || firstByte(t.InputSchema) != '{':
		return fmt.Errorf("mcp: tool %q: input schema is not a JSON object", t.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.findTool(t.Name); ok {
		return fmt.Errorf("mcp: tool %q already registered", t.Name)
	}
	r.tools = append(r.tools, t)
	return nil
}

// findTool must be called with r.mu held.
func (r *registry) findTool(name string) (Tool, bool) {
	for _, t := range r.tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// findToolNamed finds the tool whose name is the JSON string raw (a
// validated span), without decoding a plain one; r.mu must be held.
func (r *registry) findToolNamed(raw json.RawMessage) (Tool, bool) {
	body, ok := plainQuoted(raw)
	if !ok {
		return r.findTool(unquote(raw))
	}
	for _, t := range r.tools {
		if string(body) == t.Name {
			return t, true
		}
	}
	return Tool{}, false
}

func (r *registry) setMethod(name string, h MethodHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.methods == nil {
		r.methods = make(map[string]MethodHandler)
	}
	r.methods[name] = h
}

func (r *registry) method(name string) MethodHandler {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.methods[name]
}

func (r *registry) listTools() any {
	r.mu.RLock()
	defer r.mu.RUnlock()
	tools := make([]toolInfo, len(r.tools))
	for i, t := range r.tools {
		tools[i] = toolInfo{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return struct {
		Tools []toolInfo `json:"tools"`
	}{tools}
}

// callParams are tools/call's params, as spans of the message.
type callParams struct {
	name          json.RawMessage // a JSON string; nil when absent or null
	arguments     json.RawMessage
	progressToken json.RawMessage // _meta.progressToken, copied out of the message
}

// decodeCallParams decodes tools/call's params, which decodeMessage
// validated: split without a second validating pass (the arguments may
// carry a whole file), then only the small members are decoded.
func decodeCallParams(params json.RawMessage) (callParams, error) {
	var p callParams
	switch firstByte(params) {
	case 0, 'n':
		return p, nil
	case '{':
	default:
		return p, InvalidParams("Invalid params: expected an object")
	}
	// As when the members were split first: an error splitting comes
	// before any member's, and the first member's error before the
	// others'.
	var memberErr error
	err := eachMember(params, false, func(key string, val json.RawMessage) {
		if memberErr != nil {
			return
		}
		switch key {
		case "name": // checked as encoding/json decodes into a *string
			switch firstByte(val) {
			case 'n':
				p.name = nil // the last one counts
			case '"':
				p.name = val
			default:
				memberErr = InvalidParams("Invalid params: name has the wrong type")
			}
		case "arguments":
			p.arguments = val
		case "_meta":
			token, err := decodeMeta(val)
			if err != nil {
				memberErr = InvalidParams("Invalid params: _meta has the wrong type")
				return
			}
			p.progressToken = token
		}
	})
	if err != nil {
		return p, InvalidParams("Invalid params: %v", err)
	}
	return p, memberErr
}

// decodeMeta returns the progress token of tools/call's _meta (a
// validated span), as encoding/json decodes _meta into a struct with a
// json.RawMessage field tagged progressToken: null
// has none, anything but an object is an error, and the token's key
// matches case-insensitively, the last match winning. The token is copied:
// a handler that keeps it must not keep the whole message.
func decodeMeta(raw json.RawMessage) (json.RawMessage, error) {
	switch firstByte(raw) {
	case 'n':
		return nil, nil
	case '{':
	default:
		return nil, errors.New("_meta is not an object")
	}
	var token []byte
	err := eachMember(raw, false, func(key string, val json.RawMessage) {
		if key == "progressToken" || strings.EqualFold(key, "progressToken") {
			token = val
		}
	})
	if err != nil || token == nil {
		return nil, err
	}
	return append(json.RawMessage(nil), token...), nil
}

func (r *registry) callTool(ctx context.Context, client ClientInfo, params json.RawMessage) (any, error) {
	p, err := decodeCallParams(params)
	if err != nil {
		return nil, err
	}
	if p.name == nil {
		return nil, InvalidParams("Invalid params: missing tool name")
	}
	r.mu.RLock()
	t, ok := r.findToolNamed(p.name)
	r.mu.RUnlock()
	if !ok {
		return nil, InvalidParams("Unknown tool: %s", unquote(p.name))
	}
	switch firstByte(p.arguments) {
	case 0, 'n':
		p.arguments = json.RawMessage(`{}`)
	case '{':
	default:
		return nil, InvalidParams("Invalid params: arguments must be an object")
	}
	res, err := t.Handler(ctx, &ToolRequest{
		Client:        client,
		Name:          t.Name,
		Arguments:     p.arguments,
		ProgressToken: p.progressToken,
		validated:     true,
	})
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) {
			return nil, err
		}
		return toolReply{ErrorResult("%s", err.Error())}, nil
	}
	if res == nil {
		res = &ToolResult{}
	}
	return toolReply{res}, nil
}

// decodeParams decodes request params that must be a JSON object; absent
// params decode as {}. Failures are [CodeInvalidParams] errors.
func decodeParams(params json.RawMessage, v any) error {
	switch firstByte(params) {
	case 0, 'n':
		return nil
	case '{':
	default:
		return InvalidParams("Invalid params: expected an object")
	}
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return InvalidParams("Invalid params: %s has the wrong type", te.Field)
		}
		return InvalidParams("Invalid params: %v", err)
	}
	return nil
}

type initializeParams struct {
	ProtocolVersion string `json:"protocolVersion"`
	ClientInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"clientInfo"`
}

type initializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Tools struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Instructions string `json:"instructions,omitempty"`
}

// call runs a request's method on the connection c: the one dispatch of
// both transports.
func (c *conn) call(ctx context.Context, msg incoming) (any, error) {
	switch msg.method {
	case "initialize":
		return c.initialize(msg.params)
	case "ping":
		return json.RawMessage(`{}`), nil
	case "tools/list":
		return c.svc.tools().listTools(), nil
	case "tools/call":
		return c.svc.tools().callTool(ctx, c.info(), msg.params)
	case "resources/list":
		return json.RawMessage(`{"resources":[]}`), nil
	case "prompts/list":
		return json.RawMessage(`{"prompts":[]}`), nil
	}
	h := c.svc.tools().method(msg.method)
	if h == nil {
		return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + msg.method}
	}
	res, err := h(ctx, &MethodRequest{Client: c.info(), Method: msg.method, Params: msg.params})
	if err == nil && res == nil {
		res = json.RawMessage(`{}`)
	}
	return res, err
}

func (c *conn) initialize(params json.RawMessage) (any, error) {
	var p initializeParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	var res initializeResult
	res.ProtocolVersion = negotiateVersion(p.ProtocolVersion)
	res.Capabilities.Tools.ListChanged = c.svc.listChanged
	res.ServerInfo.Name = c.svc.serverName
	res.ServerInfo.Version = c.svc.serverVersion
	res.Instructions = c.svc.instructions
	c.mu.Lock()
	c.client.ProtocolVersion = res.ProtocolVersion
	c.mu.Unlock()
	c.log.Info("initialize", "client", p.ClientInfo.Name, "clientVersion", p.ClientInfo.Version,
		"requested", p.ProtocolVersion, "protocolVersion", res.ProtocolVersion)
	return res, nil
}

// notify handles a notification from the client, in the read loop: they
// are quick and their order matters.
func (c *conn) notify(msg incoming) {
	switch msg.method {
	case "notifications/initialized":
		c.mu.Lock()
		c.client.Initialized = true
		c.mu.Unlock()
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		key, ok := "", false
		if decodeParams(msg.params, &p) == nil {
			key, ok = idKey(p.RequestID)
		}
		if !ok {
			c.log.Debug("ignoring cancellation without a usable requestId")
			return
		}
		c.cancelRequest(key, p.Reason)
	case "ide_connected":
		var p struct {
			PID *int `json:"pid"`
		}
		if decodeParams(msg.params, &p) != nil || p.PID == nil {
			c.log.Debug("ignoring ide_connected without a pid")
			return
		}
		c.mu.Lock()
		c.client.PID = *p.PID
		info := c.client
		c.mu.Unlock()
		c.log.Info("ide connected", "pid", info.PID)
		callHook(c.log, c.svc.onIDEConnected, info)
	default:
		c.log.Debug("ignoring notification", "method", msg.method)
	}
}
