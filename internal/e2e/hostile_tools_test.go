//go:build unix

package e2e

// Hostile tool calls through the real host binary, and the no-data-lost
// guarantees: an accepted diff hands the CLI exactly the bytes of the
// proposal, and writeFile / saveDocument never leave a partial file.
// app/fuzz_test.go checks the wording of each refusal; here the point is
// that the real process survives everything and that bytes survive intact.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/internal/soak/toolargs"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// hstRig is an editor serving through the real host, with a stand-in CLI,
// a workspace file, and a file outside the workspace that nothing may
// touch.
type hstRig struct {
	*editor
	st   status
	c    *ideClient
	dir  string
	fx   toolargs.Fixture
	host int
	id   int

	frames chan map[string]any // started by the first call
}

func startHstRig(t *testing.T, dir string) *hstRig {
	t.Helper()
	if dir == "" {
		var err error
		if dir, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, text := range map[string]string{filepath.Join(dir, "a.txt"): "alpha\nbeta\n", filepath.Join(out, "outside.txt"): "outside\n"} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := startEditor(t, editorOpts{dir: dir})
	st := e.serve(t)
	r := &hstRig{editor: e, st: st, dir: dir, host: e.hostPID(t), fx: toolargs.Fixture{
		File: filepath.Join(dir, "a.txt"), Outside: filepath.Join(out, "outside.txt"), Workspace: dir, Marker: filepath.Join(out, "pwned"),
	}}
	r.c = dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
	r.c.handshake(t, 4242)
	return r
}

// call sends a request and returns its reply, or nil once wait passes or
// blocked (Lua) holds.
func (r *hstRig) call(t *testing.T, method, params string, wait time.Duration, blocked string) map[string]any {
	t.Helper()
	if r.frames == nil {
		r.frames = make(chan map[string]any, 64)
		go func(frames chan<- map[string]any) { // ends when the connection closes
			defer close(frames)
			for {
				_ = r.c.c.SetReadDeadline(time.Time{})
				_, b, err := r.c.c.ReadMessage()
				if err != nil {
					return
				}
				var m map[string]any
				if json.Unmarshal(b, &m) == nil {
					frames <- m
				}
			}
		}(r.frames)
	}
	r.id++
	r.c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, r.id, method, params))
	timeout := time.After(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-r.frames:
			if !ok {
				t.Fatal("the host closed the connection")
			}
			if v, ok := m["id"].(float64); ok && int(v) == r.id {
				return m
			}
		case <-tick.C:
			var yes bool
			if blocked != "" && r.TryEval("return not not ("+blocked+")", &yes) == nil && yes {
				return nil
			}
		case <-timeout:
			return nil
		}
	}
}

func (r *hstRig) intact(t *testing.T, what string) {
	t.Helper()
	if b, err := os.ReadFile(r.fx.Outside); err != nil || string(b) != "outside\n" {
		t.Fatalf("after %s: outside.txt = %q (%v)", what, b, err)
	}
	if _, err := os.Stat(r.fx.Marker); err == nil {
		t.Fatalf("after %s: an injection payload ran", what)
	}
}

// hstAsked is true while a diff or a float (executeCode's confirmation)
// waits for the user.
const hstAsked = `(#require("claude.diff").pending() > 0 or (function()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.wo[w].diff or vim.api.nvim_win_get_config(w).relative ~= "" then return true end
  end
  return false end)())`

