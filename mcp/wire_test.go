package mcp

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		in     string
		kind   msgKind
		id     string // raw; "" for none
		method string
		params string
		code   int // expected error code, 0 for none
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, kind: kindRequest, id: `1`, method: "ping"},
		{in: ` {"jsonrpc":"2.0","id":"a","method":"x","params":[1]} `, kind: kindRequest, id: `"a"`, method: "x", params: `[1]`},
		{in: `{"jsonrpc":"2.0","method":"n","params":null}`, kind: kindNotification, method: "n"},
		{in: `{"jsonrpc":"2.0","method":"n","params":{"a":1}}`, kind: kindNotification, method: "n", params: `{"a":1}`},
		{in: `{"jsonrpc":"2.0","id":3,"result":{}}`, kind: kindResponse, id: `3`},
		{in: `{"id":{},"error":{}}`, kind: kindResponse, id: `{}`},
		{in: `{"jsonrpc":"2.0","method":"m\u00e9"}`, kind: kindNotification, method: "mé"},
		{in: `{"jsonrpc":"2\u002e0","id":-2.5e3,"method":"p"}`, kind: kindRequest, id: `-2.5e3`, method: "p"},
		{in: `{`, code: CodeParseError},
		{in: ``, code: CodeParseError},
		{in: `[]`, code: CodeInvalidRequest},
		{in: `true`, code: CodeInvalidRequest},
		{in: `null`, code: CodeInvalidRequest},
		{in: `{}`, kind: kindNotification, code: CodeInvalidRequest},
		{in: `{"jsonrpc":"2.0","id":7,"method":null}`, kind: kindRequest, id: `7`, code: CodeInvalidRequest},
		{in: `{"jsonrpc":"2.0","id":true,"method":"p"}`, kind: kindNotification, code: CodeInvalidRequest},
		{in: `{"jsonrpc":"2.0","id":null,"method":"p"}`, kind: kindNotification, code: CodeInvalidRequest},
		{in: `{"jsonrpc":"2.0","id":8,"method":"p","params":true}`, kind: kindRequest, id: `8`, method: "p", code: CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			msg, err := decodeMessage([]byte(tt.in))
			code := 0
			if err != nil {
				code = err.Code
			}
			if code != tt.code {
				t.Fatalf("error %v, want code %d", err, tt.code)
			}
			if msg.kind != tt.kind || string(msg.id) != tt.id || msg.method != tt.method || string(msg.params) != tt.params {
				t.Errorf("got kind %d id %q method %q params %q, want %d %q %q %q",
					msg.kind, msg.id, msg.method, msg.params, tt.kind, tt.id, tt.method, tt.params)
			}
		})
	}
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		id   string
		key  string
		isOK bool
	}{
		{`7`, "n7", true},
		{`-7.5`, "n-7.5", true},
		{`"7"`, "s7", true},
		{`"\u0041"`, "sA", true},
		{`null`, "", false},
		{``, "", false},
		{`{"a":1}`, "", false},
	}
	for _, tt := range tests {
		key, ok := idKey([]byte(tt.id))
		if key != tt.key || ok != tt.isOK {
			t.Errorf("idKey(%s) = %q, %v; want %q, %v", tt.id, key, ok, tt.key, tt.isOK)
		}
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		got  func() ([]byte, error)
		want string
	}{
		{"result", func() ([]byte, error) { return encodeResult([]byte(`"x"`), map[string]string{"a": "<&>"}) },
			`{"jsonrpc":"2.0","id":"x","result":{"a":"<&>"}}`},
		{"null id", func() ([]byte, error) { return encodeResult(nil, 1) },
			`{"jsonrpc":"2.0","id":null,"result":1}`},
		{"error with data", func() ([]byte, error) {
			return encodeError([]byte(`1`), &Error{Code: -1, Message: "m", Data: []int{1}}), nil
		}, `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":[1]}}`},
		{"error with bad data", func() ([]byte, error) {
			return encodeError([]byte(`1`), &Error{Code: -1, Message: "m", Data: make(chan int)}), nil
		}, `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`},
		{"notification", func() ([]byte, error) { return encodeNotification("at_mentioned", map[string]int{"lineStart": 1}) },
			`{"jsonrpc":"2.0","method":"at_mentioned","params":{"lineStart":1}}`},
		{"notification without params", func() ([]byte, error) { return encodeNotification("x", nil) },
			`{"jsonrpc":"2.0","method":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Error(diff(tt.want, string(got)))
			}
		})
	}
	if _, err := encodeResult([]byte(`1`), make(chan int)); err == nil {
		t.Error("encodeResult of a channel: no error")
	}
	if _, err := encodeNotification("x", func() {}); err == nil {
		t.Error("encodeNotification of a func: no error")
	}
}

func TestToWireError(t *testing.T) {
	tests := []struct {
		err  error
		want Error
	}{
		{InvalidParams("bad %s", "x"), Error{Code: CodeInvalidParams, Message: "bad x"}},
		{fmt.Errorf("wrapped: %w", &Error{Code: 7, Message: "m"}), Error{Code: 7, Message: "m"}},
		{errors.New("plain"), Error{Code: CodeInternalError, Message: "plain"}},
	}
	for _, tt := range tests {
		if got := toWireError(tt.err); got.Code != tt.want.Code || got.Message != tt.want.Message {
			t.Errorf("toWireError(%v) = %+v, want %+v", tt.err, *got, tt.want)
		}
	}
}

func TestNegotiateVersion(t *testing.T) {
	tests := map[string]string{
		"2025-11-25": "2025-11-25",
		"2025-06-18": "2025-06-18",
		"2025-03-26": "2025-03-26",
		"2024-11-05": "2024-11-05",
		"2024-10-07": "2025-11-25",
		"":           "2025-11-25",
		"2026-01-01": "2025-11-25",
	}
	for in, want := range tests {
		if got := negotiateVersion(in); got != want {
			t.Errorf("negotiateVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeepalive(t *testing.T) {
	const iv = 30 * time.Second
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	type tick struct {
		at     time.Duration // after t0
		seen   bool
		jumped bool
		alive  bool
	}
	tests := []struct {
		name  string
		ticks []tick
	}{
		{"answering peer", []tick{
			{0, true, false, true}, {iv, true, false, true}, {2 * iv, true, false, true}, {3 * iv, true, false, true},
		}},
		{"silent peer dies after two missed intervals", []tick{
			{0, true, false, true}, {iv, false, false, true}, {2 * iv, false, false, false},
		}},
		{"an answer resets the count", []tick{
			{0, false, false, true}, {iv, true, false, true}, {2 * iv, false, false, true}, {3 * iv, false, false, false},
		}},
		{"sleep resets the window", []tick{
			{0, true, false, true}, {iv, false, false, true}, {iv + 8*time.Hour, false, true, true},
			{2*iv + 8*time.Hour, false, false, true}, {3*iv + 8*time.Hour, false, false, false},
		}},
		{"ticker jitter is no jump", []tick{
			{0, true, false, true}, {iv + iv/4, false, false, true}, {2*iv + iv/4, false, false, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := keepalive{interval: iv}
			for i, tk := range tt.ticks {
				jumped, alive := k.tick(t0.Add(tk.at), tk.seen)
				if jumped != tk.jumped || alive != tk.alive {
					t.Fatalf("tick %d: jumped %v alive %v, want %v %v", i, jumped, alive, tk.jumped, tk.alive)
				}
			}
		})
	}
}
