package host

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// Request and Notification decode Lua's parameters once: an empty Lua
// table (encoded []), null or nothing is the zero value; anything else
// must decode, or the request fails naming itself and the notification is
// dropped.
func TestRequestDecoding(t *testing.T) {
	type params struct {
		On bool `json:"on"`
	}
	for _, tt := range []struct {
		raw     string
		want    params
		wantErr string
	}{
		{"", params{}, ""},
		{"null", params{}, ""},
		{"[]", params{}, ""},
		{" [] ", params{}, ""},
		{`{"on":true}`, params{On: true}, ""},
		{`{"on":"yes"}`, params{}, "share: bad parameters"},
		{`[1]`, params{}, "share: bad parameters"},
	} {
		var got params
		called := false
		req := Request("share", func(_ context.Context, p params) (any, error) { got, called = p, true; return nil, nil })
		_, err := req(context.Background(), json.RawMessage(tt.raw))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || called {
				t.Errorf("%q: err %v, called %v; want an error %q and no call", tt.raw, err, called, tt.wantErr)
			}
		} else if err != nil || got != tt.want || !called {
			t.Errorf("%q: %+v, %v; want %+v", tt.raw, got, err, tt.want)
		}
		called = false
		not := Notification(slog.New(slog.NewTextHandler(io.Discard, nil)), "share", func(p params) { got, called = p, true })
		not(json.RawMessage(tt.raw))
		if called == (tt.wantErr != "") {
			t.Errorf("%q: notification handler called = %v", tt.raw, called)
		}
	}
}
