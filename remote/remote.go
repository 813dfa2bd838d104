// Package remote says how to run the Claude Code CLI where Neovim is not —
// on an SSH host or in a container — on the engines users already trust
// for that: OpenSSH (its remote port forward carries the CLI's WebSocket
// back to our loopback server) and the container runtime's own exec
// (docker, podman, the devcontainer CLI). It builds their command lines
// and writes and removes the far side's lock file over the same channel,
// and each far terminal session's settings layer (the sessions feature's
// HTTP hooks to the far port, which the forward carries back).
//
// It has no network layer of its own, and neither the lock's auth token
// nor the hooks' token ever appears on a command line: both travel on the
// channel's stdin, into private files.
// Every far command runs under a caller's context; nothing here blocks
// Neovim (app runs it off the main loop).
package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/display"
)

// Kinds of far side.
const (
	Local        = ""
	SSH          = "ssh"
	Docker       = "docker"
	Podman       = "podman"
	Devcontainer = "devcontainer"
)

// ErrTarget is wrapped by every refusal of a Target's settings.
var ErrTarget = errors.New("remote target")

// Target is where the CLI runs.
type Target struct {
	// Kind is one of the kinds above ("" runs the CLI locally).
	Kind string
	// Dest is the SSH destination (user@host, or a Host of ssh_config),
	// the container's name (docker, podman), or the local workspace
	// folder the devcontainer CLI finds its configuration in.
	Dest string
	// Dir is the directory the CLI runs in on the far side ("" leaves the
	// far login's default).
	Dir string
	// ConfigDir is the far CLI's CLAUDE_CONFIG_DIR ("" leaves the far
	// default, $CLAUDE_CONFIG_DIR or ~/.claude there).
	ConfigDir string
	// Bin is the engine's program ("" is ssh, docker, podman or
	// devcontainer); Claude is the far CLI ("" is claude).
	Bin, Claude string
	// Options go to the engine before the destination (ssh -o …, -p,
	// -i; docker exec --user …).
	Options []string
	// FarPort is the far loopback port the CLI connects to (0: the same
	// as the local server's). Over SSH it is the remote forward's port.
	FarPort int
}

// Validate refuses settings a command line could misread: a destination
// that starts with "-" would be an option to the engine.
func (t Target) Validate() error {
	switch t.Kind {
	case Local:
		return nil
	case SSH, Docker, Podman, Devcontainer:
	default:
		return fmt.Errorf("%w: unknown kind %q (ssh, docker, podman or devcontainer)", ErrTarget, t.Kind)
	}
	if t.Dest == "" {
		return fmt.Errorf("%w: %s needs a destination", ErrTarget, t.Kind)
	}
	if strings.HasPrefix(t.Dest, "-") || strings.ContainsAny(t.Dest, "\x00\n\r") {
		return fmt.Errorf("%w: destination %q is not a host or container name", ErrTarget, t.Dest)
	}
	if strings.ContainsAny(t.Dir+t.ConfigDir, "\x00\n\r") {
		return fmt.Errorf("%w: a far directory holds a control character", ErrTarget)
	}
	if t.FarPort < 0 || t.FarPort > 65535 {
		return fmt.Errorf("%w: far port %d", ErrTarget, t.FarPort)
	}
	return nil
}

// Remote reports whether the CLI runs elsewhere.
func (t Target) Remote() bool { return t.Kind != Local }

func (t Target) bin() string {
	if t.Bin != "" {
		return t.Bin
	}
	return t.Kind
}

func (t Target) claude() string {
	if t.Claude != "" {
		return t.Claude
	}
	return "claude"
}

