package chatpanel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/nvim-claude/nvim-claude/chat"
)

// Checkpoints and the conversation's past: each file's contents before a
// turn first edits it, the rewind that restores them, a fork from a
// message, and a resumed chat's history.

type checkpoint struct {
	turn     string
	path     string
	contents *string // nil: the file did not exist
}

// checkpoint keeps path's contents before the running turn first edits
// it. It reads the file now: call it only while the CLI waits for our
// permission answer (nothing has written the edit yet).
func (ch *chatProc) checkpoint(path string) {
	ch.mu.Lock()
	turn := ch.turnUUID
	if turn == "" {
		turn = ch.lastSent
	}
	ch.mu.Unlock()
	var contents *string
	if b, err := os.ReadFile(path); err == nil {
		s := string(b)
		contents = &s
	} else if !errors.Is(err, os.ErrNotExist) {
		ch.c.log.Warn("chat checkpoint", "path", path, "err", err)
		return
	}
	ch.addCheckpoint(turn, path, contents)
}

// checkpointResult keeps what an edit that was not asked about replaced:
// the result's originalFile (null for a file the edit created).
func (ch *chatProc) checkpointResult(tu toolUse, structured json.RawMessage) {
	var r map[string]json.RawMessage
	if json.Unmarshal(structured, &r) != nil || r == nil {
		return
	}
	orig, ok := r["originalFile"]
	var contents *string
	switch {
	case ok && string(orig) != "null":
		var s string
		if json.Unmarshal(orig, &s) != nil {
			return
		}
		contents = &s
	case ok, string(r["type"]) == `"create"`:
		// a new file
	default:
		ch.c.log.Warn("chat checkpoint: the result does not say what the edit replaced", "path", tu.path, "tool", tu.name)
		return
	}
	ch.addCheckpoint(tu.turn, tu.path, contents)
}

// addCheckpoint keeps the first checkpoint of path in turn.
func (ch *chatProc) addCheckpoint(turn, path string, contents *string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	key := turn + "\x00" + path
	if ch.cpSeen[key] {
		return
	}
	ch.cpSeen[key] = true
	ch.checkpoints = append(ch.checkpoints, checkpoint{turn: turn, path: path, contents: contents})
}

// rewindParams are chat_rewind's parameters.
type rewindParams struct {
	idParams
	UUID string `json:"uuid"`
	// Plan lists what the rewind would change and changes nothing (not
	// even the files the host restores itself): the user confirms first.
	Plan bool `json:"plan"`
}

func (ch *chatProc) handleRewind(p rewindParams) (any, error) {
	if p.UUID == "" {
		return nil, errors.New("chat_rewind: uuid is required")
	}
	ch.mu.Lock()
	idx := -1
	order := map[string]int{}
	for i, u := range ch.sent {
		order[u] = i
		if u == p.UUID {
			idx = i
		}
	}
	cps := append([]checkpoint(nil), ch.checkpoints...)
	ch.mu.Unlock()
	if idx < 0 {
		return nil, fmt.Errorf("chat_rewind: no message %s in this chat", p.UUID)
	}
	files := []map[string]any{}
	seen := map[string]bool{}
	for _, cp := range cps {
		i, ok := order[cp.turn]
		if !ok || i < idx || seen[cp.path] {
			continue
		}
		seen[cp.path] = true
		cur, err := os.ReadFile(cp.path)
		var changed bool
		if cp.contents == nil {
			changed = err == nil
		} else {
			changed = err != nil || string(cur) != *cp.contents
		}
		f := map[string]any{"path": cp.path, "contents": nil, "changed": changed}
		switch {
		case cp.contents != nil && !utf8.ValidString(*cp.contents):
			// Not text Lua can carry (JSON would turn it into U+FFFD):
			// restored here, byte for byte.
			f["restored_by_host"] = true
			if changed && !p.Plan {
				if err := restoreFile(cp.path, []byte(*cp.contents)); err != nil {
					f["error"] = err.Error()
				}
			}
		case cp.contents != nil:
			f["contents"] = *cp.contents
		}
		files = append(files, f)
	}
	return map[string]any{"files": files}, nil
}

// restoreFile writes data to path atomically (a temporary file in the same
// directory, renamed over it), keeping path's permissions.
func restoreFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".nvim-claude-*")
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return nil
}

// forkParams are chat_fork's parameters.
type forkParams struct {
	ID   string `json:"id"`
	UUID string `json:"uuid"`
}

func (c *Panel) handleFork(_ context.Context, p forkParams) (any, error) {
	src, err := c.get(p.ID)
	if err != nil {
		return nil, err
	}
	src.mu.Lock()
	op := src.params
	sid := src.sessionID
	op.Mode, op.Model = src.mode, src.model
	src.mu.Unlock()
	if sid == "" {
		return nil, errors.New("chat_fork: this chat has no session yet (send a message first)")
	}
	if op.Model == "default" {
		op.Model = ""
	}
	op.Resume, op.Fork = sid, true
	var after func(*chatProc, *chat.Session) (map[string]any, error)
	if p.UUID != "" {
		// Once the fork's CLI runs, its conversation goes back to the
		// message; a failure shows in the new chat (Lua has it by then).
		after = func(ch *chatProc, sess *chat.Session) (map[string]any, error) {
			rctx, cancel := context.WithTimeout(ch.ctx, chatRequestTimeout)
			defer cancel()
			resp, err := sess.Request(rctx, "rewind_conversation", map[string]any{"target_message_uuid": p.UUID})
			var r struct {
				Rewound     *bool  `json:"rewound"`
				PrefillText string `json:"prefillText"`
				Error       string `json:"error"`
			}
			if err == nil {
				_ = json.Unmarshal(resp, &r)
				if r.Rewound != nil && !*r.Rewound {
					err = fmt.Errorf("the CLI did not rewind (%s)", r.Error)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("the fork could not go back to the chosen message: %w", err)
			}
			ch.mu.Lock()
			ch.forkCut = p.UUID
			ch.mu.Unlock()
			return map[string]any{"prefill": r.PrefillText}, nil
		}
	}
	ch, err := c.open(op, after)
	if err != nil {
		return nil, fmt.Errorf("could not fork the chat: %w", err)
	}
	return ch.openResult(), nil
}

// handleHistory answers chat_history. A resumed chat's messages are read
// from its session's transcript while its CLI starts (Lua asks at once);
// a fork's only once its CLI runs, as they stop where it was rewound.
func (c *Panel) handleHistory(_ context.Context, p idParams) (any, error) {
	ch, err := c.get(p.ID)
	if err != nil {
		return nil, err
	}
	if ch.params.Fork {
		if err := ch.ready(); err != nil {
			return nil, err
		}
	}
	ch.mu.Lock()
	resume, cut := ch.params.Resume, ch.forkCut
	ch.mu.Unlock()
	if resume == "" {
		return map[string]any{"messages": []chat.HistoryMessage{}}, nil
	}
	msgs, err := chat.ReadHistory(ch.configDir, ch.params.Cwd, resume)
	if err != nil {
		return nil, fmt.Errorf("chat_history: %w", err)
	}
	if cut != "" {
		for i, m := range msgs {
			if m.UUID == cut {
				msgs = msgs[:i]
				break
			}
		}
	}
	return map[string]any{"messages": msgs}, nil
}
