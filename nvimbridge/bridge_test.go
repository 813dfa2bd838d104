package nvimbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

func TestCall(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	ctx := context.Background()

	// Add a function to the bridge module through the bridge itself.
	if err := b.Call(ctx, "notify", map[string]any{"msg": "hello", "level": 2}, nil); err != nil {
		t.Fatalf("notify: %v", err)
	}
	n.Exec(t, `package.loaded["nvim-claude.bridge"].fns.echo = function(args) return args end
package.loaded["nvim-claude.bridge"].fns.boom = function() error("kaboom") end
package.loaded["nvim-claude.bridge"].fns.slow = function() vim.fn.getchar() end`)

	tests := []struct {
		name    string
		fn      string
		args    any
		want    string
		wantErr string
	}{
		{"object", "echo", map[string]any{"a": 1, "s": "é€😀"}, `{"a":1,"s":"é€😀"}`, ""},
		{"string with NUL and newlines", "echo", "x\x00y\nz", `"x\u0000y\nz"`, ""},
		{"lua error", "boom", nil, "", "kaboom"},
		{"unknown function", "nope", nil, "", "unknown bridge function: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got json.RawMessage
			err := b.Call(ctx, tt.fn, tt.args, &got)
			if tt.wantErr != "" {
				var le *nvimbridge.LuaError
				if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a LuaError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var a, w any
			_ = json.Unmarshal(got, &a)
			_ = json.Unmarshal([]byte(tt.want), &w)
			if gs, ws := mustJSON(a), mustJSON(w); gs != ws {
				t.Fatalf("got %s, want %s", gs, ws)
			}
		})
	}

	// Without the plugin's Lua on 'runtimepath' the bridge (lua/claude/bridge)
	// cannot load, and every call says why.
	bare := nvimbridge.Wrap(nvimtest.Start(t, nvimtest.Options{NoPlugin: true}).Nvim, nil)
	t.Cleanup(bare.CloseProposals)
	if err := bare.Call(ctx, "ctx_editors", nil, nil); err == nil || !strings.Contains(err.Error(), "not on 'runtimepath'") {
		t.Fatalf("ctx_editors without the plugin's Lua: err = %v", err)
	}

	// A call that Neovim cannot answer (blocked in getchar) times out
	// instead of hanging the caller; Neovim recovers once unblocked.
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := b.Call(tctx, "slow", nil, nil); !errors.Is(err, nvimbridge.ErrTimeout) {
		t.Fatalf("blocked call: err = %v, want ErrTimeout", err)
	}
	if err := n.FeedKeys("x", "t", false); err != nil {
		t.Fatal(err)
	}
}

// At a prompt (here hit-enter), Emit sends nothing: once the prompt is
// answered its event has not run. EmitIdempotent, whose Lua drops a
// repeat, sends at once without asking whether Neovim is blocked: it fails
// the same way (ErrBlocked, from the probe while it waits) but its event
// runs once the prompt is answered.
func TestEmitAtPrompt(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	ctx := context.Background()
	if err := b.Call(ctx, "notify", map[string]any{"msg": "load", "level": 1}, nil); err != nil {
		t.Fatal(err)
	}
	n.Exec(t, `package.loaded["claude.emitprobe"] = { _on_event = function(ev) vim.g.emitprobe = (vim.g.emitprobe or "") .. ev .. ";" end }`)
	// A hit-enter prompt needs a UI.
	if err := n.RegisterHandler("redraw", func(...any) {}); err != nil {
		t.Fatal(err)
	}
	if err := n.AttachUI(80, 24, map[string]any{"ext_linegrid": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Input(`:echo "one\ntwo\nthree"<CR>`); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, n)
	if err := b.Emit(ctx, "emitprobe.once", nil); !errors.Is(err, nvimbridge.ErrBlocked) {
		t.Fatalf("Emit at a prompt: err = %v, want ErrBlocked", err)
	}
	if err := b.EmitIdempotent(ctx, "emitprobe.late", nil); !errors.Is(err, nvimbridge.ErrBlocked) {
		t.Fatalf("EmitIdempotent at a prompt: err = %v, want ErrBlocked", err)
	}
	if _, err := n.Input("<CR>"); err != nil {
		t.Fatal(err)
	}
	// Requests run in the order sent: this one's answer comes after every
	// earlier one ran.
	var got string
	if err := n.ExecLua(`return vim.g.emitprobe or ""`, &got); err != nil {
		t.Fatal(err)
	}
	if got != "late;" {
		t.Fatalf("events run after the prompt: %q, want only the idempotent one", got)
	}
}

// waitBlocked waits until Neovim is waiting for input.
func waitBlocked(t *testing.T, n *nvimtest.Nvim) {
	t.Helper()
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		m, err := n.Mode()
		if err == nil && m.Blocking {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Neovim never waited for input (mode %+v, %v)", m, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHandlersFromLua(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	got := make(chan json.RawMessage, 4)
	if err := b.HandleRequest("double", func(ctx context.Context, p json.RawMessage) (any, error) {
		var x struct{ N int }
		if err := json.Unmarshal(p, &x); err != nil {
			return nil, err
		}
		if x.N < 0 {
			return nil, errors.New("negative")
		}
		return map[string]int{"n": x.N * 2}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.HandleNotification("note", func(p json.RawMessage) { got <- p }); err != nil {
		t.Fatal(err)
	}
	chan_ := n.ChannelID()

	var res map[string]int
	n.Eval(t, `return vim.json.decode(vim.rpcrequest(..., "double", vim.json.encode({N = 21})))`, &res, chan_)
	if res["n"] != 42 {
		t.Fatalf("double: got %v", res)
	}
	var msg string
	n.Eval(t, `local ok, err = pcall(vim.rpcrequest, ..., "double", '{"N":-1}') return tostring(ok) .. " " .. tostring(err)`, &msg, chan_)
	if !strings.HasPrefix(msg, "false") || !strings.Contains(msg, "negative") {
		t.Fatalf("error from handler: got %q", msg)
	}

	// Arguments that are not JSON strings must not break the connection.
	for _, call := range []string{
		`vim.rpcnotify(..., "note", {a = 1})`,
		`vim.rpcnotify(..., "note")`,
		`vim.rpcnotify(..., "note", 1, 2, 3)`,
		`vim.rpcnotify(..., "note", '{"ok":true}')`,
	} {
		n.Exec(t, call, chan_)
	}
	want := []string{`{"a":1}`, `null`, `1`, `{"ok":true}`}
	for i, w := range want {
		select {
		case p := <-got:
			if string(p) != w {
				t.Errorf("notification %d: got %s, want %s", i, p, w)
			}
		case <-time.After(10 * nvimtest.Slack * time.Second):
			t.Fatalf("notification %d never arrived", i)
		}
	}
	n.Eval(t, `return vim.json.decode(vim.rpcrequest(..., "double", '{"N":1}'))`, &res, chan_)
	if res["n"] != 2 {
		t.Fatalf("connection unusable after odd notifications: %v", res)
	}
}