// TestHostSurvivesHostileToolCalls sends every generated hostile argument
// set for every listed tool, and hostile params to the workspace methods,
// to the real host: every call is answered (openDiff and executeCode, which
// wait for the user, are cancelled and what they showed must close), the host process never dies,
// logs no panic, shows the user no error, and nothing outside the
// workspace is read into an answer, written or created.
func TestHostSurvivesHostileToolCalls(t *testing.T) {
	r := startHstRig(t, "")
	e := r.editor
	e.Exec(t, captureNotify)
	tools := fltTools(t, r.c)
	calls, refused := 0, 0
	for _, tool := range tools {
		for _, c := range toolargs.Cases(tool, r.fx) {
			calls++
			what := tool.Name + " / " + c.Name
			blocked := ""
			if tool.Name == "openDiff" || tool.Name == "executeCode" {
				blocked = hstAsked // these wait for the user
			}
			res := r.call(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool.Name, c.Args), 20*time.Second, blocked)
			if res == nil {
				if blocked == "" {
					t.Fatalf("%s: no answer", what)
				}
				r.c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, r.id))
				e.WaitFor(t, 10*time.Second, "not "+hstAsked, `return require("claude.diff").pending()`, what+": the cancelled request's diff or float to close")
			} else {
				if errObj, ok := res["error"].(map[string]any); ok && errObj["code"].(float64) != -32602 {
					t.Errorf("%s: JSON-RPC error %v", what, errObj)
				}
				text, isErr := fltResultText(res)
				if isErr {
					refused++
				}
				if strings.Contains(text, "outside\n") && !strings.Contains(tool.Name, "open") {
					t.Errorf("%s: the answer carries outside.txt's text: %.200q", what, text)
				}
			}
			r.intact(t, what)
		}
	}

	// The workspace methods take paths too, confined to the workspace.
	link := filepath.Join(r.dir, "escape")
	if err := os.Symlink(filepath.Dir(r.fx.Outside), link); err != nil {
		t.Fatal(err)
	}
	rel := strings.Repeat("../", strings.Count(r.dir, "/")) + strings.TrimPrefix(r.fx.Outside, "/")
	for _, m := range []struct{ method, params string }{
		{"readFile", fmt.Sprintf(`{"path":%q}`, r.fx.Outside)},
		{"readFile", fmt.Sprintf(`{"path":%q}`, rel)},
		{"readFile", `{"path":"escape/outside.txt"}`},
		{"readFile", fmt.Sprintf(`{"path":%q}`, "file://"+r.fx.Outside)},
		{"readFile", `{"path":"a.txt\u0000/../../outside.txt"}`},
		{"readFile", `{"path":42}`},
		{"readFile", `{"path":"/proc/self/environ"}`},
		{"writeFile", fmt.Sprintf(`{"path":%q,"content":"pwned\n"}`, r.fx.Outside)},
		{"writeFile", fmt.Sprintf(`{"path":%q,"content":"pwned\n"}`, rel)},
		{"writeFile", `{"path":"escape/outside.txt","content":"pwned\n"}`},
		{"writeFile", `{"path":"escape/new.txt","content":"pwned\n"}`},
		{"writeFile", `{"path":"a.txt","content":42}`},
		{"writeFile", `{"path":"a.txt"}`},
		{"writeFile", `{"path":"","content":"x"}`},
		{"writeFile", `{"path":".","content":"x"}`},
		{"listFiles", `{"pattern":"../**"}`},
		{"listFiles", `{"pattern":"/**"}`},
		{"listFiles", `{"pattern":"escape/**"}`},
		{"listFiles", `{"pattern":"[[[["}`},
		{"listFiles", `{"pattern":["*"]}`},
		{"getWorkspaceInfo", `[1,2]`},
		{"getCurrentFile", `{"x":{"y":[1e400]}}`},
	} {
		calls++
		res := r.call(t, m.method, m.params, 20*time.Second, "")
		if res == nil {
			t.Fatalf("%s %s: no answer", m.method, m.params)
		}
		b, _ := json.Marshal(res)
		if errObj, ok := res["error"].(map[string]any); ok {
			refused++
			if code := errObj["code"].(float64); code != -32602 && code != -32601 {
				t.Errorf("%s %s: JSON-RPC error %v", m.method, m.params, errObj)
			}
		} else if m.method != "getWorkspaceInfo" && m.method != "getCurrentFile" && !(m.method == "listFiles" && !strings.Contains(string(b), "outside")) {
			t.Errorf("%s %s: accepted: %.300s", m.method, m.params, b)
		}
		if strings.Contains(string(b), "outside\\n") || strings.Contains(string(b), "outside.txt\"") {
			t.Errorf("%s %s: the answer reaches outside the workspace: %.300s", m.method, m.params, b)
		}
		r.intact(t, m.method+" "+m.params)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(r.fx.Outside), "new.txt")); err == nil {
		t.Error("writeFile created a file outside the workspace through a symlink")
	}

	if !alive(r.host) || e.hostPID(t) != r.host {
		t.Fatal("the host died")
	}
	for _, n := range e.notes(t) {
		if n.Level >= 4 {
			t.Errorf("the user saw an error: %s", n.Msg)
		}
	}
	if log, _ := os.ReadFile(e.logFile); bytes.Contains(log, []byte("panic")) {
		t.Errorf("the host log records a panic")
	}
	t.Logf("%d hostile calls to %d tools and the workspace methods: %d refused, the rest answered harmlessly; host alive", calls, len(tools), refused)
}

