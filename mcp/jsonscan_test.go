package mcp

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The scanner must accept exactly what encoding/json accepts and split and
// unquote as it decodes: these inputs are compared with it, and
// FuzzSplitObject compares any input.
var scanInputs = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":1,"b":[1,2,{"c":null}],"d":"x"}`, `{"a":1,"a":2}`,
	`{"k\u0041y":true,"e":false}`, `{"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}`,
	`{"lone":"\ud800x"}`, `{"lone2":"\udc00"}`, `{"pair_bad":"\ud800\u0041"}`,
	`{"n":-0.5e+10,"m":0,"o":1E3,"p":-12.25}`, `{"u":"é ü 日本"}`, `{"nested":{"x":{"y":{"z":[[],[[]]]}}}}`,
	`[]`, `[1,2]`, `"str"`, `null`, `true`, `12`,
	``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{a:1}`, `{'a':1}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`,
	`{"a":"x` + "\n" + `"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"unterminated}`,
	`{"a":1}x`, `{"a":1} {}`, `{"a":[1,2}`, `{"a":[1,2,]}`, `{"a":[,]}`, "{\"a\":1}\n", "\t{\"a\" : \"b\" }\r\n",
	`{"a":"\\"}`, `{"a":"\\\"","b":"c"}`, `{"a":"x\\\\"}`,
}

func TestSplitObjectMatchesEncodingJSON(t *testing.T) {
	for _, in := range scanInputs {
		checkAgainstEncodingJSON(t, []byte(in))
	}
}

func checkAgainstEncodingJSON(t *testing.T, in []byte) {
	t.Helper()
	members, err := splitObject(in)
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(in, &want)
	valid := json.Valid(in)
	var se *syntaxError
	switch {
	case !valid:
		if !errors.As(err, &se) {
			t.Errorf("%q: splitObject error %v, want a syntax error (encoding/json: %v)", in, err, wantErr)
		}
		return
	case wantErr != nil || want == nil:
		if !errors.Is(err, errNotObject) {
			t.Errorf("%q: splitObject error %v, want errNotObject", in, err)
		}
		return
	case err != nil:
		t.Errorf("%q: splitObject: %v, encoding/json decodes it", in, err)
		return
	}
	got := map[string]json.RawMessage{}
	for _, m := range members {
		got[m.key] = m.val
	}
	if len(want) != len(got) {
		t.Errorf("%q: members %v, encoding/json decodes %v", in, got, want)
	}
	for k, v := range want {
		if string(got[k]) != string(v) {
			t.Errorf("%q: member %q = %s, encoding/json decodes %s", in, k, got[k], v)
		}
	}
	// The trusting split of a validated object finds the same members.
	again, err := splitValidObject(in)
	if err != nil || !reflect.DeepEqual(members, again) {
		t.Errorf("%q: splitValidObject = %v, %v; want %v", in, again, err, members)
	}
	for _, m := range members {
		if firstByte(m.val) != '"' {
			continue
		}
		var s string
		if err := json.Unmarshal(m.val, &s); err != nil {
			t.Fatalf("%q: %v", m.val, err)
		}
		if got := unquote(m.val); got != s {
			t.Errorf("unquote(%s) = %q, want %q", m.val, got, s)
		}
	}
}

func TestSplitObjectDepth(t *testing.T) {
	deep := strings.Repeat(`{"a":`, maxNesting+1) + "1" + strings.Repeat("}", maxNesting+1)
	if _, err := splitObject([]byte(deep)); err == nil {
		t.Error("nesting beyond encoding/json's limit accepted")
	}
	ok := strings.Repeat(`[`, maxNesting-1) + strings.Repeat("]", maxNesting-1)
	if _, err := splitObject([]byte(`{"a":` + ok + `}`)); err != nil {
		t.Errorf("nesting within the limit refused: %v", err)
	}
}

func TestToolRequestArgs(t *testing.T) {
	tests := []struct {
		name, args, arg string
		want            string
		ok              bool
		err             string
	}{
		{"string", `{"p":"a\nb"}`, "p", "a\nb", true, ""},
		{"absent", `{"p":"x"}`, "q", "", false, ""},
		{"null", `{"p":null}`, "p", "", false, ""},
		{"last wins", `{"p":"1","p":"2"}`, "p", "2", true, ""},
		{"wrong type", `{"p":3}`, "p", "", false, "invalid arguments: p must be a string"},
		{"invalid JSON", `{"p":"x}`, "p", "", false, "invalid arguments: invalid JSON"},
		{"not an object", `[1]`, "p", "", false, "invalid arguments: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &ToolRequest{Arguments: json.RawMessage(tt.args)}
			got, ok, err := req.StringArg(tt.arg)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("StringArg(%q) error %v, want %q…", tt.arg, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || ok != tt.ok {
				t.Errorf("StringArg(%q) = %q, %v, %v; want %q, %v", tt.arg, got, ok, err, tt.want, tt.ok)
			}
		})
	}
}

func FuzzSplitObject(f *testing.F) {
	for _, in := range scanInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstEncodingJSON(t, in)
	})
}
