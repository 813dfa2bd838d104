package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/remote"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// logged wraps the engine bin in a script that appends each command line
// it is run with (one argument a line) to the returned log, then runs it.
func logged(t *testing.T, bin string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "argv")
	w := filepath.Join(dir, "engine")
	script := "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >> " + remote.Quote(log) + "\nexec " + remote.Quote(bin) + " \"$@\"\n"
	if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return w, log
}

// assertPrivate fails unless path and its directory are the user's alone.
func assertPrivate(t *testing.T, path string) {
	t.Helper()
	for _, f := range []string{path, filepath.Dir(path)} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s not private: %v", f, err)
		}
	}
}

// Through real OpenSSH: a far session's settings layer (its hooks' token
// inside) arrives whole in a private file beside the far lock, over the
// channel's stdin — no command line ssh is run with holds the token —
// and RemoveSettings takes it away.
func TestSSHWriteSettings(t *testing.T) {
	tg, _, cfg := sshTarget(t)
	var log string
	tg.Bin, log = logged(t, "ssh")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const token = "tok-4f2a9c"
	layer := []byte(`{"hooks":{"Stop":[{"hooks":[{"type":"http","url":"http://127.0.0.1:4321/hook/Stop/t1","headers":{"Authorization":"Bearer ` + token + `"}}]}]}}`)
	p, err := tg.WriteSettings(ctx, 4321, "t1", layer)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cfg, "ide", "nvim-claude-4321", "t1.json"); p != want {
		t.Fatalf("far path %q, want %q", p, want)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != string(layer) {
		t.Fatalf("far layer %q, %v", got, err)
	}
	assertPrivate(t, p)
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Fatalf("left behind beside the layer: %v", ents)
	}
	argv, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(argv), "nvim-claude-4321") {
		t.Fatalf("no ssh command line logged (%v): %s", err, argv)
	}
	if strings.Contains(string(argv), token) || strings.Contains(string(argv), "Bearer") {
		t.Fatalf("the token is on ssh's command line:\n%s", argv)
	}
	for _, bad := range []string{"", "../x", "t1;rm", "T1", "t1/x"} {
		if _, err := tg.WriteSettings(ctx, 4321, bad, layer); !errors.Is(err, remote.ErrTarget) {
			t.Errorf("session id %q: %v", bad, err)
		}
	}
	if err := tg.RemoveSettings(ctx, 4321, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("far layer still there: %v", err)
	}
}

// The Link through the stand-in container runtime: a terminal session's
// settings layer (the sessions feature's, asked for the far port) is
// written on the far side over docker exec -i, the terminal's command
// line ends with its --settings; no docker command line holds the token;
// Forget removes the file when the session's CLI ends, and the hold's end
// removes what is left, with the lock.
func TestLinkFarSettings(t *testing.T) {
	local, rt, cfg := containerRig(t)
	port := 41998
	const token = "tok-77b1e0"
	localLock, _ := json.Marshal(mcp.LockFile{PID: 77, WorkspaceFolders: []string{local}, IDEName: "Neovim", Transport: "ws", AuthToken: "lock-token"})
	var asked []string
	l := remote.NewLink(&fakeHost{}, remote.Peers{
		SetMap: func(pathmap.Map) {},
		Lock:   func() (int, []byte, error) { return port, localLock, nil },
		Settings: func(id string, farPort int) (string, error) {
			asked = append(asked, id)
			if id == "t2" {
				return "", nil // a session without hooks
			}
			return `{"hooks":{"Stop":[{"hooks":[{"type":"http","url":"http://127.0.0.1:` + itoa(farPort) + `/hook/Stop/` + id +
				`","headers":{"Authorization":"Bearer ` + token + `"}}]}]}}`, nil
		},
	})
	hooks := l.Hooks()
	defer hooks.Close()
	start := func(session string) []string {
		t.Helper()
		params, _ := json.Marshal(remote.Params{Kind: "docker", Dest: rt.Name, Bin: rt.Bin, ConfigDir: cfg,
			MapRemote: rt.Far, MapLocal: local, Cwd: local, Args: []string{"--model", "x"}, Session: session})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := hooks.LuaRequests["remote_start"](ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		m := res.(map[string]any)
		if m["warning"] != nil {
			t.Fatalf("warning: %v", m["warning"])
		}
		return m["argv"].([]string)
	}
	argv := start("t1")
	farPath := filepath.Join(cfg, "ide", "nvim-claude-"+itoa(port), "t1.json")
	if n := len(argv); n < 4 || argv[n-4] != "--model" || argv[n-2] != "--settings" || argv[n-1] != farPath {
		t.Fatalf("terminal argv %q, want it to end with --settings %s", argv, farPath)
	}
	b, err := os.ReadFile(farPath)
	if err != nil || !strings.Contains(string(b), "127.0.0.1:"+itoa(port)+"/hook/Stop/t1") || !strings.Contains(string(b), token) {
		t.Fatalf("far layer %q, %v", b, err)
	}
	assertPrivate(t, farPath)
	// A session without hooks: no --settings, nothing written.
	if argv := start("t2"); strings.Contains(strings.Join(argv, " "), "--settings") {
		t.Fatalf("a session without hooks got %q", argv)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(farPath), "t2.json")); err == nil {
		t.Fatal("a layer was written for a session without hooks")
	}
	start("t3")
	if strings.Join(asked, ",") != "t1,t2,t3" {
		t.Fatalf("layers asked for %v", asked)
	}
	for _, c := range rt.Calls(t) {
		if strings.Contains(c, token) || strings.Contains(c, "lock-token") {
			t.Fatalf("a secret on docker's command line: %s", c)
		}
	}
	l.Forget("t1")
	waitGone(t, farPath)
	if _, err := os.Stat(filepath.Join(filepath.Dir(farPath), "t3.json")); err != nil {
		t.Fatalf("another session's layer went too: %v", err)
	}
	hooks.ServerStopped()
	waitGone(t, filepath.Dir(farPath))
	waitGone(t, filepath.Join(cfg, "ide", itoa(port)+".lock"))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
