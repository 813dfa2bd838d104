package core

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/host"
)

// optionsFeature records the options its hook hears.
type optionsFeature struct {
	mu   sync.Mutex
	seen []host.Options
}

func (f *optionsFeature) Name() string { return "recorder" }
func (f *optionsFeature) Hooks() host.Hooks {
	return host.Hooks{Options: func(o host.Options) error {
		// It owns execute, as kernel does: a table of the wrong shape is
		// refused and changes nothing.
		var ex struct {
			Confirm bool `json:"confirm"`
		}
		if err := o.Decode("execute", &ex); err != nil {
			return err
		}
		f.mu.Lock()
		f.seen = append(f.seen, o)
		f.mu.Unlock()
		return nil
	}}
}

func (f *optionsFeature) last() (host.Options, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return host.Options{}, 0
	}
	return f.seen[len(f.seen)-1], len(f.seen)
}

// registrar keeps the handlers Register installs.
type registrar struct {
	reqs map[string]func(context.Context, json.RawMessage) (any, error)
	nots map[string]func(json.RawMessage)
}

func (r *registrar) HandleRequest(m string, h func(context.Context, json.RawMessage) (any, error)) error {
	r.reqs[m] = h
	return nil
}
func (r *registrar) HandleNotification(m string, h func(json.RawMessage)) error {
	if r.nots != nil {
		r.nots[m] = h
	}
	return nil
}

