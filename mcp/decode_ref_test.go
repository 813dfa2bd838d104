package mcp

// The decoder's fast paths (decodeMessage and decodeCallParams without
// encoding/json, idKey without it for plain strings) must decode exactly as
// the encoding/json versions they replaced, kept here as references:
// TestDecodeMatchesReference compares them on the seeds of the fuzz
// targets, FuzzDecodeMatchesReference on any input.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func refDecodeMessage(data []byte) (msg incoming, _ *Error) {
	// One validating pass over the whole message (splitObject); params
	// stays a span of data, split again later without validation.
	members, err := splitObject(data)
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
	fields := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		fields[m.key] = m.val // the last of a repeated key wins, as in encoding/json
	}
	methodRaw, hasMethod := fields["method"]
	if _, ok := fields["result"]; ok && !hasMethod {
		return incoming{kind: kindResponse, id: fields["id"]}, nil
	}
	if _, ok := fields["error"]; ok && !hasMethod {
		return incoming{kind: kindResponse, id: fields["id"]}, nil
	}

	msg.kind = kindNotification
	if id, ok := fields["id"]; ok {
		switch b := firstByte(id); {
		case b == '"', b == '-', b >= '0' && b <= '9':
			msg.id, msg.kind = id, kindRequest
		default:
			return msg, invalidRequest("id must be a string or a number")
		}
	}
	var version string
	if err := json.Unmarshal(fields["jsonrpc"], &version); err != nil || version != "2.0" {
		return msg, invalidRequest(`jsonrpc must be "2.0"`)
	}
	if !hasMethod || firstByte(methodRaw) != '"' || json.Unmarshal(methodRaw, &msg.method) != nil {
		return msg, invalidRequest("method must be a string")
	}
	if params, ok := fields["params"]; ok {
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

// refCallParams is what callParams was when encoding/json decoded its
// small members.
type refCallParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

func refDecodeCallParams(params json.RawMessage) (refCallParams, error) {
	var p refCallParams
	switch firstByte(params) {
	case 0, 'n':
		return p, nil
	case '{':
	default:
		return p, InvalidParams("Invalid params: expected an object")
	}
	members, err := splitValidObject(params)
	if err != nil {
		return p, InvalidParams("Invalid params: %v", err)
	}
	for _, m := range members {
		switch m.key {
		case "name":
			p.Name = nil // the last one counts
			if err := json.Unmarshal(m.val, &p.Name); err != nil {
				return p, InvalidParams("Invalid params: name has the wrong type")
			}
		case "arguments":
			p.Arguments = m.val
		case "_meta":
			p.Meta.ProgressToken = nil
			if err := json.Unmarshal(m.val, &p.Meta); err != nil {
				return p, InvalidParams("Invalid params: _meta has the wrong type")
			}
		}
	}
	return p, nil
}
func refIDKey(id json.RawMessage) (string, bool) {
	switch b := firstByte(id); {
	case b == '"':
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

// decodeInputs are messages and params that the fast paths treat apart.
var decodeInputs = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"progressToken":1}}}`,
	`{"jsonrpc":"2\u002e0","id":"a\u0041","method":"tools\/call"}`,
	`{"jsonrpc":"2.0 ","id":1,"method":"ping"}`, `{"jsonrpc":2,"id":1,"method":"ping"}`, `{"jsonrpc":null,"id":1,"method":"ping"}`,
	`{"JSONRPC":"2.0","ID":1,"Method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping","method":"pong"}`,
	`{"jsonrpc":"2.0","id":1,"result":1,"method":"x"}`, `{"error":null}`, `{"result":1,"id":"\ud800"}`,
	`{"jsonrpc":"2.0","id":" 1","method":"m\u00e9\ud800"}`, `{"jsonrpc":"2.0","id":"a\"b","method":"p"}`,
	`{"jsonrpc":"2.0","id":"\u0000","method":"p"}`, "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"p\"}",
	`{"jsonrpc":"2.0","id":1,"method":"p","params":[]}`, `{"jsonrpc":"2.0","id":1,"method":"p","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"p","params":{},"params":null}`,
}

