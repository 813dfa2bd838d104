package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/nvim-claude/nvim-claude/app"
	"github.com/nvim-claude/nvim-claude/edtools/discovery"
)

// The hook entry point's limits: the CLI waits for a hook, so ours gives
// up quickly (but for the PermissionRequest hook that waits for Neovim's
// answer, which the CLI does not wait for), and reads no more of its
// input than a digest needs.
const (
	hookDeadline = 3 * time.Second
	// hookMethod is sessions.HookMethod (the e2e tests pin the pair).
	hookMethod = "nvim-claude/hook"
)

// runHook is `nvim-claude hook <event> <session> [wait]`: a hook of the
// Claude CLI that :ClaudeStart launched (its --settings layer names it).
// It reads the hook's JSON on stdin and reports a digest of it to the host
// over the editor tools' private socket, with the token from the 0600
// discovery file beside it. It never holds the CLI up or changes what it
// does: it prints nothing on stdout, gives up after a few seconds, and
// exits 0 whatever happens (a failure is said on stderr, which the CLI
// only logs).
//
// A PermissionRequest hook with "wait" is the exception: the CLI shows its
// own prompt while the hook runs, and takes the first answer, the hook's
// or the user's in the terminal. This hook holds its call until the user
// answers in Neovim and then prints that decision (hookSpecificOutput); if
// the host lets it go without one (the prompt was answered in the
// terminal) it prints nothing. When the CLI kills it (the prompt was
// dismissed, or the hook's timeout ran out), stop fires: it cancels its
// call, so that Neovim drops the prompt, and prints nothing.
func runHook(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, stop <-chan os.Signal) int {
	out, err := hook(args, stdin, getenv, stop)
	if err != nil {
		fmt.Fprintln(stderr, "nvim-claude hook:", err)
	}
	if len(out) > 0 {
		_, _ = stdout.Write(append(out, '\n'))
	}
	return 0
}

func hook(args []string, stdin io.Reader, getenv func(string) string, stop <-chan os.Signal) ([]byte, error) {
	wait := len(args) == 3 && args[2] == "wait" && args[0] == "PermissionRequest"
	if len(args) != 2 && !wait {
		return nil, fmt.Errorf("usage: nvim-claude hook <event> <session> [wait]")
	}
	sock := getenv(discovery.EnvSocket)
	if sock == "" {
		return nil, fmt.Errorf("%s is not set (only the CLI :ClaudeStart launches reports to Neovim)", discovery.EnvSocket)
	}
	token := getenv(discovery.EnvToken)
	if token == "" {
		var err error
		if token, err = discovery.Token(sock); err != nil {
			return nil, err
		}
	}
	call, in := digest(args[0], args[1], stdin)
	if wait && in.ToolName != "AskUserQuestion" {
		// a question's answers are given in the terminal
		call["wait"] = "1"
	} else {
		wait = false
	}
	conn, err := net.DialTimeout("unix", sock, hookDeadline)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Neovim: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hookDeadline))
	hello, _ := json.Marshal(map[string]string{"token": token})
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": hookMethod, "params": call})
	if _, err := conn.Write(append(append(append(hello, '\n'), req...), '\n')); err != nil {
		return nil, fmt.Errorf("cannot talk to Neovim: %w", err)
	}
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	if wait {
		// no deadline: the user answers when they answer; the CLI's
		// timeout for this hook ends the wait
		_ = conn.SetReadDeadline(time.Time{})
	}
	go func() {
		line, err := bufio.NewReader(io.LimitReader(conn, 64<<10)).ReadBytes('\n')
		got <- result{line, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-stop:
		// the CLI is done with this prompt: Neovim must drop it
		_ = conn.SetWriteDeadline(time.Now().Add(hookDeadline))
		_, _ = conn.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"the CLI ended the hook"}}` + "\n"))
		return nil, nil
	}
	if r.err != nil {
		return nil, fmt.Errorf("no answer from Neovim: %w", r.err)
	}
	var reply struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.line, &reply); err != nil {
		return nil, fmt.Errorf("the host's answer: %w", err)
	}
	if reply.Error != nil {
		return nil, fmt.Errorf("the host refused the %s hook: %s", args[0], reply.Error.Message)
	}
	if !wait || len(reply.Result) == 0 {
		return nil, nil
	}
	return app.HookOutput(reply.Result, in.ToolName, in.ToolInput, in.Suggestions)
}

// digest is what the host gets of the hook's input (app.HookDigest: the
// sessions feature's rule), read from stdin up to its cap, as the
// method's parameters; and the input as read, for the decision the hook
// may print.
func digest(event, session string, stdin io.Reader) (map[string]string, app.HookInput) {
	b, err := io.ReadAll(io.LimitReader(stdin, app.HookMaxInput+1))
	if err != nil || len(b) > app.HookMaxInput {
		b = nil
	}
	call, in := app.HookDigest(event, session, b)
	out := map[string]string{}
	raw, _ := json.Marshal(call)
	_ = json.Unmarshal(raw, &out)
	return out, in
}
