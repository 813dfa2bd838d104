package chatpanel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nvim-claude/nvim-claude/chat"
)

// The chat's permission mode, model and plan, as the CLI names them.

// chatMode reports whether the panel offers mode (a name of chat.Modes,
// or "default", the old name of manual).
func chatMode(mode string) bool {
	return chat.WireMode(mode) != ""
}

// modeList names the modes for an error message.
func modeList() string { return strings.Join(chat.Modes(), ", ") }

// modeParams are chat_set_mode's parameters.
type modeParams struct {
	idParams
	Mode string `json:"mode"`
}

func (ch *chatProc) handleSetMode(ctx context.Context, p modeParams) (any, error) {
	if !chatMode(p.Mode) {
		return nil, fmt.Errorf("chat_set_mode: mode must be one of %s (got %q)", modeList(), p.Mode)
	}
	p.Mode = chat.ModeName(p.Mode)
	if err := ch.session().SetMode(ctx, p.Mode); err != nil {
		return nil, fmt.Errorf("chat_set_mode: %w", err)
	}
	ch.mu.Lock()
	changed := ch.mode != p.Mode
	ch.mode = p.Mode
	ch.mu.Unlock()
	if changed {
		ch.pushStatus()
	}
	return map[string]any{"mode": p.Mode}, nil
}

// modelParams are chat_set_model's parameters.
type modelParams struct {
	idParams
	Model string `json:"model"`
}

func (ch *chatProc) handleSetModel(ctx context.Context, p modelParams) (any, error) {
	if p.Model == "" {
		return nil, errors.New("chat_set_model: model is required")
	}
	sess := ch.session()
	var known []string
	ok := false
	for _, m := range sess.Init().Models {
		known = append(known, m.Value)
		if m.Value == p.Model || m.ResolvedModel == p.Model {
			ok = true
		}
	}
	if !ok {
		return nil, fmt.Errorf("chat_set_model: unknown model %q (known: %s)", p.Model, strings.Join(known, ", "))
	}
	now, err := sess.SetModel(ctx, p.Model)
	if err != nil {
		return nil, fmt.Errorf("chat_set_model: %w", err)
	}
	// The header shows the model the CLI reports, not the alias asked for.
	ch.mu.Lock()
	ch.model = now
	ch.mu.Unlock()
	ch.pushStatus()
	return map[string]any{"model": now}, nil
}

func (ch *chatProc) handlePlan(ctx context.Context) (any, error) {
	resp, err := ch.session().Request(ctx, "get_plan", nil)
	if err != nil {
		return nil, fmt.Errorf("chat_plan: %w", err)
	}
	var r map[string]any
	if err := json.Unmarshal(resp, &r); err != nil || r == nil {
		r = map[string]any{"exists": false}
	}
	return r, nil
}