// hstContents are file contents whose bytes are easy to lose.
var hstContents = []struct {
	name, original, proposal string
}{
	{"no final newline", "one\ntwo", "one\nTWO"},
	{"CRLF", "one\r\ntwo\r\n", "one\r\nTWO\r\n"},
	{"CRLF without a final newline", "one\r\ntwo", "ONE\r\ntwo"},
	{"BOM and CRLF", "\ufeffone\r\ntwo\r\n", "\ufeffone\r\nTWO\r\n"},
	{"BOM and LF", "\ufeffone\ntwo\n", "\ufeffONE\ntwo\n"},
	{"multibyte", "日本語\nçà\n", "日本語 😀\nçà ✻\n"},
	{"trailing blank lines", "a\n", "a\n\n\n"},
	{"emptied", "a\nb\n", ""},
	{"only a newline", "a\n", "\n"},
	{"mixed line endings", "a\r\nb\nc\r\n", "a\r\nB\nc\r\n"},
	{"a lone CR", "a\rb\n", "a\rB\n"},
	{"tabs and trailing spaces", "\tx  \n", "\tX  \t\n"},
	{"a NUL byte", "a\n", "a\x00b\n"},
	{"very long line", "short\n", strings.Repeat("0123456789abcdef", 1<<16) + "\n"},
	{"10 MB", "small\n", strings.Repeat("a line of text, forty-six characters long ✻\n", 10<<20/46)},
}

// hstOracle is what Neovim's own writer makes of a buffer: its lines and
// the options that shape the bytes, written by :write from a scratch copy.
const hstOracle = `local src, path = ...
local lines = vim.api.nvim_buf_get_lines(src, 0, -1, false)
if #lines == 1 and lines[1] == "" and vim.api.nvim_buf_call(src, function() return vim.fn.wordcount().bytes end) == 0 then
  vim.fn.writefile({}, path, "b") -- an empty buffer, as read from an empty file, writes nothing
  return
end
local o = {}
for _, name in ipairs({ "fileformat", "bomb", "endofline", "fixendofline", "fileencoding" }) do
  o[name] = vim.bo[src][name]
end
local b = vim.api.nvim_create_buf(false, true)
vim.bo[b].buftype = ""
vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
for name, v in pairs(o) do vim.bo[b][name] = v end
vim.api.nvim_buf_call(b, function() vim.cmd("silent noautocmd keepalt write! " .. vim.fn.fnameescape(path)) end)
vim.api.nvim_buf_delete(b, { force = true })`