var callParamInputs = []string{
	`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7}}`,
	`{"name":null}`, `{"name":"a","name":null}`, `{"name":null,"name":"a"}`, `{"name":"\u0041\ud800"}`, `{"name":true}`,
	`{"name":{}}`, `{"name":[]}`, `{"name":1}`, `{"_meta":null}`, `{"_meta":{}}`, `{"_meta":[]}`, `{"_meta":"x"}`, `{"_meta":1}`,
	`{"_meta":true}`, `{"_meta":{"progressToken":null}}`, `{"_meta":{"ProgressToken":1}}`, `{"_meta":{"PROGRESSTOKEN":"a"}}`,
	`{"_meta":{"progreſsToken":2}}`, `{"_meta":{"progress\u0054oken":3}}`, `{"_meta":{"progressToken":1,"progresstoken":2}}`,
	`{"_meta":{"progressToken":{"a":[1]}}}`, `{"_meta":{"progressToken":1},"_meta":{}}`, `{"_meta":{"progressToken":1},"_meta":null}`,
	`{"_meta":{"other":1}}`, `{ "name" : "a" , "arguments" : { } , "_meta" : { "progressToken" : 5 } }`,
	`{"arguments":null}`, `{"arguments":[]}`, `{}`, `null`, ``, `[]`, `"x"`, `1`,
	`{"name":"echo"}`, `{"name":"\u0065cho"}`, `{"name":"é"}`, `{"name":"\u00e9"}`, `{"name":"a\"b"}`, `{"name":"tab\there"}`,
	`{"name":"\ufffd"}`, "{\"name\":\"\xff\"}", `{"name":"\ud800"}`, `{"name":"\u0000"}`, `{"name":"ech"}`, `{"name":""}`,
}

func TestDecodeMatchesReference(t *testing.T) {
	for _, in := range append(append([]string{}, messageSeeds...), decodeInputs...) {
		checkDecodeMessage(t, []byte(in))
	}
	for _, in := range callParamInputs {
		checkDecodeCallParams(t, []byte(in))
	}
}

func FuzzDecodeMatchesReference(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	for _, s := range decodeInputs {
		f.Add([]byte(s))
	}
	for _, s := range callParamInputs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeMessage(t, data)
		if len(data) == 0 || json.Valid(data) { // decodeMessage only lets valid params through
			checkDecodeCallParams(t, data)
		}
	})
}

func checkDecodeMessage(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := decodeMessage(data)
	want, wantErr := refDecodeMessage(data)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
		t.Errorf("decodeMessage(%q) = %+v, %v; the reference decodes %+v, %v", data, got, gotErr, want, wantErr)
	}
	if got.id != nil {
		key, ok := idKey(got.id)
		wantKey, wantOK := refIDKey(got.id)
		if key != wantKey || ok != wantOK {
			t.Errorf("idKey(%s) = %q, %v; the reference gives %q, %v", got.id, key, ok, wantKey, wantOK)
		}
	}
}

// nameRegistry has tools whose names a plain or an escaped JSON string
// may spell.
var nameRegistry = func() *registry {
	r := &registry{}
	for _, name := range []string{"echo", "é", `a"b`, "tab\there", "\ufffd", "\x00"} {
		if err := r.addTool(Tool{Name: name, Handler: func(context.Context, *ToolRequest) (*ToolResult, error) { return nil, nil }}); err != nil {
			panic(err)
		}
	}
	return r
}()

func checkDecodeCallParams(t *testing.T, params []byte) {
	t.Helper()
	got, gotErr := decodeCallParams(params)
	want, wantErr := refDecodeCallParams(params)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Errorf("decodeCallParams(%q): error %v, the reference %v", params, gotErr, wantErr)
		return
	}
	if gotErr != nil {
		return
	}
	if (got.name == nil) != (want.Name == nil) || got.name != nil && unquote(got.name) != *want.Name ||
		!bytes.Equal(got.arguments, want.Arguments) || (got.arguments == nil) != (want.Arguments == nil) ||
		!bytes.Equal(got.progressToken, want.Meta.ProgressToken) || (got.progressToken == nil) != (want.Meta.ProgressToken == nil) {
		t.Errorf("decodeCallParams(%q) = %+v, the reference %+v", params, got, want)
	}
	if got.name != nil {
		tool, ok := nameRegistry.findToolNamed(got.name)
		wantTool, wantOK := nameRegistry.findTool(*want.Name)
		if ok != wantOK || tool.Name != wantTool.Name {
			t.Errorf("findToolNamed(%s) = %q, %v; findTool(%q) = %q, %v", got.name, tool.Name, ok, *want.Name, wantTool.Name, wantOK)
		}
	}
}
