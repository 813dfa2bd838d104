package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/app"
	"github.com/nvim-claude/nvim-claude/edtools/discovery"
)

// The hook entry point's limits: the CLI waits for a hook, so ours gives
// up quickly, and reads no more of its input than a digest needs.
const (
	hookDeadline = 3 * time.Second
	// hookMaxInput bounds the hook input read: a PreToolUse for a large
	// Write carries the whole file, of which only the tool's name is sent.
	hookMaxInput = 8 << 20
	// hookMaxField bounds each text sent on.
	hookMaxField = 500
	// hookMethod is sessions.HookMethod (the e2e tests pin the pair).
	hookMethod = "nvim-claude/hook"
)

// runHook is `nvim-claude hook <event> <session>`: a hook of the Claude
// CLI that :ClaudeStart launched (its --settings layer names it). It reads
// the hook's JSON on stdin and reports a digest of it to the host over the
// editor tools' private socket, with the token from the 0600 discovery file
// beside it. It never holds the CLI up or changes what it does: it prints
// nothing on stdout, gives up after a few seconds, and exits 0 whatever
// happens (a failure is said on stderr, which the CLI only logs).
func runHook(args []string, stdin io.Reader, stderr io.Writer, getenv func(string) string) int {
	if err := hook(args, stdin, getenv); err != nil {
		fmt.Fprintln(stderr, "nvim-claude hook:", err)
	}
	return 0
}

func hook(args []string, stdin io.Reader, getenv func(string) string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: nvim-claude hook <event> <session>")
	}
	sock := getenv(discovery.EnvSocket)
	if sock == "" {
		return fmt.Errorf("%s is not set (only the CLI :ClaudeStart launches reports to Neovim)", discovery.EnvSocket)
	}
	token := getenv(discovery.EnvToken)
	if token == "" {
		var err error
		if token, err = discovery.Token(sock); err != nil {
			return err
		}
	}
	call := digest(args[0], args[1], stdin)
	conn, err := net.DialTimeout("unix", sock, hookDeadline)
	if err != nil {
		return fmt.Errorf("cannot reach Neovim: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hookDeadline))
	hello, _ := json.Marshal(map[string]string{"token": token})
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": hookMethod, "params": call})
	if _, err := conn.Write(append(append(append(hello, '\n'), req...), '\n')); err != nil {
		return fmt.Errorf("cannot talk to Neovim: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(conn, 64<<10)).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("no answer from Neovim: %w", err)
	}
	var reply struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &reply) == nil && reply.Error != nil {
		return fmt.Errorf("the host refused the %s hook: %s", args[0], reply.Error.Message)
	}
	return nil
}

// digest is what the host needs of the hook's input: never a file's
// contents; a PermissionRequest's command, up to the sessions feature's cap (app.HookRequest). Input that is too large or not JSON still
// reports the event.
func digest(event, session string, stdin io.Reader) map[string]string {
	out := map[string]string{"event": event, "session": session}
	b, err := io.ReadAll(io.LimitReader(stdin, hookMaxInput+1))
	if err != nil || len(b) > hookMaxInput {
		return out
	}
	var in struct {
		SessionID        string          `json:"session_id"`
		Cwd              string          `json:"cwd"`
		ToolName         string          `json:"tool_name"`
		ToolInput        json.RawMessage `json:"tool_input"`
		Message          string          `json:"message"`
		NotificationType string          `json:"notification_type"`
	}
	if json.Unmarshal(b, &in) != nil {
		return out
	}
	for k, v := range map[string]string{"claude_session": in.SessionID, "cwd": in.Cwd, "tool": in.ToolName,
		"message": in.Message, "notification_type": in.NotificationType} {
		if v != "" {
			out[k] = clip(v)
		}
	}
	if event == "PermissionRequest" && len(in.ToolInput) > 0 {
		// what the user is asked to allow, for the sessions panel and
		// :ClaudeAnswer: the command (its start and its end when long),
		// a file's name — never its contents
		text, desc, lines, cut := app.HookRequest(in.ToolInput)
		if text != "" {
			out["input"] = text
			out["input_lines"] = strconv.Itoa(lines)
		}
		if cut {
			out["input_cut"] = "1"
		}
		if desc != "" {
			out["description"] = clip(desc)
		}
	}
	return out
}

func clip(s string) string {
	if len(s) <= hookMaxField {
		return s
	}
	return strings.ToValidUTF8(s[:hookMaxField], "") + "…"
}