// TestAcceptedDiffKeepsEveryByte accepts diffs of every kind of content,
// unchanged and after an edit in the proposal: FILE_SAVED carries exactly
// the proposal's bytes (for an edit: what Neovim's writer makes of the
// proposal buffer), the plugin writes nothing itself, and once the stand-in
// CLI has written the file the reloaded buffer writes the same bytes back.
func TestAcceptedDiffKeepsEveryByte(t *testing.T) {
	r := startDiffRig(t)
	c := r.cli(t, 4242)
	oracle := filepath.Join(t.TempDir(), "oracle")
	id := 0
	for _, tc := range hstContents {
		for _, edited := range []bool{false, true} {
			if edited && len(tc.proposal) > 4<<20 {
				continue // the 10 MB case once: the edit adds nothing there
			}
			name := tc.name
			if edited {
				name += ", edited"
			}
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(r.dir, fmt.Sprintf("f%d.txt", id))
				if err := os.WriteFile(path, []byte(tc.original), 0o644); err != nil {
					t.Fatal(err)
				}
				id++
				// The user has the file open, as usual when Claude edits it.
				r.Exec(t, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, path)
				tab := fmt.Sprintf("✻ [Claude Code] %s (%d) ⧉", filepath.Base(path), id)
				c.send(t, diffOpenMsg(id, path, tab, tc.proposal))
				r.waitPending(t, 1)
				want := tc.proposal
				if edited {
					r.Exec(t, `local tab = ...
for _, d in ipairs(require("claude.diff").pending()) do
  if d.tab_name == tab then vim.api.nvim_buf_set_lines(d.proposal_bufnr, 0, 0, false, { "edited in Neovim" }) end
end`, tab)
					var buf int
					r.Eval(t, `return require("claude.diff").pending()[1].proposal_bufnr`, &buf)
					r.Exec(t, hstOracle, buf, oracle)
					b, err := os.ReadFile(oracle)
					if err != nil {
						t.Fatal(err)
					}
					want = string(b)
				}
				r.decideIn(t, tab, "write")
				got := diffTexts(t, c.recv(t, id))
				if len(got) != 2 || got[0] != "FILE_SAVED" {
					t.Fatalf("answer %.200q", got)
				}
				if got[1] != want {
					t.Fatalf("FILE_SAVED carries %d bytes, the proposal has %d: %s", len(got[1]), len(want), hstDiff(want, got[1]))
				}
				r.waitPending(t, 0)
				if b, _ := os.ReadFile(path); string(b) != tc.original {
					t.Fatalf("the plugin wrote the file itself: %.200q", b)
				}
				// The CLI writes the file, and the buffer, reloaded, holds
				// exactly its bytes (its lines and its fileformat, bomb and
				// endofline: what a :write would give back, 'fixendofline'
				// aside, which is the user's own choice).
				if err := os.WriteFile(path, []byte(got[1]), 0o644); err != nil {
					t.Fatal(err)
				}
				var buf int
				r.Eval(t, `return vim.fn.bufnr(...)`, &buf, path)
				var held string
				for deadline := time.Now().Add(10 * nvimtest.Slack * time.Second); ; {
					r.Exec(t, `vim.cmd("checktime") local b = ... vim.bo[b].fixendofline = false`, buf)
					r.Exec(t, hstOracle, buf, oracle)
					b, _ := os.ReadFile(oracle)
					if held = string(b); held == got[1] {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the reloaded buffer does not hold the file's bytes: %s", hstDiff(got[1], held))
					}
					time.Sleep(50 * time.Millisecond)
				}
				r.Exec(t, `vim.cmd("edit a.txt") vim.cmd("bwipeout! " .. ...)`, buf)
			})
		}
	}
}

// hstDiff describes where got departs from want, briefly.
func hstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	end := func(s string) string {
		return fmt.Sprintf("%q", s[i:min(len(s), i+40)])
	}
	return fmt.Sprintf("first difference at byte %d: want %s, got %s", i, end(want), end(got))
}

