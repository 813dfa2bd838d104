package nvimbridge

import (
	"context"
	"errors"
)

// ExecuteTarget is where executeCode runs: the buffer the user works in and
// the kernel it wants.
type ExecuteTarget struct {
	// Bufnr is the buffer whose kernel runs the code.
	Bufnr int `json:"bufnr"`
	// Name is the buffer's file (absolute), or "" for an unnamed buffer.
	Name string `json:"name"`
	// Kernel is the kernel named by the notebook's
	// metadata.kernelspec.name (an .ipynb buffer), or "".
	Kernel string `json:"kernel"`
	// Dir is the directory the kernel starts in.
	Dir string `json:"dir"`
}

// ExecuteConfirmRequest is a run to show the user before it happens.
type ExecuteConfirmRequest struct {
	// ID is the host's handle for this confirmation; the decision and
	// CloseExecuteConfirm use it.
	ID string `json:"id"`
	// Code is the code to run.
	Code string `json:"code"`
	// Kernel names the kernel ("python3"), for the title.
	Kernel string `json:"kernel"`
	// Language is the kernel's language (the float's filetype), "" if not
	// known yet.
	Language string `json:"language"`
	// Bufnr is the buffer whose kernel runs it.
	Bufnr int `json:"bufnr"`
}

// ExecuteDecisionMethod is the notification Lua sends (rpcnotify on the
// channel ExecuteConfirm names) when the user answers a confirmation: JSON
// {id, decision} with decision "run", "cancel" or "always".
const ExecuteDecisionMethod = "execute_decision"

// KernelBufferGoneMethod is the notification Lua sends when a buffer with a
// kernel is deleted or wiped out: JSON {bufnr}.
const KernelBufferGoneMethod = "kernel_buffer_gone"

// ExecuteTarget asks Neovim which buffer's kernel runs code now, which
// kernel it names, and the execute options.
func (b *Bridge) ExecuteTarget(ctx context.Context) (ExecuteTarget, error) {
	var res struct {
		ExecuteTarget
		Error string `json:"error"`
	}
	if err := b.Call(ctx, "execute_target", nil, &res); err != nil {
		return ExecuteTarget{}, err
	}
	if res.Error != "" {
		return ExecuteTarget{}, errors.New(res.Error)
	}
	return res.ExecuteTarget, nil
}

// ExecuteConfirm shows the code in a float and returns at once; the user's
// answer arrives later as an ExecuteDecisionMethod notification.
func (b *Bridge) ExecuteConfirm(ctx context.Context, req ExecuteConfirmRequest) error {
	ch, err := b.channelID(ctx)
	if err != nil {
		return err
	}
	args := struct {
		ExecuteConfirmRequest
		Chan int `json:"chan"`
	}{req, ch}
	var res struct {
		Error string `json:"error"`
	}
	if err := b.Call(ctx, "execute_confirm", args, &res); err != nil {
		return err
	}
	if res.Error != "" {
		return errors.New(res.Error)
	}
	return nil
}

// CloseExecuteConfirm closes the confirmation float with this id, if it is
// still open (the request ended without an answer).
func (b *Bridge) CloseExecuteConfirm(ctx context.Context, id string) error {
	return b.cleanup(ctx, "execute_confirm_close", map[string]any{"id": id})
}

// WatchKernelBuffer makes Neovim send KernelBufferGoneMethod when buffer
// bufnr is deleted or wiped out.
func (b *Bridge) WatchKernelBuffer(ctx context.Context, bufnr int) error {
	ch, err := b.channelID(ctx)
	if err != nil {
		return err
	}
	return b.Call(ctx, "execute_watch_buffer", map[string]any{"bufnr": bufnr, "chan": ch}, nil)
}