// The options come from Lua through the "options" request, before the
// server may start, and again whenever setup() runs: each reaches every
// feature and the file boundary at once, also while the server runs.
func TestOptionsReachFeaturesBeforeAndWhileRunning(t *testing.T) {
	f := &optionsFeature{}
	a := New(Options{Version: "test", Features: func(host.Host) []host.Feature { return []host.Feature{f} }})
	t.Cleanup(func() { _ = a.Close() })
	r := &registrar{reqs: map[string]func(context.Context, json.RawMessage) (any, error){}}
	if err := a.Register(r); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func() error {
		_, err := r.reqs["start"](context.Background(), json.RawMessage(`{"pid":1,"cwd":"`+dir+`","config_dir":"`+t.TempDir()+`"}`))
		return err
	}
	if err := start(); err == nil || !strings.Contains(err.Error(), "no options") {
		t.Fatalf("start before the options: %v, want a refusal naming the options", err)
	}
	send := func(raw string) {
		t.Helper()
		if _, err := r.reqs["options"](context.Background(), json.RawMessage(raw)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"execute":{"confirm":false,"timeout_ms":1500.5},"security":{"deny":["*.secret"]},"editor_tools":{"enable":true}}`)
	type execute struct {
		Confirm   bool    `json:"confirm"`
		TimeoutMS float64 `json:"timeout_ms"`
	}
	var ex execute
	var tools struct {
		Enable bool `json:"enable"`
	}
	if o, n := f.last(); n != 1 || o.Decode("execute", &ex) != nil || o.Decode("editor_tools", &tools) != nil || ex.Confirm || ex.TimeoutMS != 1500.5 || !tools.Enable {
		t.Fatalf("first options: %+v (%d)", o, n)
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "a.secret")
	if !a.Workspace().Files().Denied(secret) {
		t.Fatal("the deny-list did not reach the boundary")
	}
	// setup() again while the server runs: confirm back on, nothing denied.
	send(`{"execute":{"confirm":true},"security":{"deny":[]}}`)
	ex = execute{}
	if o, n := f.last(); n != 2 || o.Decode("execute", &ex) != nil || !ex.Confirm {
		t.Fatalf("options while running: %+v (%d)", o, n)
	}
	if a.Workspace().Files().Denied(secret) {
		t.Fatal("the new deny-list did not replace the old one")
	}
	if _, err := r.reqs["options"](context.Background(), json.RawMessage(`{"execute":{"confirm":"yes"}}`)); err == nil || !strings.Contains(err.Error(), "option execute") {
		t.Fatalf("options of the wrong type: err = %v, want a refusal naming the option", err)
	}
	if _, err := r.reqs["options"](context.Background(), json.RawMessage(`{"security":{"deny":"*.key"}}`)); err == nil || !strings.Contains(err.Error(), "option security") {
		t.Fatalf("a deny-list of the wrong type: err = %v, want a refusal naming the option", err)
	}
	if _, n := f.last(); n != 2 {
		t.Fatal("a refused options request reached the features")
	}
}

// emitter records the events the pump delivers.
type emitter struct {
	mu  sync.Mutex
	evs []map[string]any
	got chan struct{}
}

func (e *emitter) Emit(_ context.Context, name string, data any) error {
	b, _ := json.Marshal(data)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["_event"] = name
	e.mu.Lock()
	e.evs = append(e.evs, m)
	e.mu.Unlock()
	select {
	case e.got <- struct{}{}:
	default:
	}
	return nil
}

// reply waits for the "reply" event with id.
func (e *emitter) reply(t *testing.T, id float64) map[string]any {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		e.mu.Lock()
		for _, m := range e.evs {
			if m["_event"] == "reply" && m["id"] == id {
				e.mu.Unlock()
				return m
			}
		}
		e.mu.Unlock()
		select {
		case <-e.got:
		case <-deadline:
			t.Fatalf("no reply %v", id)
		}
	}
}

// request_async runs a request off Neovim's main loop: the notification
// returns at once and the answer (or the error) comes as a "reply" event
// with Lua's id; a request that waits is cancelled when the App closes.
func TestRequestAsync(t *testing.T) {
	ed := &emitter{got: make(chan struct{}, 1)}
	block := make(chan struct{})
	slow := &slowFeature{block: block}
	a := New(Options{Editor: ed, Features: func(host.Host) []host.Feature { return []host.Feature{slow} }})
	r := &registrar{reqs: map[string]func(context.Context, json.RawMessage) (any, error){}, nots: map[string]func(json.RawMessage){}}
	if err := a.Register(r); err != nil {
		t.Fatal(err)
	}
	async := r.nots["request_async"]
	async(json.RawMessage(`{"id":1,"method":"status","params":{}}`))
	if m := ed.reply(t, 1); m["error"] != nil || m["result"].(map[string]any)["running"] != false {
		t.Errorf("status reply %v", m)
	}
	async(json.RawMessage(`{"id":2,"method":"no_such_thing"}`))
	if m := ed.reply(t, 2); !strings.Contains(fmt.Sprint(m["error"]), `no request "no_such_thing"`) {
		t.Errorf("unknown method reply %v", m)
	}
	async(json.RawMessage(`{"id":3,"method":"wait"}`)) // returns at once though the handler waits
	<-slow.started
	done := make(chan struct{})
	go func() { _ = a.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a request that waits for ever")
	}
	if !slow.cancelled.Load() {
		t.Error("the waiting request's context was not cancelled")
	}
}

// slowFeature has a request that waits until its context ends.
type slowFeature struct {
	block     chan struct{}
	started   chan struct{}
	cancelled atomic.Bool
	once      sync.Once
}

func (f *slowFeature) Name() string { return "slow" }
func (f *slowFeature) Hooks() host.Hooks {
	f.once.Do(func() { f.started = make(chan struct{}) })
	return host.Hooks{LuaRequests: map[string]host.LuaRequest{
		"wait": func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(f.started)
			select {
			case <-ctx.Done():
				f.cancelled.Store(true)
				return nil, ctx.Err()
			case <-f.block:
				return nil, nil
			}
		},
	}}
}

// auto_start's early start: the job's environment carries the options and
// the start parameters, and the server listens before Lua sends a request
// — unless the plugin is of another version (Lua's own requests then say
// so) or Lua's options came first (they are newer and stay).
func TestStartEarly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		version    string
		before     string // options Lua sent before, "" for none
		wantServer bool
		wantErr    string
		wantSeen   int
	}{
		{name: "same version", version: "test", wantServer: true, wantSeen: 1},
		{name: "another version", version: "0.0.9", wantErr: "version", wantSeen: 0},
		{name: "options came first", version: "test", before: `{"execute":{"confirm":true}}`, wantServer: true, wantSeen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &optionsFeature{}
			a := New(Options{Version: "test", Features: func(host.Host) []host.Feature { return []host.Feature{f} }})
			t.Cleanup(func() { _ = a.Close() })
			if tc.before != "" {
				var o host.Options
				if err := json.Unmarshal([]byte(tc.before), &o); err != nil {
					t.Fatal(err)
				}
				if err := a.SetOptions(o); err != nil {
					t.Fatal(err)
				}
			}
			cfg := t.TempDir()
			raw, _ := json.Marshal(map[string]any{
				"version": tc.version,
				"options": map[string]any{"execute": map[string]any{"confirm": false}},
				"start":   map[string]any{"pid": 1, "cwd": t.TempDir(), "config_dir": cfg},
			})
			err := a.StartEarly(context.Background(), raw, "test")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("StartEarly: %v, want error containing %q", err, tc.wantErr)
			}
			if got := a.Server() != nil; got != tc.wantServer {
				t.Fatalf("server running %v, want %v", got, tc.wantServer)
			}
			if tc.wantServer && !strings.HasPrefix(a.Status().LockFile, cfg) {
				t.Errorf("lock file %q, want it in %s", a.Status().LockFile, cfg)
			}
			o, n := f.last()
			if n != tc.wantSeen {
				t.Fatalf("the feature heard %d options, want %d", n, tc.wantSeen)
			}
			var ex struct {
				Confirm bool `json:"confirm"`
			}
			if n > 0 && (o.Decode("execute", &ex) != nil || ex.Confirm != (tc.before != "")) {
				t.Errorf("execute.confirm %v: the options Lua sent first must stay", ex.Confirm)
			}
		})
	}
}
