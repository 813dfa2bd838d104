package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// hookMaxInput bounds the hook input read: a PreToolUse for a large
	// Write carries the whole file, of which only the tool's name is sent.
	hookMaxInput = 8 << 20
	// hookMaxField bounds each text sent on.
	hookMaxField = 500
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

// hookInput is what the hook reads of the CLI's hook input.
type hookInput struct {
	SessionID        string          `json:"session_id"`
	Cwd              string          `json:"cwd"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	Message          string          `json:"message"`
	NotificationType string          `json:"notification_type"`
	Suggestions      json.RawMessage `json:"permission_suggestions"`
}

// digest is what the host needs of the hook's input: never a file's
// contents; a PermissionRequest's command, up to the sessions feature's cap
// (app.HookRequest), and a plan to approve (up to app.HookPlanMax); a
// digest of the tool's input, which tells the PostToolUse of an answered
// call. Input that is too large or not JSON still reports the event. It
// also returns the input as read, for the decision the hook may print.
func digest(event, session string, stdin io.Reader) (map[string]string, hookInput) {
	out := map[string]string{"event": event, "session": session}
	var in hookInput
	b, err := io.ReadAll(io.LimitReader(stdin, hookMaxInput+1))
	if err != nil || len(b) > hookMaxInput {
		return out, hookInput{}
	}
	if json.Unmarshal(b, &in) != nil {
		return out, hookInput{}
	}
	for k, v := range map[string]string{"claude_session": in.SessionID, "cwd": in.Cwd, "tool": in.ToolName,
		"message": in.Message, "notification_type": in.NotificationType} {
		if v != "" {
			out[k] = clip(v)
		}
	}
	if (event == "PermissionRequest" || event == "PostToolUse") && len(in.ToolInput) > 0 {
		sum := sha256.Sum256(in.ToolInput)
		out["input_key"] = hex.EncodeToString(sum[:8])
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
		var plan struct {
			Plan string `json:"plan"`
		}
		if in.ToolName == app.HookPlanTool && json.Unmarshal(in.ToolInput, &plan) == nil && plan.Plan != "" {
			setPlan(out, plan.Plan)
		}
	}
	if event == "PostToolUse" && planWriters[in.ToolName] {
		// The CLI's plan mode has the model write its plan to a file of
		// the CLI's plans directory, and ExitPlanMode then carries no
		// plan (checked against the real CLI): the plan as written goes
		// to the host, for the plan's approval.
		var f struct {
			Path string `json:"file_path"`
		}
		if json.Unmarshal(in.ToolInput, &f) == nil {
			if text, ok := readPlan(f.Path); ok {
				setPlan(out, text)
			}
		}
	}
	return out, in
}

// planWriters are the tools that write a plan file.
var planWriters = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true}

// setPlan puts a plan in the digest, cut at the sessions feature's cap.
func setPlan(out map[string]string, plan string) {
	if len(plan) > app.HookPlanMax {
		plan = strings.ToValidUTF8(plan[:app.HookPlanMax], "")
		out["plan_cut"] = "1"
	}
	out["plan"] = plan
}

// readPlan reads the plan file path: a regular file named *.md in a
// directory named plans (the CLI's plans directory), at most a little more
// than the plan cap; anything else is no plan.
func readPlan(path string) (string, bool) {
	if !filepath.IsAbs(path) || filepath.Ext(path) != ".md" || filepath.Base(filepath.Dir(path)) != "plans" {
		return "", false
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, app.HookPlanMax+1))
	if err != nil {
		return "", false
	}
	return string(b), true
}

func clip(s string) string {
	if len(s) <= hookMaxField {
		return s
	}
	return strings.ToValidUTF8(s[:hookMaxField], "") + "…"
}
