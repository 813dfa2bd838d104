package core

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nvim-claude/nvim-claude/app/host"
)

// optionsFeature records the options its hook hears.
type optionsFeature struct {
	mu   sync.Mutex
	seen []host.Options
}

func (f *optionsFeature) Name() string { return "recorder" }
func (f *optionsFeature) Hooks() host.Hooks {
	return host.Hooks{Options: func(o host.Options) {
		f.mu.Lock()
		f.seen = append(f.seen, o)
		f.mu.Unlock()
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
}

func (r *registrar) HandleRequest(m string, h func(context.Context, json.RawMessage) (any, error)) error {
	r.reqs[m] = h
	return nil
}
func (r *registrar) HandleNotification(string, func(json.RawMessage)) error { return nil }

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
	if o, n := f.last(); n != 1 || o.Execute.Confirm || o.Execute.TimeoutMS != 1500.5 || !o.EditorTools.Enable {
		t.Fatalf("first options: %+v (%d)", o, n)
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "a.secret")
	if !a.Workspace().Boundary().Denied(secret) {
		t.Fatal("the deny-list did not reach the boundary")
	}
	// setup() again while the server runs: confirm back on, nothing denied.
	send(`{"execute":{"confirm":true},"security":{"deny":[]}}`)
	if o, n := f.last(); n != 2 || !o.Execute.Confirm {
		t.Fatalf("options while running: %+v (%d)", o, n)
	}
	if a.Workspace().Boundary().Denied(secret) {
		t.Fatal("the new deny-list did not replace the old one")
	}
	if _, err := r.reqs["options"](context.Background(), json.RawMessage(`{"execute":{"confirm":"yes"}}`)); err == nil {
		t.Fatal("options of the wrong type were taken")
	}
	if _, n := f.last(); n != 2 {
		t.Fatal("a refused options request reached the features")
	}
}