// TestCLIWritesTheProposalBytes drives the real CLI through an edit of a
// file with a BOM, CRLF line ends, multibyte text and no final newline:
// after the user edits the proposal and accepts, the file the CLI writes
// holds exactly the proposal buffer's text, in the file's own line ends.
func TestCLIWritesTheProposalBytes(t *testing.T) {
	const original = "\ufeffalpha ✻\r\nbeta 日本\r\ngamma"
	s := startSession(t, sessionOpts{files: map[string]string{"crlf.txt": original}})
	file := filepath.Join(s.project, "crlf.txt")
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p") vim.cmd("edit crlf.txt")`)
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": file})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": file, "old_string": "beta 日本", "new_string": "BETA 日本 😀"})),
		fakeapi.Reply(fakeapi.Text("Edited.")),
	)
	s.submit(t, "make beta loud")
	s.WaitFor(t, 60*time.Second, `#require("claude.diff").pending() == 1`, `return require("claude.diff").pending()`, "the diff")
	var buf int
	s.Eval(t, `return require("claude.diff").pending()[1].proposal_bufnr`, &buf)
	s.Exec(t, `vim.api.nvim_buf_set_lines(..., -1, -1, false, { "delta, added in Neovim" })`, buf)
	oracle := filepath.Join(t.TempDir(), "oracle")
	s.Exec(t, hstOracle, buf, oracle)
	proposal, err := os.ReadFile(oracle)
	if err != nil {
		t.Fatal(err)
	}
	// CLI 2.1.330 hands openDiff the text with LF line ends and, writing
	// the file, restores the file's own CRLF; the BOM and the missing final
	// newline pass through both ways. Pinned here: the file must be the
	// proposal, line for line and byte for byte, in the file's line ends.
	if bytes.Contains(proposal, []byte("\r\n")) {
		t.Fatalf("the CLI now sends CRLF in openDiff (%q): revisit this pin", proposal)
	}
	want := bytes.ReplaceAll(proposal, []byte("\n"), []byte("\r\n"))
	if !bytes.HasPrefix(want, []byte("\ufeff")) || bytes.HasSuffix(want, []byte("\n")) {
		t.Fatalf("the proposal lost the BOM or gained a final newline: %q", proposal)
	}
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, buf)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := os.ReadFile(file)
		if bytes.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			var reqs []string
			for _, m := range s.api.MainRequests() {
				reqs = append(reqs, m.Text())
			}
			t.Fatalf("the CLI wrote %q, the proposal buffer is %q; screen:\n%s\nrequests: %s", got, want, s.screen(t), strings.Join(reqs, "\n---\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hstFullDisk mounts a tmpfs of size as the workspace, or skips.
func hstFullDisk(t *testing.T, size string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if why := fltMountTmpfs(t, dir, "size="+size); why != "" {
		t.Skip(why)
	}
	return dir
}

// hstFill fills the file system holding dir, leaving at most a few bytes.
func hstFill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "zz-filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}

// TestWritesNeverLeavePartialFiles: writeFile (to a file Neovim has not
// loaded, and through a loaded buffer) and saveDocument on a full disk fail
// with a clear error and leave the file as it was; writeFile's bytes are
// exact; two clients writing one file at once leave one whole version.
func TestWritesNeverLeavePartialFiles(t *testing.T) {
	t.Run("bytes are exact", func(t *testing.T) {
		r := startHstRig(t, "")
		for i, tc := range hstContents {
			if len(tc.proposal) > 4<<20 {
				continue // 10 MB: TestAcceptedDiffKeepsEveryByte carries it
			}
			for _, loaded := range []bool{false, true} {
				name := fmt.Sprintf("w%d-%v.txt", i, loaded)
				path := filepath.Join(r.dir, name)
				if err := os.WriteFile(path, []byte(tc.original), 0o644); err != nil {
					t.Fatal(err)
				}
				if loaded {
					r.Exec(t, `vim.cmd("edit " .. vim.fn.fnameescape(...)) vim.cmd("edit a.txt")`, path)
				}
				params, _ := json.Marshal(map[string]string{"path": name, "content": tc.proposal})
				res := r.call(t, "writeFile", string(params), 30*time.Second, "")
				if res == nil || res["error"] != nil {
					t.Errorf("%s (loaded %v): writeFile: %v", tc.name, loaded, res["error"])
					continue
				}
				if b, _ := os.ReadFile(path); string(b) != tc.proposal {
					t.Errorf("%s (loaded %v): %s", tc.name, loaded, hstDiff(tc.proposal, string(b)))
				}
			}
		}
	})

	t.Run("full disk", func(t *testing.T) {
		dir := hstFullDisk(t, "1m")
		r := startHstRig(t, dir)
		const original = "original contents\n"
		for _, name := range []string{"unloaded.txt", "loaded.txt", "saved.txt"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(original), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r.Exec(t, `vim.cmd("edit loaded.txt") vim.cmd("edit saved.txt") vim.cmd("edit a.txt")`)
		big := strings.Repeat("x", 2<<20) + "\n"
		r.Exec(t, `vim.api.nvim_buf_set_lines(vim.fn.bufnr("saved.txt"), 0, -1, false, { ... })`, strings.TrimSuffix(big, "\n"))
		hstFill(t, dir)
		before := fltDirList(dir)
		for _, tc := range []struct{ name, method, params string }{
			{"writeFile, not loaded", "writeFile", fmt.Sprintf(`{"path":"unloaded.txt","content":%q}`, big)},
			{"writeFile, through the buffer", "writeFile", fmt.Sprintf(`{"path":"loaded.txt","content":%q}`, big)},
			{"saveDocument", "tools/call", `{"name":"saveDocument","arguments":{"filePath":"saved.txt"}}`},
		} {
			res := r.call(t, tc.method, tc.params, 30*time.Second, "")
			if res == nil {
				t.Fatalf("%s: no answer", tc.name)
			}
			text, isErr := fltResultText(res)
			t.Logf("%s on a full disk: %.200q", tc.name, text)
			if !isErr {
				t.Errorf("%s: reported success on a full disk", tc.name)
			}
			if text == "" {
				t.Errorf("%s: an error without a message", tc.name)
			}
		}
		for _, name := range []string{"unloaded.txt", "loaded.txt", "saved.txt"} {
			if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != original {
				t.Errorf("%s is now %d bytes %.40q…, want it as it was", name, len(b), b)
			}
		}
		if after := fltDirList(dir); after != before {
			t.Errorf("files left behind: %q, was %q", after, before)
		}
		var mod bool
		r.Eval(t, `return vim.bo[vim.fn.bufnr("saved.txt")].modified`, &mod)
		if !mod {
			t.Error("the unsaved buffer lost its modified flag: the user would think it saved")
		}
	})

	t.Run("two writers", func(t *testing.T) {
		r := startHstRig(t, "")
		c2 := dialIDE(t, r.st.Port, readLock(t, r.st.LockFile).AuthToken)
		c2.handshake(t, 4343)
		contents := [2]string{strings.Repeat("A", 1<<20), strings.Repeat("B", 1<<20)}
		for round := 0; round < 3; round++ {
			var wg sync.WaitGroup
			for i, c := range []*ideClient{r.c, c2} {
				wg.Add(1)
				go func(i int, c *ideClient) {
					defer wg.Done()
					params, _ := json.Marshal(map[string]string{"path": "race.txt", "content": contents[i]})
					_ = c.c.WriteMessage(1, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"writeFile","params":%s}`, 9000+round, params)))
				}(i, c)
			}
			wg.Wait()
			r.c.recv(t, 9000+round)
			c2.recv(t, 9000+round)
			b, _ := os.ReadFile(filepath.Join(r.dir, "race.txt"))
			if string(b) != contents[0] && string(b) != contents[1] {
				t.Fatalf("round %d: race.txt is neither version (%d bytes)", round, len(b))
			}
		}
		if left := fltDirList(r.dir); strings.Contains(left, ".tmp") {
			t.Errorf("temporary files left: %s", left)
		}
	})
}
