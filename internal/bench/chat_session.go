//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/chat"
	"github.com/nvim-claude/nvim-claude/internal/bench/chatwire"
)

// longSession is a generated session transcript for the resume scenario.
type longSession struct {
	id       string
	path     string
	messages int   // user prompts + assistant answers
	lines    int   // transcript lines the chat renders for them
	bytes    int64 // the file's size
	last     int   // the marker that ends the last answer (chatwire.Marker)
}

// sessionEntry is a line of the recorded transcript with what the
// generator replaces in it.
type sessionEntry struct {
	raw  string
	typ  string
	uuid string
}

// writeLongSession writes a session transcript of turns prompts and
// answers where the CLI keeps it (configDir, cwd), built from the
// transcript the real CLI 2.1.331 kept of the recorded session
// (internal/bench/standin/testdata/session.jsonl): the first recorded turn
// as it is (the entries a session starts with: attachments, the prompt
// snapshot, the API request shape), then, per later turn, the entries the
// CLI wrote for the recorded second turn (queue operations, the prompt,
// the file-history snapshot, the API request, the answer, last-prompt),
// with new uuids chained by parentUuid, a new message id and new text.
// Each prompt renders as 5 transcript lines and each answer as
// answerLines+1; the last answer ends with the marker last.
func writeLongSession(root, configDir, cwd string, turns, answerLines, last int) (longSession, error) {
	raw, err := os.ReadFile(filepath.Join(root, "internal", "bench", "standin", "testdata", "session.jsonl"))
	if err != nil {
		return longSession{}, err
	}
	text := strings.NewReplacer("$CWD", cwd, "$CONFIG", configDir, "$HOME", filepath.Dir(configDir)).Replace(string(raw))
	var entries []sessionEntry
	var sessionID, prompt, answer string
	users := 0
	split := -1 // index of the second turn's first entry
	for _, ln := range strings.Split(strings.TrimSpace(text), "\n") {
		var e struct {
			Type      string `json:"type"`
			UUID      string `json:"uuid"`
			SessionID string `json:"sessionId"`
			Message   struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			return longSession{}, fmt.Errorf("session.jsonl: %w", err)
		}
		if e.SessionID != "" {
			sessionID = e.SessionID
		}
		switch e.Type {
		case "user":
			users++
			if users == 2 {
				// The second turn starts with its queue operations.
				split = len(entries)
				for split > 0 && entries[split-1].typ == "queue-operation" {
					split--
				}
			}
			if len(e.Message.Content) > 0 {
				prompt = e.Message.Content[0].Text
			}
		case "assistant":
			if len(e.Message.Content) > 0 {
				answer = e.Message.Content[0].Text
			}
		}
		entries = append(entries, sessionEntry{raw: ln, typ: e.Type, uuid: e.UUID})
	}
	if split < 0 || sessionID == "" || prompt == "" || answer == "" {
		return longSession{}, fmt.Errorf("session.jsonl: want two turns with a prompt and an answer")
	}
	first, later := entries[:split], entries[split:]
	// the cost-state entry at the end is the session's, not a turn's
	for len(later) > 0 && later[len(later)-1].typ != "last-prompt" {
		later = later[:len(later)-1]
	}
	uuidRE := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	msgRE := regexp.MustCompile(`msg_[0-9A-Za-z]+`)
	parentRE := regexp.MustCompile(`"parentUuid":"([0-9a-f-]{36})"`)
	ls := longSession{id: uuid.NewString(), last: last}
	dir := chat.ProjectDir(configDir, cwd)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ls, err
	}
	ls.path = filepath.Join(dir, ls.id+".jsonl")
	f, err := os.Create(ls.path)
	if err != nil {
		return ls, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	// fresh maps each recorded uuid (and message id) to a new one for
	// turn t.
	fresh := map[string]string{}
	leaf := "" // the last turn's answer uuid
	for t := 0; t < turns; t++ {
		tmpl := later
		if t == 0 {
			tmpl = first
		}
		clear(fresh)
		fresh[sessionID] = ls.id
		p, a := sessionPrompt(t), sessionAnswer(t, answerLines)
		if t == turns-1 {
			a += " " + chatwire.Marker(last)
		}
		repl := strings.NewReplacer(jsonString(prompt), jsonString(p), jsonString(answer), jsonString(a))
		if leaf != "" {
			fresh[leaf] = leaf
		}
		for _, e := range tmpl {
			line := repl.Replace(e.raw)
			// A parentUuid that is none of the turn's entries (its first
			// entry's) chains to the previous turn's answer.
			line = parentRE.ReplaceAllStringFunc(line, func(m string) string {
				u := parentRE.FindStringSubmatch(m)[1]
				if leaf == "" || ownUUID(tmpl, u) {
					return m
				}
				return `"parentUuid":"` + leaf + `"`
			})
			line = uuidRE.ReplaceAllStringFunc(line, func(u string) string {
				if n, ok := fresh[u]; ok {
					return n
				}
				n := uuid.NewString()
				fresh[u] = n
				return n
			})
			line = msgRE.ReplaceAllStringFunc(line, func(m string) string {
				if n, ok := fresh[m]; ok {
					return n
				}
				n := "msg_01" + strings.ReplaceAll(uuid.NewString(), "-", "")[:22]
				fresh[m] = n
				return n
			})
			if e.typ == "assistant" {
				leaf = fresh[e.uuid]
			}
			w.WriteString(line)
			w.WriteByte('\n')
		}
		ls.messages += 2
		ls.lines += 5 + answerLines + 1
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return ls, err
	}
	if err := f.Close(); err != nil {
		return ls, err
	}
	if st, err := os.Stat(ls.path); err == nil {
		ls.bytes = st.Size()
	}
	// The history the host reads must be what was meant.
	msgs, err := chat.ReadHistory(configDir, cwd, ls.id)
	if err != nil {
		return ls, err
	}
	if len(msgs) != ls.messages || msgs[len(msgs)-1].Text != sessionAnswer(turns-1, answerLines)+" "+chatwire.Marker(last) {
		return ls, fmt.Errorf("the generated session reads back as %d messages, not %d", len(msgs), ls.messages)
	}
	return ls, nil
}

