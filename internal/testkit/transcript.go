package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ToolCall is a tools/call frame.
func ToolCall(id int, name string, args any) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, a)
}

// LuaCall is a one-line Lua chunk that runs code with args (JSON-encodable)
// as its "...", for transcript "lua:" steps. code must hold no comments.
func LuaCall(code string, args ...any) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf("(function(...) %s end)(unpack(vim.json.decode(%q)))", strings.ReplaceAll(code, "\n", " "), a)
}

func MustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func SendCall(id int, name string, args any) string { return "-> " + ToolCall(id, name, args) + "\n" }

func SendMethod(id int, method string, params any) string {
	p, _ := json.Marshal(params)
	return fmt.Sprintf("-> {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":%q,\"params\":%s}\n", id, method, p)
}

// WantText is a tool result with one text item (JSON-encoded as the server
// does: no HTML escaping).
func WantText(id int, text string) string {
	s, _ := MarshalNoEscape(text)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%s}]}}`, id, s) + "\n"
}

// WantJSONText is a tool result whose text is the JSON of v.
func WantJSONText(id int, v any) string {
	b, _ := MarshalNoEscape(v)
	return WantText(id, string(b))
}

// LikeText turns a want… line into a "<~" line: (*) in the text stands for
// any text without a backslash.
func LikeText(line string) string {
	return "<~ " + strings.TrimPrefix(line, "<- ")
}

func WantErrText(id int, text string) string {
	s, _ := MarshalNoEscape(text)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%s}],"isError":true}}`, id, s) + "\n"
}

func WantResult(id int, v any) string {
	b, _ := MarshalNoEscape(v)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"result":%s}`, id, b) + "\n"
}

func WantError(id, code int, msg string) string {
	s, _ := MarshalNoEscape(msg)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","id":%d,"error":{"code":%d,"message":%s}}`, id, code, s) + "\n"
}

func WantNotification(method string, params any) string {
	b, _ := MarshalNoEscape(params)
	return fmt.Sprintf(`<- {"jsonrpc":"2.0","method":%q,"params":%s}`, method, b) + "\n"
}

// Obj is a JSON object with its keys in the order given.
type Obj []any

func (o Obj) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(o); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := MarshalNoEscape(o[i])
		v, err := MarshalNoEscape(o[i+1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// MarshalNoEscape is json.Marshal without HTML escaping, as the host
// encodes messages.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
