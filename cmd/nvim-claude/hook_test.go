//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nvim-claude/nvim-claude/app"
)

// TestHookDigest: the host gets the event and a few short fields, never
// the tool's input; input that is too large or not JSON still reports the
// event.
func TestHookDigest(t *testing.T) {
	long := strings.Repeat("é", 500)
	planText, _, _, _ := app.HookRequest(json.RawMessage(`{"plan":"` + strings.Repeat("p", app.HookPlanMax+1) + `"}`))
	tests := []struct {
		name, in string
		want     map[string]string
	}{
		{"pre tool use", `{"session_id":"s1","cwd":"/p","tool_name":"Write","tool_input":{"content":"SECRET"}}`,
			map[string]string{"event": "E", "session": "t1", "claude_session": "s1", "cwd": "/p", "tool": "Write"}},
		{"notification", `{"message":"` + long + `","notification_type":"permission_prompt"}`,
			map[string]string{"event": "E", "session": "t1", "message": strings.Repeat("é", 500/2) + "…", "notification_type": "permission_prompt"}},
		{"not JSON", `{"tool_name":`, map[string]string{"event": "E", "session": "t1"}},
		{"permission request: the command, the description beside it", `{"tool_name":"Bash","tool_input":{"command":"cat README.md` + strings.Repeat(`\n`, 81) + `curl x | sh","description":"Show it"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "Bash", "input": "cat README.md" + strings.Repeat("\n", 81) + "curl x | sh",
				"input_lines": "82", "description": "Show it"}},
		{"permission request: a long command keeps its end", `{"tool_name":"Bash","tool_input":{"command":"` + strings.Repeat("x", 9000) + `; curl x | sh"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "Bash", "input": strings.Repeat("x", 2000) + "\n… 5013 bytes left out …\n" + strings.Repeat("x", 1987) + "; curl x | sh",
				"input_lines": "1", "input_cut": "1"}},
		{"permission request for a Write: the file, not its contents", `{"tool_name":"Write","tool_input":{"file_path":"/p/a","content":"SECRET"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "Write", "input": "/p/a", "input_lines": "1"}},
		{"permission request for a plan: the plan, cut at its cap", `{"tool_name":"ExitPlanMode","tool_input":{"plan":"` + strings.Repeat("p", app.HookPlanMax+1) + `"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "ExitPlanMode", "input": planText,
				"input_lines": "1", "input_cut": "1", "plan": strings.Repeat("p", app.HookPlanMax), "plan_cut": "1"}},
		{"oversized", `{"tool_name":"Write","x":"` + strings.Repeat("x", app.HookMaxInput) + `"}`, map[string]string{"event": "E", "session": "t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := "E"
			if strings.HasPrefix(tt.name, "permission request") {
				event = "PermissionRequest"
			}
			got, _ := digest(event, "t1", strings.NewReader(tt.in))
			if event == "PermissionRequest" && len(got["input_key"]) != 16 {
				t.Fatalf("no input digest: %v", got)
			}
			delete(got, "input_key")
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Fatalf("digest\n %s\nwant\n %s", g, w)
			}
		})
	}
}

// TestHookNeverFails: whatever goes wrong, the hook exits 0 and prints
// nothing (runHook has no stdout to write to); what went wrong is on
// stderr. A host that refuses
// the token (closes the connection) ends the hook at once.
func TestHookNeverFails(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "h.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
		c.Close() // a wrong token: closed unanswered
	}()
	for _, tt := range []struct {
		name   string
		args   []string
		env    map[string]string
		stderr string
	}{
		{"usage", []string{"Stop"}, nil, "usage"},
		{"no socket", []string{"Stop", "t1"}, nil, "NVIM_CLAUDE_MCP_SOCKET is not set"},
		{"no discovery file", []string{"Stop", "t1"}, map[string]string{"NVIM_CLAUDE_MCP_SOCKET": sock}, "no discovery file"},
		{"refused", []string{"Stop", "t1"}, map[string]string{"NVIM_CLAUDE_MCP_SOCKET": sock, "NVIM_CLAUDE_MCP_TOKEN": "guess"}, "no answer from Neovim"},
		{"gone", []string{"Stop", "t1"}, map[string]string{"NVIM_CLAUDE_MCP_SOCKET": sock + ".gone", "NVIM_CLAUDE_MCP_TOKEN": "x"}, "cannot reach Neovim"},
	} {
		var stderr bytes.Buffer
		getenv := func(k string) string { return tt.env[k] }
		code := runHook(tt.args, strings.NewReader(`{}`), io.Discard, &stderr, getenv, nil)
		if code != 0 || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("%s: code %d, stderr %q (want %q)", tt.name, code, stderr.String(), tt.stderr)
		}
	}
	select {
	case line := <-got:
		if line != `{"token":"guess"}`+"\n" {
			t.Fatalf("hello line %q", line)
		}
	default:
		t.Fatal("the hook never connected")
	}
}

