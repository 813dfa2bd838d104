package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error. Handlers may return one (wrapped or not) to
// choose the error the client sees; any other error from a method handler
// becomes [CodeInternalError].
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// InvalidParams returns an *[Error] with code [CodeInvalidParams] and a
// formatted message.
func InvalidParams(format string, args ...any) error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// toWireError maps err to the JSON-RPC error sent to the client.
func toWireError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

func invalidRequest(why string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + why}
}

// msgKind tells the kinds of incoming messages apart.
type msgKind int

const (
	kindRequest msgKind = iota
	kindNotification
	kindResponse
)

// incoming is a decoded client message. id and params are raw JSON so that
// ids are echoed byte for byte.
type incoming struct {
	kind   msgKind
	id     json.RawMessage // nil for notifications; only strings and numbers for requests
	method string
	params json.RawMessage
}

// decodeMessage decodes one JSON-RPC message. On failure it returns the
// error to answer with; msg.id then holds the id to echo (nil meaning null).
// Responses are reported as such, whatever their shape: the server never
// sends requests, so the caller ignores them.
func decodeMessage(data []byte) (msg incoming, _ *Error) {
	// One validating pass over the whole message; params stays a span of
	// data, split again later without validation.
	// The last of a repeated key wins, as in encoding/json; keys match
	// exactly, as a map of the members would.
	var version, id, methodRaw, params json.RawMessage
	var hasID, hasMethod, hasParams, hasResult, hasError bool
	err := eachMember(data, true, func(key string, val json.RawMessage) {
		switch key {
		case "jsonrpc":
			version = val
		case "id":
			id, hasID = val, true
		case "method":
			methodRaw, hasMethod = val, true
		case "params":
			params, hasParams = val, true
		case "result":
			hasResult = true
		case "error":
			hasError = true
		}
	})
	if err != nil {
		var se *syntaxError
		switch {
		case errors.As(err, &se):
			return msg, &Error{Code: CodeParseError, Message: "Parse error"}
		case firstByte(data) == '[':
			return msg, invalidRequest("batch requests are not supported")
		}
		return msg, invalidRequest("message must be a JSON object")
	}
	if (hasResult || hasError) && !hasMethod {
		return incoming{kind: kindResponse, id: id}, nil
	}

	msg.kind = kindNotification
	if hasID {
		switch b := firstByte(id); {
		case b == '"', b == '-', b >= '0' && b <= '9':
			msg.id, msg.kind = id, kindRequest
		default:
			return msg, invalidRequest("id must be a string or a number")
		}
	}
	// data was validated: a value that starts with a quote is a string.
	if firstByte(version) != '"' || !(string(version) == `"2.0"` || unquote(version) == "2.0") {
		return msg, invalidRequest(`jsonrpc must be "2.0"`)
	}
	if !hasMethod || firstByte(methodRaw) != '"' {
		return msg, invalidRequest("method must be a string")
	}
	msg.method = methodName(methodRaw)
	if hasParams {
		switch firstByte(params) {
		case '{', '[':
			msg.params = params
		case 'n':
		default:
			return msg, invalidRequest("params must be an object or an array")
		}
	}
	return msg, nil
}

// methodName unquotes a method name (a validated JSON string); the names
// the server handles itself come without an allocation.
func methodName(raw json.RawMessage) string {
	switch string(raw) {
	case `"tools/call"`:
		return "tools/call"
	case `"ping"`:
		return "ping"
	case `"tools/list"`:
		return "tools/list"
	case `"initialize"`:
		return "initialize"
	case `"notifications/cancelled"`:
		return "notifications/cancelled"
	case `"notifications/initialized"`:
		return "notifications/initialized"
	}
	return unquote(raw)
}

// firstByte returns the first non-space byte of data, or 0.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// idKey returns a map key for a request id: strings are compared by value,
// numbers by their text.
func idKey(id json.RawMessage) (string, bool) {
	switch b := firstByte(id); {
	case b == '"':
		if body, ok := plainQuoted(bytes.TrimSpace(id)); ok {
			return "s" + string(body), true
		}
		var s string
		if json.Unmarshal(id, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case b == '-', b >= '0' && b <= '9':
		return "n" + string(bytes.TrimSpace(id)), true
	}
	return "", false
}

// plainQuoted returns the body of a JSON string that needs no decoding:
// no escapes, no control characters, valid UTF-8.
func plainQuoted(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if !plainString[c] {
			return nil, false
		}
	}
	return body, utf8.Valid(body)
}

// marshalJSON is json.Marshal without HTML escaping and without the
// encoder's trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeJSON(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeJSON appends the JSON encoding of v to buf, without HTML escaping.
func encodeJSON(buf *bytes.Buffer, v any) error {
	n := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Truncate(n)
		return err
	}
	buf.Truncate(buf.Len() - 1) // the encoder's newline
	return nil
}

func writeID(buf *bytes.Buffer, id json.RawMessage) {
	if id == nil {
		buf.WriteString("null")
		return
	}
	buf.Write(id)
}

// encodeResult encodes a successful response.
func encodeResult(id json.RawMessage, result any) ([]byte, error) {
	if tr, ok := result.(toolReply); ok {
		// the hot path, and the one result that can carry a whole file
		r := tr.r
		idLen := len(id)
		if id == nil {
			idLen = len("null")
		}
		size := len(`{"jsonrpc":"2.0","id":,"result":}`) + idLen + toolResultLen(r)
		out := make([]byte, 0, size)
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		if id == nil {
			out = append(out, "null"...)
		} else {
			out = append(out, id...)
		}
		out = append(out, `,"result":`...)
		out = appendToolResult(out, r)
		return append(out, '}'), nil
	}
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	writeID(&buf, id)
	buf.WriteString(`,"result":`)
	if err := encodeJSON(&buf, result); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// encodeError encodes an error response. Data that cannot be encoded is
// dropped rather than losing the error.
func encodeError(id json.RawMessage, e *Error) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	writeID(&buf, id)
	buf.WriteString(`,"error":`)
	if encodeJSON(&buf, e) != nil {
		_ = encodeJSON(&buf, &Error{Code: e.Code, Message: e.Message})
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// encodeNotification encodes a notification; nil params are omitted.
func encodeNotification(method string, params any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","method":`)
	if err := encodeJSON(&buf, method); err != nil {
		return nil, err
	}
	if params != nil {
		buf.WriteString(`,"params":`)
		if err := encodeJSON(&buf, params); err != nil {
			return nil, fmt.Errorf("encode %s params: %w", method, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
