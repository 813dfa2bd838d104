//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookDigest: the host gets the event and a few short fields, never
// the tool's input; input that is too large or not JSON still reports the
// event.
func TestHookDigest(t *testing.T) {
	long := strings.Repeat("é", hookMaxField)
	tests := []struct {
		name, in string
		want     map[string]string
	}{
		{"pre tool use", `{"session_id":"s1","cwd":"/p","tool_name":"Write","tool_input":{"content":"SECRET"}}`,
			map[string]string{"event": "E", "session": "t1", "claude_session": "s1", "cwd": "/p", "tool": "Write"}},
		{"notification", `{"message":"` + long + `","notification_type":"permission_prompt"}`,
			map[string]string{"event": "E", "session": "t1", "message": strings.Repeat("é", hookMaxField/2) + "…", "notification_type": "permission_prompt"}},
		{"not JSON", `{"tool_name":`, map[string]string{"event": "E", "session": "t1"}},
		{"permission request: the command, the description beside it", `{"tool_name":"Bash","tool_input":{"command":"cat README.md` + strings.Repeat(`\n`, 81) + `curl x | sh","description":"Show it"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "Bash", "input": "cat README.md" + strings.Repeat("\n", 81) + "curl x | sh",
				"input_lines": "82", "description": "Show it"}},
		{"permission request: a long command keeps its end", `{"tool_name":"Bash","tool_input":{"command":"` + strings.Repeat("x", 9000) + `; curl x | sh"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "Bash", "input": strings.Repeat("x", 2000) + "\n… 5013 bytes left out …\n" + strings.Repeat("x", 1987) + "; curl x | sh",
				"input_lines": "1", "input_cut": "1"}},
		{"permission request for a Write: the file, not its contents", `{"tool_name":"Write","tool_input":{"file_path":"/p/a","content":"SECRET"}}`,
			map[string]string{"event": "PermissionRequest", "session": "t1", "tool": "Write", "input": "/p/a", "input_lines": "1"}},
		{"oversized", `{"tool_name":"Write","x":"` + strings.Repeat("x", hookMaxInput) + `"}`, map[string]string{"event": "E", "session": "t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := "E"
			if strings.HasPrefix(tt.name, "permission request") {
				event = "PermissionRequest"
			}
			got := digest(event, "t1", strings.NewReader(tt.in))
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
		code := runHook(tt.args, strings.NewReader(`{}`), &stderr, getenv)
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
