package remote_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/remote"
	"github.com/nvim-claude/nvim-claude/remote/sshtest"
	"github.com/nvim-claude/nvim-claude/workspace"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

func TestReadDevcontainer(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app")
	for _, tc := range []struct {
		name, json string
		want       remote.DevcontainerConfig
		err        string
	}{
		{"defaults", `{ "image": "x" }`, remote.DevcontainerConfig{Folder: "/workspaces/app", Remote: "/workspaces/app", Local: app}, ""},
		{"folder, comments, trailing commas", `{
  // the image
  "image": "x", /* a "quoted" word */
  "workspaceFolder": "/src/${localWorkspaceFolderBasename}",
  "url": "http://not//a/comment",
}`, remote.DevcontainerConfig{Folder: "/src/app", Remote: "/src/app", Local: app}, ""},
		{"mount", `{"workspaceMount": "source=${localWorkspaceFolder},target=/work,type=bind", "workspaceFolder": "/work/sub"}`,
			remote.DevcontainerConfig{Folder: "/work/sub", Remote: "/work", Local: app}, ""},
		{"volume", `{"workspaceMount": "source=vol,target=/work,type=volume"}`, remote.DevcontainerConfig{}, "is not a local folder"},
		{"broken", `{"workspaceFolder": }`, remote.DevcontainerConfig{}, "devcontainer.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(app, ".devcontainer"), 0o755); err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(app, ".devcontainer", "devcontainer.json")
			if err := os.WriteFile(f, []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := remote.ReadDevcontainer(app)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			tc.want.File = f
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, err := remote.ReadDevcontainer(dir); err == nil || !strings.Contains(err.Error(), "no devcontainer.json") {
		t.Fatalf("no file: %v", err)
	}
}

func TestResolve(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cwd, ".devcontainer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".devcontainer", "devcontainer.json"), []byte(`{"workspaceFolder": "/workspaces/x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		p              remote.Params
		dir, far, here string
		err            string
	}{
		{"ssh dir maps to the cwd", remote.Params{Kind: "ssh", Dest: "me@box", Dir: "/w/app/", Cwd: cwd}, "/w/app", "/w/app", cwd, ""},
		{"declared map, dir from it", remote.Params{Kind: "docker", Dest: "c", MapRemote: "/workspaces/app", MapLocal: cwd, Cwd: "/elsewhere"},
			"/workspaces/app", "/workspaces/app", cwd, ""},
		{"same paths: no map", remote.Params{Kind: "podman", Dest: "c", Cwd: cwd}, "", "", "", ""},
		{"devcontainer", remote.Params{Kind: "devcontainer", Cwd: cwd}, "/workspaces/x", "/workspaces/x", cwd, ""},
		{"map local missing", remote.Params{Kind: "ssh", Dest: "b", MapRemote: "/w", MapLocal: filepath.Join(cwd, "nope"), Cwd: cwd}, "", "", "", "is not a directory here"},
		{"windows far path", remote.Params{Kind: "ssh", Dest: "b", MapRemote: `C:\w`, Cwd: cwd}, "", "", "", "Windows-style"},
		{"local without remote", remote.Params{Kind: "ssh", Dest: "b", MapLocal: cwd, Cwd: cwd}, "", "", "", "without map.remote"},
		{"option as destination", remote.Params{Kind: "ssh", Dest: "-oProxyCommand=x", Cwd: cwd}, "", "", "", "is not a host"},
		{"no kind", remote.Params{Cwd: cwd}, "", "", "", "no far side"},
		{"no devcontainer.json", remote.Params{Kind: "devcontainer", Cwd: "/"}, "", "", "", "no devcontainer.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, m, err := remote.Resolve(tc.p, "/home/me")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || tg.Dir != tc.dir || m.Remote() != tc.far || m.Local() != tc.here {
				t.Fatalf("dir %q map %q=%q, %v; want %q %q=%q", tg.Dir, m.Remote(), m.Local(), err, tc.dir, tc.far, tc.here)
			}
		})
	}
}

// fakeHost is the host the Link gets in its own tests.
type fakeHost struct {
	mu     sync.Mutex
	events []string
}

func (h *fakeHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h *fakeHost) Emit(event string, data any) {
	b, _ := json.Marshal(data)
	h.mu.Lock()
	h.events = append(h.events, event+" "+string(b))
	h.mu.Unlock()
}
func (h *fakeHost) Broadcast(string, any) int        { return 0 }
func (h *fakeHost) Notify(string, string, any) error { return nil }
func (h *fakeHost) Clients() []mcp.ClientInfo        { return nil }
func (h *fakeHost) Running() bool                    { return true }
func (h *fakeHost) EditorPID() int                   { return os.Getpid() }
func (h *fakeHost) Workspace() workspace.View        { return nil }
func (h *fakeHost) Events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string{}, h.events...)
}

