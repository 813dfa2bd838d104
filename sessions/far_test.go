package sessions

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// farHost is fakeHost with one workspace, whose mapping a test sets (the
// remote feature's hold sets it while it lives).
type farHost struct {
	fakeHost
	ws *workspace.Workspace
}

func (h *farHost) Workspace() workspace.View { return h.ws }

// forgets records the far settings layers the feature asks to remove.
type forgets struct {
	mu  sync.Mutex
	ids []string
}

func (f *forgets) Forget(id string) { f.mu.Lock(); f.ids = append(f.ids, id); f.mu.Unlock() }

func farTerminal(t *testing.T, s *Sessions, params string) TerminalInfo {
	t.Helper()
	res, err := s.Hooks().LuaRequests["sessions.terminal"](context.Background(), json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	return res.(TerminalInfo)
}

// A far terminal's settings layer: nothing is written here (the remote
// feature writes it on the far side), and its HTTP hooks name the far
// port with the session's own token, over the user's --settings JSON; a
// user's far file cannot be layered (a warning, no hooks); with no port
// (sessions.http_hooks = false) the session has no hooks; its CLI's end
// asks the far side to remove the layer.
func TestFarSettings(t *testing.T) {
	s := New(&fakeHost{})
	t.Cleanup(s.Close)
	far := &forgets{}
	s.SetFar(far)
	info := farTerminal(t, s, `{"dir":"/proj/a","far":true,"port":4000,"answer":true}`)
	if info.Settings != "" || info.Warning != "" || s.private != "" {
		t.Fatalf("a far terminal's layer was written here: %+v (%q)", info, s.private)
	}
	layer, err := s.FarSettings(info.ID, 5000)
	if err != nil || !strings.Contains(layer, `"http://127.0.0.1:5000/hook/Stop/`+info.ID+`"`) ||
		!strings.Contains(layer, `"http://127.0.0.1:5000/hook/PermissionRequest/`+info.ID+`/wait"`) ||
		!strings.Contains(layer, `"Bearer `+s.hookTokenOf(info.ID)+`"`) || strings.Contains(layer, "4000") {
		t.Fatalf("the far layer (%v): %s", err, layer)
	}

	user := farTerminal(t, s, `{"dir":"/proj/a","far":true,"port":4000,"user_settings":"{\"env\":{\"A\":\"1\"},\"hooks\":{\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"true\"}]}]}}"}`)
	layer, err = s.FarSettings(user.ID, 4000)
	var doc struct {
		Env   map[string]string
		Hooks map[string][]any
	}
	if err != nil || json.Unmarshal([]byte(layer), &doc) != nil || doc.Env["A"] != "1" || len(doc.Hooks["Stop"]) != 2 ||
		strings.Contains(layer, "/wait") {
		t.Fatalf("the far layer over the user's settings (%v): %s", err, layer)
	}

	file := farTerminal(t, s, `{"dir":"/proj/a","far":true,"port":4000,"user_settings":"my-settings.json"}`)
	if layer, err := s.FarSettings(file.ID, 4000); err != nil || layer != "" || !strings.Contains(file.Warning, "far side") {
		t.Fatalf("a far --settings file: %+v, layer %q, %v", file, layer, err)
	}
	off := farTerminal(t, s, `{"dir":"/proj/a","far":true}`)
	if layer, err := s.FarSettings(off.ID, 4000); err != nil || layer != "" || off.Warning != "" {
		t.Fatalf("http_hooks = false: layer %q, %v, %+v", layer, err, off)
	}
	if _, err := s.FarSettings(newTerminal(t, s), 4000); err == nil {
		t.Fatal("a local terminal got a far layer")
	}

	for _, id := range []string{info.ID, off.ID} {
		if _, err := s.Hooks().LuaRequests["sessions.update"](context.Background(), json.RawMessage(`{"id":"`+id+`","event":"exited"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if layer, _ := s.FarSettings(info.ID, 4000); layer != "" {
		t.Fatal("an exited session still gets a layer")
	}
	far.mu.Lock()
	defer far.mu.Unlock()
	if strings.Join(far.ids, ",") != info.ID+","+off.ID {
		t.Fatalf("forgotten: %v", far.ids)
	}
}

// A far terminal's hooks name far paths: its cwd is mapped through the
// workspace's mapping (the CLI's own worktree, under the far project,
// becomes the local one); a far path outside the mapping, or any with no
// mapping in force, never becomes the session's directory, even one that
// exists here — and the first hook still decides. The plan file a far
// PostToolUse names is read only through the mapping.
func TestFarHookPaths(t *testing.T) {
	local, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// a local directory the far path spells too: it must not be taken
	elsewhere := t.TempDir()
	wt := filepath.Join(elsewhere, ".claude", "worktrees", "x")
	if err := os.MkdirAll(filepath.Join(local, ".claude", "plans"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(wt, 0o700); err != nil {
		t.Fatal(err)
	}
	plan := "# The mapped plan\n"
	if err := os.WriteFile(filepath.Join(local, ".claude", "plans", "p.md"), []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := pathmap.New("/srv/app", local, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mapped bool
		cwds   []string
		want   string
	}{
		{"far worktree mapped", true, []string{"/srv/app/.claude/worktrees/feat"}, filepath.Join(local, ".claude", "worktrees", "feat")},
		{"far project mapped", true, []string{"/srv/app/sub"}, local},
		{"outside the mapping, existing here", true, []string{elsewhere + "/.claude/worktrees/x"}, local},
		{"no mapping in force", false, []string{local + "/.claude/worktrees/feat"}, local},
		{"a refused first hook still decides", true, []string{"/home/far", "/srv/app/.claude/worktrees/feat"}, local},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &farHost{ws: workspace.New()}
			if tc.mapped {
				h.ws.SetMap(m)
			}
			s := New(h)
			t.Cleanup(s.Close)
			info := farTerminal(t, s, `{"dir":`+jsonString(local)+`,"far":true,"port":4000}`)
			srv := httptest.NewServer(s.Hooks().HTTPHooks)
			defer srv.Close()
			for _, cwd := range tc.cwds {
				post(t, srv.URL, "PreToolUse/"+info.ID, s.hookTokenOf(info.ID), `{"cwd":`+jsonString(cwd)+`,"tool_name":"Bash"}`)
			}
			if dir := s.List()[0].Dir; dir != tc.want {
				t.Fatalf("the session's dir %q, want %q", dir, tc.want)
			}
		})
	}
	// The plan file: read through the mapping; a far path outside it is
	// not read here, though a file of that name exists.
	h := &farHost{ws: workspace.New()}
	h.ws.SetMap(m)
	s := New(h)
	t.Cleanup(s.Close)
	info := farTerminal(t, s, `{"dir":`+jsonString(local)+`,"far":true,"port":4000}`)
	for _, tc := range []struct{ path, want string }{
		{"/srv/app/.claude/plans/p.md", plan},
		{filepath.Join(local, ".claude", "plans", "p.md"), ""},
	} {
		body, _ := json.Marshal(map[string]any{"cwd": "/srv/app", "tool_name": "Write", "tool_input": map[string]any{"file_path": tc.path}})
		c, _ := digest("PostToolUse", info.ID, body, s.pathsOf(info.ID))
		if c.Plan != tc.want {
			t.Errorf("plan of %s: %q, want %q", tc.path, c.Plan, tc.want)
		}
	}
}

func post(t *testing.T, url, path, token, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+mcp.HTTPPrefix+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, resp.Status)
	}
}