// farPort is the port the far CLI connects to for a local server on port.
func (t Target) farPort(port int) int {
	if t.FarPort != 0 {
		return t.FarPort
	}
	return port
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// script is the far shell command running argv in Dir with env.
func (t Target) script(argv []string, env map[string]string) string {
	var b strings.Builder
	if t.Dir != "" {
		b.WriteString("cd " + Quote(t.Dir) + " && ")
	}
	b.WriteString("exec ")
	if len(env) > 0 {
		b.WriteString("env ")
		for _, k := range sortedKeys(env) {
			b.WriteString(Quote(k+"="+env[k]) + " ")
		}
	}
	b.WriteString(quoteAll(argv))
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Exec is the local command line that runs argv on the far side, in Dir,
// with env (no secrets: a command line is visible to every local user).
// tty asks for a terminal (the CLI's TUI); without one stdin and stdout
// are a clean byte stream (stream-json, the lock). forward adds the SSH
// remote forward of the far port to the local server's port (0: none).
func (t Target) Exec(argv []string, env map[string]string, tty bool, forward int) ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if !t.Remote() {
		return nil, fmt.Errorf("%w: the CLI runs locally", ErrTarget)
	}
	out := []string{t.bin()}
	switch t.Kind {
	case SSH:
		if tty {
			out = append(out, "-t")
		} else {
			out = append(out, "-T")
		}
		if forward > 0 {
			// ExitOnForwardFailure: a far port already taken fails the
			// session instead of leaving a CLI that reaches nothing.
			out = append(out, "-o", "ExitOnForwardFailure=yes",
				"-R", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", t.farPort(forward), forward))
		}
		out = append(out, t.Options...)
		if !tty {
			// No terminal to ask a password or a passphrase on: fail at
			// once (keys or an agent do). After the user's options, as ssh
			// takes the first value of each: theirs win.
			out = append(out, "-o", "BatchMode=yes")
		}
		if forward > 0 {
			// A connection of its own, never a ControlMaster's: a forward
			// asked through a master outlives its client, and must end
			// with the hold.
			out = append(out, "-o", "ControlPath=none")
		}
		// "--" ends ssh's options; the far command is one string for the
		// far login shell.
		return append(out, "--", t.Dest, t.script(argv, env)), nil
	case Docker, Podman:
		out = append(out, "exec", "-i")
		if tty {
			out = append(out, "-t")
		}
		if t.Dir != "" {
			out = append(out, "-w", t.Dir)
		}
		for _, k := range sortedKeys(env) {
			out = append(out, "-e", k+"="+env[k])
		}
		out = append(out, t.Options...)
		return append(append(out, "--", t.Dest), argv...), nil
	default: // Devcontainer: its exec has no working-directory flag
		out = append(out, "exec", "--workspace-folder", t.Dest)
		out = append(out, t.Options...)
		return append(out, "sh", "-c", t.script(argv, env)), nil
	}
}

// Env is the far CLI's environment for a local server on port.
func (t Target) Env(port int) map[string]string {
	env := map[string]string{
		"CLAUDE_CODE_SSE_PORT":   strconv.Itoa(t.farPort(port)),
		"ENABLE_IDE_INTEGRATION": "true",
	}
	if t.ConfigDir != "" {
		env["CLAUDE_CONFIG_DIR"] = t.ConfigDir
	}
	return env
}

// Terminal is the command line of the CLI's TUI on the far side, connected
// to the local server on port (args follow claude). The forward is the
// Hold's, which lives as long as the server: a restarted CLI finds it.
func (t Target) Terminal(port int, args []string) ([]string, error) {
	return t.Exec(append([]string{t.claude()}, args...), t.Env(port), true, 0)
}

// lockDir is the far shell's expression of the CLI's lock directory.
func (t Target) lockDir() string {
	if t.ConfigDir != "" {
		return Quote(t.ConfigDir) + "/ide"
	}
	return `"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/ide"`
}

// LockPath is the far lock's path as the far shell spells it.
func (t Target) LockPath(port int) string {
	return t.lockDir() + "/" + strconv.Itoa(t.farPort(port)) + ".lock"
}

// run runs a far shell script with stdin; the far side's error output
// comes back in the error.
func (t Target) run(ctx context.Context, script string, stdin []byte) ([]byte, error) {
	var argv []string
	var err error
	if t.Kind == SSH {
		// The script is the far login shell's command line as it is.
		argv, err = t.Exec(nil, nil, false, 0)
		if err == nil {
			argv[len(argv)-1] = script
		}
	} else {
		argv, err = t.Exec([]string{"sh", "-c", script}, nil, false, 0)
	}
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 2 * time.Second // an engine's child holding the output open
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500]
		}
		return nil, fmt.Errorf("remote: %s %s: %w: %s", t.Kind, t.Dest, err, msg)
	}
	return stdout.Bytes(), nil
}