// containerRig is a project folder here, the stand-in container runtime
// that sees it as /workspaces/app, and the far CLI's config directory.
func containerRig(t *testing.T) (local string, rt *sshtest.Runtime, cfg string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local = filepath.Join(root, "src", "app")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	rt = sshtest.StartRuntime(t, local, filepath.Join(root, "workspaces", "app"))
	return local, rt, filepath.Join(root, "farcfg")
}

// The Link through the stand-in container runtime: it writes the far lock
// (far folders, a live far pid) over docker exec, sets the mapping, gives
// the terminal's docker exec -it; a channel that dies is reported to Lua
// and unmaps; the server's stop closes the hold and removes the lock
// without a report.
func TestLinkContainer(t *testing.T) {
	local, rt, cfg := containerRig(t)
	h := &fakeHost{}
	var mu sync.Mutex
	var maps []string
	port := 41999
	localLock, _ := json.Marshal(mcp.LockFile{PID: 77, WorkspaceFolders: []string{local}, IDEName: "Neovim", Transport: "ws", AuthToken: "tok"})
	l := remote.NewLink(h, remote.Peers{
		SetMap: func(m pathmap.Map) { mu.Lock(); maps = append(maps, m.Remote()+"="+m.Local()); mu.Unlock() },
		Lock:   func() (int, []byte, error) { return port, localLock, nil },
	})
	hooks := l.Hooks()
	defer hooks.Close()
	params, _ := json.Marshal(remote.Params{Kind: "docker", Dest: rt.Name, Bin: rt.Bin, ConfigDir: cfg,
		MapRemote: rt.Far, MapLocal: local, Cwd: local, Args: []string{"--model", "x"}})
	start := func() map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := hooks.LuaRequests["remote_start"](ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return out
	}
	// A container that is not there: the refusal says what the runtime said.
	bad, _ := json.Marshal(remote.Params{Kind: "docker", Dest: "gone", Bin: rt.Bin, ConfigDir: cfg, Cwd: local})
	if _, err := hooks.LuaRequests["remote_start"](context.Background(), bad); err == nil || !strings.Contains(err.Error(), "No such container: gone") {
		t.Fatalf("a missing container: %v", err)
	}
	res := start()
	want := []any{rt.Bin, "exec", "-i", "-t", "-w", rt.Far, "-e", "CLAUDE_CODE_SSE_PORT=" + strconv.Itoa(port),
		"-e", "CLAUDE_CONFIG_DIR=" + cfg, "-e", "ENABLE_IDE_INTEGRATION=true", "--", rt.Name, "claude", "--model", "x"}
	if !reflect.DeepEqual(res["argv"], want) {
		t.Fatalf("terminal argv %q\nwant %q", res["argv"], want)
	}
	farLock := filepath.Join(cfg, "ide", strconv.Itoa(port)+".lock")
	var lk mcp.LockFile
	b, err := os.ReadFile(farLock)
	if err != nil || json.Unmarshal(b, &lk) != nil {
		t.Fatalf("far lock %q: %v", b, err)
	}
	if lk.PID <= 0 || lk.PID == 77 || !reflect.DeepEqual(lk.WorkspaceFolders, []string{rt.Far}) || lk.AuthToken != "tok" {
		t.Fatalf("far lock %+v", lk)
	}
	// The far side sees the workspace under the far path.
	if err := os.WriteFile(filepath.Join(local, "probe.txt"), []byte("seen"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := remote.Target{Kind: remote.Docker, Dest: rt.Name, Bin: rt.Bin}
	argv, _ := tg.Exec([]string{"cat", filepath.Join(rt.Far, "probe.txt")}, nil, false, 0)
	if out, err := execOut(argv); err != nil || out != "seen" {
		t.Fatalf("far read %q, %v", out, err)
	}
	// A second start on the same target keeps the hold.
	if again := start(); !reflect.DeepEqual(again["hold"], res["hold"]) {
		t.Fatalf("a second hold: %v", again["hold"])
	}
	// The channel dies: Lua hears it, the lock goes, the mapping too.
	killHold(t, lk.PID)
	waitGone(t, farLock)
	waitFor(t, func() bool { return len(h.Events()) == 1 })
	if ev := h.Events()[0]; !strings.HasPrefix(ev, "remote.lost ") || !strings.Contains(ev, rt.Name) {
		t.Fatalf("event %s", ev)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return maps[len(maps)-1] == "=" })
	// Started again, then the server stops: no report, the lock goes.
	start()
	if _, err := os.Stat(farLock); err != nil {
		t.Fatal(err)
	}
	hooks.ServerStopped()
	waitGone(t, farLock)
	hooks.Close()
	if n := len(h.Events()); n != 1 {
		t.Fatalf("events %v", h.Events())
	}
	mu.Lock()
	if maps[len(maps)-1] != "=" || maps[2] != rt.Far+"="+local {
		t.Fatalf("maps %q", maps)
	}
	mu.Unlock()
}

func execOut(argv []string) (string, error) {
	c := exec.Command(argv[0], argv[1:]...)
	out, err := c.Output()
	return string(out), err
}

// killHold kills the far holding shell's stand-in engine: the far shell
// (pid) is hung up on, as when the connection drops.
func killHold(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
