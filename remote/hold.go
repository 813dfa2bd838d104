package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hold is the far side's hold on a session: one channel (an ssh session,
// or an exec into the container) that carries the remote forward, writes
// the lock where the far CLI looks for it and keeps it there exactly as
// long as the channel lives. The lock's pid is the far shell holding it —
// a live process on the far side, which the CLI requires of a lock — and
// the far shell removes the lock when its stdin closes or it is hung up
// on: on Close, on the ssh client's death, on a dropped connection.
type Hold struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan struct{} // closed when the channel ended
	err  error         // why it ended; read after done

	closeOnce sync.Once
}

// holdScript is the far shell's part: write the lock (its pid set to the
// shell's own), say ready, wait for stdin to close or a hang-up, remove
// the lock.
func (t Target) holdScript(port int) string {
	p := strconv.Itoa(t.farPort(port))
	// s: the far sessions' settings layers (WriteSettings), which go with
	// the lock: without the channel their hooks reach nothing.
	return "umask 077 && d=" + t.lockDir() + ` && mkdir -p "$d" && chmod 700 "$d" && ` +
		`t="$d/.` + p + `.lock.$$" && f="$d/` + p + `.lock" && s=` + t.settingsDir(port) + ` && ` +
		`trap 'rm -f "$t" "$f"; rm -rf "$s"' EXIT && trap 'rm -f "$t" "$f"; rm -rf "$s"; ${c:+kill $c}; exit 1' HUP INT TERM PIPE && ` +
		`head -n 1 | sed "s/^{\"pid\":0,/{\"pid\":$$,/" > "$t" && mv -f "$t" "$f" && echo ready && ` +
		// The wait is in the background so that a hang-up's trap runs at
		// once (a shell runs traps only between commands); the reader gets
		// stdin through fd 3, as a background command's own stdin is
		// /dev/null.
		`exec 3<&0 && { cat <&3 >/dev/null 3<&- & c=$!; exec 3<&-; wait $c; }`
}

// Start opens the hold for a local server on port: lock is the lock file's
// JSON on one line, beginning {"pid":0, (the far shell puts its pid
// there). It returns once the lock is in place (or the channel failed);
// ctx bounds only that wait. The hold then lives until Close.
func (t Target) Start(ctx context.Context, port int, lock []byte) (*Hold, error) {
	if !strings.HasPrefix(string(lock), `{"pid":0,`) || strings.ContainsRune(string(lock), '\n') {
		return nil, fmt.Errorf("%w: the lock must be one line beginning {\"pid\":0,", ErrTarget)
	}
	fw := 0
	if t.Kind == SSH {
		fw = port
	}
	var argv []string
	var err error
	if t.Kind == SSH {
		argv, err = t.Exec(nil, nil, false, fw)
		if err == nil {
			argv[len(argv)-1] = t.holdScript(port)
		}
	} else {
		argv, err = t.Exec([]string{"sh", "-c", t.holdScript(port)}, nil, false, 0)
	}
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// A child of the engine (a ProxyCommand) may keep its output open
	// after the engine ended: the hold ends with the engine regardless.
	cmd.WaitDelay = 2 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limited{w: &stderr, n: 2000}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("remote: start %s: %w", argv[0], err)
	}
	h := &Hold{cmd: cmd, in: in, done: make(chan struct{})}
	ready := make(chan bool, 1)
	// The reader owns stdout and ends with the channel; the waiter owns
	// the process and ends when it exits (Close makes it exit).
	go func() {
		r := bufio.NewReader(out)
		line, err := r.ReadString('\n')
		ready <- err == nil && strings.TrimSpace(line) == "ready"
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() {
		err := cmd.Wait()
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			err = fmt.Errorf("remote: %s %s ended: %w: %s", t.Kind, t.Dest, err, msg)
		} else {
			err = fmt.Errorf("remote: %s %s ended", t.Kind, t.Dest)
		}
		h.err = err
		close(h.done)
	}()
	if _, err := in.Write(append(append([]byte{}, lock...), '\n')); err != nil {
		h.Close()
		return nil, fmt.Errorf("remote: send the lock: %w (%v)", err, h.Err())
	}
	select {
	case ok := <-ready:
		if !ok {
			h.Close()
			return nil, fmt.Errorf("remote: the far side did not take the lock: %w", h.Err())
		}
		return h, nil
	case <-ctx.Done():
		h.Close()
		return nil, fmt.Errorf("remote: %s %s: %w", t.Kind, t.Dest, ctx.Err())
	}
}

// Pid is the local engine's process id (ssh, docker …).
func (h *Hold) Pid() int { return h.cmd.Process.Pid }

// Argv is the hold's command line.
func (h *Hold) Argv() []string { return h.cmd.Args }

// Kill kills the local engine (ssh, docker …) as a crash would: the far
// side then removes the lock on the hang-up.
func (h *Hold) Kill() error { return h.cmd.Process.Kill() }

// Done is closed when the channel ends (Close, or the far side or the
// connection went away).
func (h *Hold) Done() <-chan struct{} { return h.done }

// Err is why the channel ended (nil while it lives).
func (h *Hold) Err() error {
	select {
	case <-h.done:
		return h.err
	default:
		return nil
	}
}

// Close ends the hold: stdin closes, the far shell removes the lock and
// exits, and the local engine ends with it; one that does not end soon is
// killed (the far side then removes the lock on the hang-up).
func (h *Hold) Close() {
	h.closeOnce.Do(func() {
		_ = h.in.Close()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.done
		}
	})
}

// limited keeps the first n bytes written to it.
type limited struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

func (l *limited) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n > 0 {
		q := p
		if len(q) > l.n {
			q = q[:l.n]
		}
		l.n -= len(q)
		_, _ = l.w.Write(q)
	}
	return len(p), nil
}