// ownUUID reports whether u is the uuid of one of the entries.
func ownUUID(entries []sessionEntry, u string) bool {
	for _, e := range entries {
		if e.uuid == u {
			return true
		}
	}
	return false
}

// sessionPrompt is turn t's prompt: three lines.
func sessionPrompt(t int) string {
	return fmt.Sprintf("Question %d: look at the parser and the renderer again.\nWhat changes when the input is long?\nKeep the answer short.", t)
}

// sessionAnswer is turn t's answer: n lines of markdown (paragraphs, a
// bullet list, a fenced Lua block), each under 80 columns. It has no
// marker words.
func sessionAnswer(t, n int) string {
	block := []string{
		fmt.Sprintf("Here is part %d of the answer, with the details that matter.", t),
		"",
		"The parser reads the input one line at a time and keeps the state",
		"of the current block; the renderer only sees finished blocks, so a",
		"long input costs the same per line as a short one.",
		"",
		"- the **scanner** splits lines",
		"- the `parser` builds blocks",
		"- the renderer draws them",
		"- nothing is read twice",
		"",
		"```lua",
		"local function render(lines)",
		"  local out = {}",
		"  for i, l in ipairs(lines) do",
		"    out[i] = l:gsub(\"%s+$\", \"\")",
		"  end",
		"  return out",
		"end",
		"```",
		"",
	}
	lines := make([]string, 0, n)
	for len(lines) < n {
		lines = append(lines, block[len(lines)%len(block)])
	}
	lines[n-1] = "That is all for this part."
	return strings.Join(lines, "\n")
}

// jsonString is s as JSON, without HTML escapes (the CLI's form).
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
