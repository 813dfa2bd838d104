package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

// executeCode {code} → text items (stdout, stderr, results, tracebacks) and
// {type:"image", data, mimeType:"image/png"} items (PROTOCOL.md §6). The code
// runs in the Jupyter kernel of the buffer the user works in, after the user
// said yes in Neovim (unless execute.confirm = false, or "always" for this
// CLI session).

// declinedMessage is the isError text when the user says no.
const declinedMessage = "The user declined to run the code"

const executeCodeDescription = "Execute code in the Jupyter kernel of the file open in Neovim (Python by default; " +
	"a notebook's own kernel for .ipynb files). The kernel persists between calls: variables and imports are kept " +
	"until the user restarts or stops it. The user sees the code and must allow each run. Returns stdout/stderr, " +
	"results, tracebacks, and PNG images (e.g. plots) that the code displays."

func (c *Kernels) executeCodeTool() mcp.Tool {
	return mcp.Tool{
		Name:        "executeCode",
		Description: executeCodeDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"The code to be executed on the kernel."}},"required":["code"]}`),
		Handler:     c.executeCode,
	}
}

func (c *Kernels) executeCode(ctx context.Context, req *mcp.ToolRequest) (*mcp.ToolResult, error) {
	var args struct {
		Code *string `json:"code"`
	}
	if err := mcp.DecodeArgs(req.Arguments, &args); err != nil {
		return nil, err
	}
	if args.Code == nil || strings.TrimSpace(*args.Code) == "" {
		return mcp.ErrorResult("executeCode: code is required and must not be empty"), nil
	}
	ed := c.ed
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	tgt, err := ed.ExecuteTarget(tctx)
	cancel()
	if err != nil {
		return mcp.ErrorResult("executeCode: %v", err), nil
	}
	opts, ok := c.options()
	if !ok {
		// Never run without the user's confirm setting.
		return mcp.ErrorResult("executeCode: the host has not received the execute options (they come with :ClaudeStart)"), nil
	}
	b := c.buffer(tgt.Bufnr, tgt.Name)

	// One confirmation or run at a time per kernel: a second call waits
	// its turn (or for the CLI to give up on it).
	select {
	case <-b.turn:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { b.turn <- struct{}{} }()

	if opts.confirm && !c.isAlways(req.Client.ID) {
		c.mu.Lock()
		kernelName, lang := b.kernelName, ""
		if b.proc != nil {
			lang = b.proc.lang()
		}
		c.mu.Unlock()
		if kernelName == "" {
			kernelName = tgt.Kernel
		}
		if kernelName == "" {
			kernelName = defaultKernelName
		}
		if lang == "" && kernelName == defaultKernelName {
			lang = "python"
		}
		d, err := c.confirm(ctx, ed, nvimbridge.ExecuteConfirmRequest{
			Code: *args.Code, Kernel: kernelName, Language: lang, Bufnr: tgt.Bufnr,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return mcp.ErrorResult("executeCode: %v", err), nil
		}
		switch d {
		case "run":
		case "always":
			c.setAlways(req.Client.ID)
		default:
			c.log.Info("executeCode declined", "bufnr", tgt.Bufnr)
			return mcp.ErrorResult(declinedMessage), nil
		}
	}

	proc, note, err := c.ensureKernel(ctx, ed, b, tgt, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return mcp.ErrorResult("executeCode: %v", err), nil
	}
	return c.run(ctx, b, proc, *args.Code, opts, note)
}

func (c *Kernels) isAlways(client string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.always[client]
}

func (c *Kernels) setAlways(client string) {
	c.mu.Lock()
	c.always[client] = true
	c.mu.Unlock()
}

// run executes code and turns the helper's reply into the tool result.
func (c *Kernels) run(ctx context.Context, b *bufferKernel, proc *kernelProc, code string, opts executeOptions, note string) (*mcp.ToolResult, error) {
	// The helper enforces the timeout (it interrupts the kernel and waits
	// for it to settle); this bound only guards against a wedged helper.
	callCtx := ctx
	if opts.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, opts.timeout+30*time.Second)
		defer cancel()
	}
	rep, err := proc.call(callCtx, map[string]any{
		"op": "execute", "code": code, "timeout": opts.timeout.Seconds(), "max_output": opts.maxOutput,
	})
	if err != nil {
		if ctx.Err() != nil {
			// The CLI cancelled the call: stop the run, keep the kernel.
			ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = proc.call(ictx, map[string]any{"op": "interrupt"})
			cancel()
			return nil, ctx.Err()
		}
		if errors.Is(err, errHelperGone) {
			c.mu.Lock()
			stopped := b.proc != proc
			if !stopped {
				b.proc = nil
			}
			c.mu.Unlock()
			if stopped {
				return mcp.ErrorResult("executeCode: the kernel was stopped during the run (:ClaudeKernel stop, or its buffer was closed)"), nil
			}
			return mcp.ErrorResult("executeCode: the kernel died during the run; the next call starts a new one (%v)", err), nil
		}
		if errors.Is(err, context.DeadlineExceeded) {
			proc.kill()
			return mcp.ErrorResult("executeCode: the kernel did not answer; it was killed, and the next call starts a new one"), nil
		}
		return mcp.ErrorResult("executeCode: %v", err), nil
	}
	if !rep.OK {
		return mcp.ErrorResult("executeCode: %s", rep.Error), nil
	}
	res := executeResult(rep, opts)
	if rep.Status == "died" {
		c.mu.Lock()
		if b.proc == proc {
			b.proc = nil
		}
		c.mu.Unlock()
		go proc.stop() // the helper outlived its kernel; it exits on EOF
	}
	if note != "" {
		res.Content = append([]mcp.Content{{Type: "text", Text: note}}, res.Content...)
	}
	if rep.Status == "stuck" {
		// The kernel ignored the interrupt: restart it so the next call
		// has a kernel that answers.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kernelStartTimeout+10*time.Second)
		r, err := proc.call(rctx, map[string]any{"op": "restart"})
		cancel()
		msg := "The kernel did not stop after the interrupt, so it was restarted: its variables and imports are gone."
		if err != nil || !r.OK {
			proc.kill()
			msg = "The kernel did not stop after the interrupt and could not be restarted; it was killed, and the next call starts a new one."
		} else {
			proc.setPID(r.KernelPID)
		}
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: msg})
	}
	return res, nil
}

// executeResult turns a run's outputs into the tool result.
func executeResult(rep helperReply, opts executeOptions) *mcp.ToolResult {
	res := &mcp.ToolResult{Content: []mcp.Content{}}
	for _, it := range rep.Items {
		switch it.Type {
		case "image":
			res.Content = append(res.Content, mcp.Content{Type: "image", Data: it.Data, MimeType: it.MimeType})
		case "stream":
			text := it.Text
			if it.Name == "stderr" {
				text = "[stderr]\n" + text
			}
			res.Content = append(res.Content, mcp.Content{Type: "text", Text: text})
		default:
			res.Content = append(res.Content, mcp.Content{Type: "text", Text: it.Text})
		}
	}
	if rep.OmittedChars > 0 {
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: fmt.Sprintf(
			"[output truncated: %d more characters not shown (execute.max_output = %d)]", rep.OmittedChars, opts.maxOutput)})
	}
	if rep.OmittedImages > 0 {
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: fmt.Sprintf(
			"[%d image(s) not shown: over the 8 MB limit for one run]", rep.OmittedImages)})
	}
	interrupted := rep.Status == "timeout" || rep.Status == "interrupted" || rep.Status == "stuck"
	if e := rep.ExecError; e != nil && !(interrupted && e.EName == "KeyboardInterrupt") {
		tb := strings.TrimSpace(e.Traceback)
		if tb == "" {
			tb = e.EName + ": " + e.EValue
		}
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: tb})
		res.IsError = true
	}
	switch rep.Status {
	case "timeout", "stuck":
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: fmt.Sprintf(
			"Execution timed out after %s (execute.timeout_ms = %d): the kernel was interrupted. "+
				"Variables and imports from before are kept.", opts.timeout, opts.timeout.Milliseconds())})
		res.IsError = true
	case "interrupted":
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: "The user interrupted the execution (:ClaudeKernel interrupt)."})
		res.IsError = true
	case "aborted":
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: "The run was aborted: the user restarted or stopped the kernel."})
		res.IsError = true
	case "died":
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: "The kernel died during the run; the next call starts a new one."})
		res.IsError = true
	}
	if len(res.Content) == 0 {
		res.Content = append(res.Content, mcp.Content{Type: "text", Text: "(the code ran and printed nothing)"})
	}
	return res
}
