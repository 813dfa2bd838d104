package kernel

import (
	"bufio"
	"context"
	_ "embed" // the kernel helper script
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// kernelHelper is the Python program that drives one Jupyter kernel for us
// (jupyter_client's KernelManager and BlockingKernelClient), speaking JSON
// lines over its stdin and stdout. One helper per kernel: a wedged kernel or
// a crashed helper takes only its own buffer's kernel with it, interrupt and
// restart need no routing, and the helper's lifetime is the kernel's. The
// cost, a Python process of some 30 MB beside each kernel, is small next to
// the kernel itself.
//
//go:embed helper.py
var kernelHelper string

// The packages the helper needs, for the messages that tell a user how to
// get them.
const (
	jupyterPackagesDebian = "python3-ipykernel python3-jupyter-client"
	jupyterPackagesPip    = "ipykernel jupyter_client"
)

// errNoJupyter explains a missing Python or Jupyter client / kernel.
type errNoJupyter struct {
	tried []string // "python: why"
}

func (e *errNoJupyter) Error() string {
	return "executeCode needs Python 3 with the Jupyter kernel packages, and none of the interpreters tried has them (" +
		strings.Join(e.tried, "; ") + "). Install them: `sudo apt-get install " + jupyterPackagesDebian +
		"` on Debian/Ubuntu, or `python3 -m pip install " + jupyterPackagesPip +
		"`; or point the execute.python option at an interpreter that has them."
}

// How long a kernel may take to start, and to stop before it is killed.
const (
	kernelStartTimeout = 60 * time.Second
	kernelStopTimeout  = 5 * time.Second
)

// helperReply is one reply line from the helper.
type helperReply struct {
	ID    int    `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Kind  string `json:"kind"`

	// start / restart
	KernelPID   int    `json:"kernel_pid"`
	Language    string `json:"language"`
	DisplayName string `json:"display_name"`

	// interrupt
	Running bool `json:"running"`

	// execute
	Status         string       `json:"status"`
	Items          []kernelItem `json:"items"`
	ExecError      *kernelError `json:"error_info"`
	ExecutionCount *int         `json:"execution_count"`
	OmittedChars   int          `json:"omitted_chars"`
	OmittedImages  int          `json:"omitted_images"`
	Elapsed        float64      `json:"elapsed"`
}

// UnmarshalJSON splits the helper's "error": a string for a failed request,
// an object (the exception) for a run.
func (r *helperReply) UnmarshalJSON(b []byte) error {
	type plain helperReply
	var raw struct {
		plain
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = helperReply(raw.plain)
	r.Error = ""
	if len(raw.Error) > 0 && raw.Error[0] == '"' {
		return json.Unmarshal(raw.Error, &r.Error)
	}
	if len(raw.Error) > 0 && raw.Error[0] == '{' {
		r.ExecError = &kernelError{}
		return json.Unmarshal(raw.Error, r.ExecError)
	}
	return nil
}

// kernelItem is one output of a run: "stream" (Name stdout/stderr),
// "result", "display" (text), or "image" (base64 PNG).
type kernelItem struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// kernelError is the exception a run raised.
type kernelError struct {
	EName     string `json:"ename"`
	EValue    string `json:"evalue"`
	Traceback string `json:"traceback"`
}

// kernelProc is one running helper and its kernel.
type kernelProc struct {
	python string
	cmd    *exec.Cmd
	stdin  io.WriteCloser

	writeMu sync.Mutex
	mu      sync.Mutex
	seq     int
	pending map[int]chan helperReply
	exited  bool

	// guarded by mu
	kernelPID   int
	language    string
	displayName string

	stderr *tailBuffer
	done   chan struct{} // closed when the helper has exited and been reaped
	ready  chan helperEvent
}

// helperEvent is the first line the helper prints.
type helperEvent struct {
	Event  string `json:"event"`
	Kind   string `json:"kind"`
	Module string `json:"module"`
	Python string `json:"python"`
	Error  string `json:"error"`
}

// startHelper runs the helper with python and waits for it to report ready.
// A Python without the Jupyter packages gives a *helperMissing error.
func startHelper(ctx context.Context, python string) (*kernelProc, error) {
	cmd := exec.Command(python, "-c", kernelHelper)
	// Its own process group: a terminal's Ctrl-C for Neovim is not for it,
	// and stop can kill the group (proc_unix.go, proc_windows.go).
	ownProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("kernel helper stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("kernel helper stdout: %w", err)
	}
	k := &kernelProc{
		python:  python,
		cmd:     cmd,
		stdin:   stdin,
		pending: map[int]chan helperReply{},
		stderr:  &tailBuffer{max: 4096},
		done:    make(chan struct{}),
		ready:   make(chan helperEvent, 1),
	}
	cmd.Stderr = k.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", python, err)
	}
	go k.read(stdout) // ends when the helper's stdout closes
	select {
	case ev, ok := <-k.ready:
		if !ok {
			<-k.done
			return nil, fmt.Errorf("%s exited before the kernel helper started: %s", python, k.stderr.String())
		}
		if ev.Event == "fatal" {
			<-k.done
			return nil, &helperMissing{python: python, module: ev.Module}
		}
		return k, nil
	case <-ctx.Done():
		k.kill()
		<-k.done
		return nil, ctx.Err()
	}
}

// helperMissing reports a Python without a package the helper needs.
type helperMissing struct {
	python string
	module string
}

func (e *helperMissing) Error() string {
	return fmt.Sprintf("%s has no module %s", e.python, e.module)
}

// read dispatches the helper's lines; at EOF it reaps the process and fails
// every pending call.
func (k *kernelProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 256*1024*1024)
	first := true
	for sc.Scan() {
		line := sc.Bytes()
		if first {
			first = false
			var ev helperEvent
			if err := json.Unmarshal(line, &ev); err == nil && ev.Event != "" {
				k.ready <- ev
				continue
			}
		}
		var rep helperReply
		if err := json.Unmarshal(line, &rep); err != nil || rep.ID == 0 {
			continue // an event we do not use
		}
		k.mu.Lock()
		ch := k.pending[rep.ID]
		delete(k.pending, rep.ID)
		k.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	_, _ = io.Copy(io.Discard, r)
	_ = k.cmd.Wait()
	k.mu.Lock()
	k.exited = true
	for id, ch := range k.pending {
		close(ch)
		delete(k.pending, id)
	}
	k.mu.Unlock()
	if first {
		close(k.ready)
	}
	close(k.done)
}

// errHelperGone is the error of a call whose helper exited.
var errHelperGone = errors.New("the kernel helper exited")

// call sends one request and waits for its reply. When ctx ends first the
// reply is dropped when it comes.
func (k *kernelProc) call(ctx context.Context, req map[string]any) (helperReply, error) {
	k.mu.Lock()
	if k.exited {
		k.mu.Unlock()
		return helperReply{}, k.goneErr()
	}
	k.seq++
	id := k.seq
	ch := make(chan helperReply, 1)
	k.pending[id] = ch
	k.mu.Unlock()
	req["id"] = id
	line, err := json.Marshal(req)
	if err != nil {
		return helperReply{}, fmt.Errorf("encode kernel request: %w", err)
	}
	k.writeMu.Lock()
	_, err = k.stdin.Write(append(line, '\n'))
	k.writeMu.Unlock()
	if err != nil {
		k.forget(id)
		return helperReply{}, fmt.Errorf("%w: %v", errHelperGone, err)
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			return helperReply{}, k.goneErr()
		}
		return rep, nil
	case <-ctx.Done():
		k.forget(id)
		return helperReply{}, ctx.Err()
	}
}

func (k *kernelProc) forget(id int) {
	k.mu.Lock()
	delete(k.pending, id)
	k.mu.Unlock()
}

func (k *kernelProc) goneErr() error {
	if tail := strings.TrimSpace(k.stderr.String()); tail != "" {
		return fmt.Errorf("%w: %s", errHelperGone, lastLines(tail, 5))
	}
	return errHelperGone
}

// start starts the kernel named name in dir.
func (k *kernelProc) start(ctx context.Context, name, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, kernelStartTimeout+5*time.Second)
	defer cancel()
	rep, err := k.call(ctx, map[string]any{"op": "start", "kernel": name, "cwd": dir, "timeout": kernelStartTimeout.Seconds()})
	if err != nil {
		return fmt.Errorf("start the %s kernel: %w", name, err)
	}
	if !rep.OK {
		return errors.New(rep.Error)
	}
	k.mu.Lock()
	k.kernelPID, k.language, k.displayName = rep.KernelPID, rep.Language, rep.DisplayName
	k.mu.Unlock()
	return nil
}

// pid is the kernel's process id (0 before it started).
func (k *kernelProc) pid() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kernelPID
}

// setPID records the kernel's process id after a restart.
func (k *kernelProc) setPID(pid int) {
	k.mu.Lock()
	k.kernelPID = pid
	k.mu.Unlock()
}

// lang is the kernel's language ("python").
func (k *kernelProc) lang() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.language
}

// alive reports whether the helper still runs.
func (k *kernelProc) alive() bool {
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// stop ends the helper: stdin closes (the helper shuts its kernel down and
// exits); whatever is still there after kernelStopTimeout is killed.
func (k *kernelProc) stop() {
	k.writeMu.Lock()
	_ = k.stdin.Close()
	k.writeMu.Unlock()
	select {
	case <-k.done:
	case <-time.After(kernelStopTimeout):
		k.kill()
		<-k.done
	}
	// The kernel runs in a session of its own (jupyter_client starts it
	// so); make sure it went with its helper.
	if pid := k.pid(); pid > 0 {
		killKernel(pid)
	}
}

// kill kills the helper's process group and the kernel's.
func (k *kernelProc) kill() {
	if k.cmd.Process != nil {
		killHelper(k.cmd.Process)
	}
	if pid := k.pid(); pid > 0 {
		killKernel(pid)
	}
}

// tailBuffer keeps the last max bytes written to it (the helper's stderr,
// for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