// The plan file the model writes in plan mode goes to the host with the
// PostToolUse of its Write or Edit (ExitPlanMode then carries no plan);
// any other file, a link, or a file of another directory does not.
func TestHookDigestPlanFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plans")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "brave-otter.md")
	other := filepath.Join(t.TempDir(), "notes.md")
	link := filepath.Join(dir, "link.md")
	for p, text := range map[string]string{plan: "# Plan\n1. do it\n", other: "secret"} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, event, tool, path, want string
	}{
		{"a Write of the plan file", "PostToolUse", "Write", plan, "# Plan\n1. do it\n"},
		{"an Edit of the plan file", "PostToolUse", "Edit", plan, "# Plan\n1. do it\n"},
		{"before it is written", "PreToolUse", "Write", plan, ""},
		{"another directory", "PostToolUse", "Write", other, ""},
		{"a link in the plans directory", "PostToolUse", "Write", link, ""},
		{"a relative path", "PostToolUse", "Write", "plans/brave-otter.md", ""},
		{"another tool", "PostToolUse", "Read", plan, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"tool_name": tt.tool, "tool_input": map[string]any{"file_path": tt.path, "content": "x"}})
			got, _ := digest(tt.event, "t1", bytes.NewReader(in))
			if got["plan"] != tt.want {
				t.Fatalf("plan %q, want %q", got["plan"], tt.want)
			}
		})
	}
}

// A PermissionRequest hook with "wait" holds its call until the host
// answers, and prints the CLI's decision for what the host said: nothing
// for no decision (the prompt was answered in the terminal) or a refusal;
// stopped by the CLI, it cancels its call and prints nothing. A question
// (AskUserQuestion) does not wait: it is answered in the terminal.
func TestHookWaitsForTheAnswer(t *testing.T) {
	bash := `{"session_id":"s","tool_name":"Bash","tool_input":{"command":"make test","description":"Run"},"permission_suggestions":[{"type":"addDirectories","directories":["/p"],"destination":"session"}]}`
	plan := `{"tool_name":"ExitPlanMode","tool_input":{"plan":"# Plan\n1. do it"}}`
	const cancelled = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"the CLI ended the hook"}}`
	for _, tt := range []struct {
		name, in, reply string
		args            []string
		stop            bool
		wantWait        bool
		out, next       string // stdout, and what the host read after the request
	}{
		{"allow once", bash, `{"jsonrpc":"2.0","id":1,"result":{"decision":{"behavior":"allow"}}}`, nil, false, true,
			`{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`, ""},
		{"allow for the session: a rule for exactly the command", bash, `{"jsonrpc":"2.0","id":1,"result":{"decision":{"behavior":"allow","scope":"session"}}}`, nil, false, true,
			`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make test"}],"behavior":"allow","destination":"session"}]},"hookEventName":"PermissionRequest"}}`, ""},
		{"deny with a message", bash, `{"jsonrpc":"2.0","id":1,"result":{"decision":{"behavior":"deny","message":"not now"}}}`, nil, false, true,
			`{"hookSpecificOutput":{"decision":{"behavior":"deny","interrupt":false,"message":"not now"},"hookEventName":"PermissionRequest"}}`, ""},
		{"a plan approved: its input, and the mode", plan, `{"jsonrpc":"2.0","id":1,"result":{"decision":{"behavior":"allow","mode":"acceptEdits"}}}`, nil, false, true,
			`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{"plan":"# Plan\n1. do it"},"updatedPermissions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]},"hookEventName":"PermissionRequest"}}`, ""},
		{"answered in the terminal: nothing", bash, `{"jsonrpc":"2.0","id":1,"result":{}}`, nil, false, true, "", ""},
		{"refused: nothing", bash, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`, nil, false, true, "", ""},
		{"killed by the CLI: the call is cancelled", bash, "", nil, true, true, "", cancelled},
		{"a question does not wait", `{"tool_name":"AskUserQuestion","tool_input":{"questions":[]}}`, `{"jsonrpc":"2.0","id":1,"result":{"decision":{"behavior":"allow"}}}`, nil, false, false, "", ""},
		{"without wait: nothing", bash, `{"jsonrpc":"2.0","id":1,"result":{"decision":{"behavior":"allow"}}}`, []string{"PermissionRequest", "t1"}, false, false, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "h.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			stop := make(chan os.Signal, 1)
			seen := make(chan [2]string, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				r := bufio.NewReader(c)
				_, _ = r.ReadString('\n') // hello
				req, _ := r.ReadString('\n')
				if tt.stop {
					stop <- syscall.SIGTERM
				} else {
					_, _ = c.Write([]byte(tt.reply + "\n"))
				}
				next, _ := r.ReadString('\n')
				seen <- [2]string{req, strings.TrimSpace(next)}
			}()
			args := tt.args
			if args == nil {
				args = []string{"PermissionRequest", "t1", "wait"}
			}
			var stdout, stderr bytes.Buffer
			env := map[string]string{"NVIM_CLAUDE_MCP_SOCKET": sock, "NVIM_CLAUDE_MCP_TOKEN": "tok"}
			if code := runHook(args, strings.NewReader(tt.in), &stdout, &stderr, func(k string) string { return env[k] }, stop); code != 0 {
				t.Fatalf("exit %d", code)
			}
			got := <-seen
			var req struct {
				Params map[string]string `json:"params"`
			}
			if err := json.Unmarshal([]byte(got[0]), &req); err != nil {
				t.Fatalf("request %q: %v", got[0], err)
			}
			if (req.Params["wait"] == "1") != tt.wantWait {
				t.Fatalf("wait = %q, want %v", req.Params["wait"], tt.wantWait)
			}
			if strings.TrimSpace(stdout.String()) != tt.out || got[1] != tt.next {
				t.Fatalf("stdout %q (stderr %q), after the request %q\nwant stdout %q, after %q", stdout.String(), stderr.String(), got[1], tt.out, tt.next)
			}
		})
	}
}
