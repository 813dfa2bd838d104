package remote

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestTerminalArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Target
		want []string
	}{
		{"ssh", Target{Kind: SSH, Dest: "me@box", Dir: "/workspaces/app"}, []string{
			"ssh", "-t", "--", "me@box",
			"cd /workspaces/app && exec env CLAUDE_CODE_SSE_PORT=4000 ENABLE_IDE_INTEGRATION=true claude --model x",
		}},
		{"ssh far port, options, config dir, odd dir", Target{Kind: SSH, Dest: "box", Dir: "/w/it's", FarPort: 5000,
			ConfigDir: "/c", Options: []string{"-p", "2222"}}, []string{
			"ssh", "-t", "-p", "2222", "--", "box",
			`cd '/w/it'\''s' && exec env CLAUDE_CODE_SSE_PORT=5000 CLAUDE_CONFIG_DIR=/c ENABLE_IDE_INTEGRATION=true claude --model x`,
		}},
		{"docker", Target{Kind: Docker, Dest: "app-1", Dir: "/workspaces/app"}, []string{
			"docker", "exec", "-i", "-t", "-w", "/workspaces/app", "-e", "CLAUDE_CODE_SSE_PORT=4000",
			"-e", "ENABLE_IDE_INTEGRATION=true", "--", "app-1", "claude", "--model", "x",
		}},
		{"podman", Target{Kind: Podman, Dest: "app", Options: []string{"--user", "dev"}}, []string{
			"podman", "exec", "-i", "-t", "-e", "CLAUDE_CODE_SSE_PORT=4000",
			"-e", "ENABLE_IDE_INTEGRATION=true", "--user", "dev", "--", "app", "claude", "--model", "x",
		}},
		{"devcontainer", Target{Kind: Devcontainer, Dest: "/home/me/src/app", Dir: "/workspaces/app"}, []string{
			"devcontainer", "exec", "--workspace-folder", "/home/me/src/app", "sh", "-c",
			"cd /workspaces/app && exec env CLAUDE_CODE_SSE_PORT=4000 ENABLE_IDE_INTEGRATION=true claude --model x",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.t.Terminal(4000, []string{"--model", "x"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("argv\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The hold's channel carries the forward (to the far port).
func TestForwardArgv(t *testing.T) {
	got, err := Target{Kind: SSH, Dest: "box", FarPort: 5000}.Exec([]string{"true"}, nil, false, 4000)
	want := []string{"ssh", "-T", "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:5000:127.0.0.1:4000",
		"-o", "BatchMode=yes", "-o", "ControlPath=none", "--", "box", "exec true"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("argv %q, %v; want %q", got, err, want)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []Target{
		{Kind: "rsh", Dest: "x"},
		{Kind: SSH},
		{Kind: SSH, Dest: "-oProxyCommand=touch /tmp/x"},
		{Kind: Docker, Dest: "a\nb"},
		{Kind: SSH, Dest: "h", Dir: "/a\nb"},
		{Kind: SSH, Dest: "h", FarPort: 70000},
	} {
		if _, err := tc.Terminal(1, nil); !errors.Is(err, ErrTarget) {
			t.Errorf("%+v: err = %v, want ErrTarget", tc, err)
		}
	}
	if _, err := (Target{}).Terminal(1, nil); !errors.Is(err, ErrTarget) {
		t.Errorf("a local target has no far command line: %v", err)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain/x.go": "plain/x.go", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$HOME": "'$HOME'", "a;b": "'a;b'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

// The lock (with its token) is never on a command line: the far script
// names only the port and directory, the JSON goes on stdin.
func TestLockScriptHoldsNoToken(t *testing.T) {
	tg := Target{Kind: SSH, Dest: "h", ConfigDir: "/far/cfg"}
	if got := tg.LockPath(4000); got != "/far/cfg/ide/4000.lock" {
		t.Fatalf("LockPath = %q", got)
	}
	if got := (Target{Kind: SSH, Dest: "h", FarPort: 7}).LockPath(4000); got != `"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/ide"/7.lock` {
		t.Fatalf("default LockPath = %q", got)
	}
	argv, _ := tg.Exec(nil, nil, false, 0)
	if strings.Contains(strings.Join(argv, " "), "authToken") {
		t.Fatal("token on the command line")
	}
}