// WriteLock writes the lock file (its JSON, with the auth token) where the
// far CLI looks for it, for a local server on port: through the channel's
// stdin, into a private directory, renamed into place so the CLI never
// reads half of it.
func (t Target) WriteLock(ctx context.Context, port int, lock []byte) error {
	p := strconv.Itoa(t.farPort(port))
	script := "umask 077 && d=" + t.lockDir() + ` && mkdir -p "$d" && chmod 700 "$d" && ` +
		`t="$d/.` + p + `.lock.$$" && cat > "$t" && mv -f "$t" "$d/` + p + `.lock" || { rm -f "$t"; exit 1; }`
	_, err := t.run(ctx, script, lock)
	return err
}

// settingsDir is the far shell's expression of the private directory of
// the far sessions' settings layers for a local server on port: beside the
// lock, named by the far port (the CLI reads only *.lock there), removed
// with the lock when the hold ends.
func (t Target) settingsDir(port int) string {
	return t.lockDir() + "/nvim-claude-" + strconv.Itoa(t.farPort(port))
}

// settingsName is the file name of session id's far settings layer: the
// id is our own (t1, t2 …), and anything else is refused, as it is part
// of a far shell's script.
func settingsName(id string) (string, error) {
	if id == "" || len(id) > 40 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return "", fmt.Errorf("%w: session id %q", ErrTarget, id)
	}
	return id + ".json", nil
}

// WriteSettings writes session id's settings layer (the CLI's --settings
// JSON: its HTTP hooks, whose token it carries) to a private file on the
// far side, for a local server on port, and returns the file's far path.
// As the lock, it travels on the channel's stdin, never on a command
// line, into a 0700 directory, and is renamed into place whole; the hold
// removes the directory when it ends (RemoveSettings removes one file
// before that).
func (t Target) WriteSettings(ctx context.Context, port int, id string, layer []byte) (string, error) {
	name, err := settingsName(id)
	if err != nil {
		return "", err
	}
	script := "umask 077 && d=" + t.settingsDir(port) + ` && mkdir -p "$d" && chmod 700 "$d" && d=$(cd "$d" && pwd) && ` +
		`t="$d/.` + name + `.$$" && cat > "$t" && mv -f "$t" "$d/` + name + `" && printf '%s\n' "$d/` + name + `" || { rm -f "$t"; exit 1; }`
	out, err := t.run(ctx, script, layer)
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(string(out))
	if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/"+name) || strings.ContainsAny(p, "\x00\n\r") {
		return "", fmt.Errorf("remote: the far side wrote the settings layer at %q, not an absolute path", display.Line(p, 200))
	}
	return p, nil
}

// RemoveSettings removes session id's far settings layer (its CLI ended).
func (t Target) RemoveSettings(ctx context.Context, port int, id string) error {
	name, err := settingsName(id)
	if err != nil {
		return err
	}
	_, err = t.run(ctx, "rm -f "+t.settingsDir(port)+"/"+name, nil)
	return err
}

// RemoveLock removes the far lock of a local server on port.
func (t Target) RemoveLock(ctx context.Context, port int) error {
	_, err := t.run(ctx, "rm -f "+t.LockPath(port), nil)
	return err
}

// Version is the far CLI's `claude --version` output (its first line).
func (t Target) Version(ctx context.Context) (string, error) {
	out, err := t.run(ctx, t.script([]string{t.claude(), "--version"}, nil), nil)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}

// ReadFile reads a far file (a transcript) through the channel, at most
// max bytes.
func (t Target) ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	out, err := t.run(ctx, "head -c "+strconv.FormatInt(max, 10)+" -- "+Quote(path), nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}
