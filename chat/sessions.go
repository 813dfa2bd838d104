package chat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ConfigDir is the CLI's config directory for an environment: its
// CLAUDE_CONFIG_DIR, else ~/.claude (home from HOME in env, else the
// process's home).
func ConfigDir(env []string) string {
	var home string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR":
			if v != "" {
				return v
			}
		case "HOME":
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// maxSlug is the longest project directory name the CLI uses as is.
const maxSlug = 200

// ProjectSlug is the CLI's directory name for a cwd, before the cut of long
// names (see [ProjectDir]): like the CLI's JavaScript
// cwd.replace(/[^a-zA-Z0-9]/g, "-"), every UTF-16 code unit that is not an
// ASCII letter or digit becomes "-" (so "é" gives one "-", a character
// outside the BMP two).
func ProjectSlug(cwd string) string {
	var b strings.Builder
	b.Grow(len(cwd))
	for _, r := range cwd {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--") // a surrogate pair
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// ProjectDir is the CLI's directory of the project at cwd. A slug longer
// than 200 characters is cut to 200 plus "-" and a hash of cwd (base 36);
// the hash is not reproduced here: the directory is found by its prefix,
// and among several, the one whose transcripts were made in cwd.
func ProjectDir(configDir, cwd string) string {
	base := filepath.Join(configDir, "projects")
	slug := ProjectSlug(cwd)
	if len(slug) <= maxSlug {
		return filepath.Join(base, slug)
	}
	prefix := slug[:maxSlug] + "-"
	ents, _ := os.ReadDir(base)
	var cands []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() || rest == "" || strings.Trim(rest, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			continue
		}
		cands = append(cands, filepath.Join(base, e.Name()))
	}
	var unknown string
	for _, d := range cands {
		switch transcriptCwd(d) {
		case cwd:
			return d
		case "":
			if unknown == "" {
				unknown = d
			}
		}
	}
	if unknown != "" {
		return unknown
	}
	return filepath.Join(base, slug[:maxSlug]) // none yet: a directory that does not exist
}

// transcriptCwd is the cwd recorded in dir's transcripts ("" if none says).
func transcriptCwd(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		var cwd string
		_ = readTranscript(f, func(e *transcriptEntry) {
			if cwd == "" {
				cwd = e.Cwd
			}
		})
		if cwd != "" {
			return cwd
		}
	}
	return ""
}

// TranscriptPath is where the CLI keeps a session's transcript.
func TranscriptPath(configDir, cwd, sessionID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), sessionID+".jsonl")
}

// SessionInfo describes one past session of a project.
type SessionInfo struct {
	SessionID   string `json:"session_id"`
	Title       string `json:"title"`
	FirstPrompt string `json:"first_prompt"`
	Modified    int64  `json:"modified"` // unix seconds
	Messages    int    `json:"messages"`
}

// HistoryMessage is one user prompt or assistant answer of a transcript.
type HistoryMessage struct {
	Role  string   `json:"role"` // user or assistant
	Text  string   `json:"text"`
	UUID  string   `json:"uuid,omitempty"`
	Tools []string `json:"tools,omitempty"`
}

// transcriptEntry is the part of a transcript line the readers use.
type transcriptEntry struct {
	Type        string `json:"type"`
	UUID        string `json:"uuid"`
	IsMeta      bool   `json:"isMeta"`
	IsSidechain bool   `json:"isSidechain"`
	Cwd         string `json:"cwd"`
	Message     struct {
		ID      string          `json:"id"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	CustomTitle string `json:"customTitle"`
	Title       string `json:"title"`
	Summary     string `json:"summary"`
}

// maxTranscriptLine bounds one transcript line.
const maxTranscriptLine = 64 << 20

// readTranscript calls fn for every entry of the transcript at path.
func readTranscript(path string, fn func(e *transcriptEntry)) error {
	return readTranscriptLines(path, nil, fn)
}

// readTranscriptLines calls fn for the entries of the transcript at path
// whose line keep accepts (nil: all), decoding only those.
func readTranscriptLines(path string, keep func(line []byte) bool, fn func(e *transcriptEntry)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTranscriptLine)
	for sc.Scan() {
		if keep != nil && !keep(sc.Bytes()) {
			continue
		}
		var e transcriptEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a torn last line, or a future format
		}
		fn(&e)
	}
	return sc.Err()
}

// promptText is the text a user entry shows, "" for entries that are not
// prompts (tool results, meta, command output, interrupt markers).
func promptText(e *transcriptEntry) string {
	if e.Type != "user" || e.IsMeta || e.IsSidechain {
		return ""
	}
	var parts []string
	for _, b := range parseContent(e.Message.Content) {
		switch b.Type {
		case "tool_result":
			return ""
		case "text":
			if strings.HasPrefix(b.Text, "<system-reminder>") || strings.HasPrefix(b.Text, "[Image: source:") {
				continue
			}
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	t := strings.TrimSpace(strings.Join(parts, "\n"))
	if strings.HasPrefix(t, "<local-command-stdout>") || strings.HasPrefix(t, "<command-name>") ||
		strings.HasPrefix(t, "[Request interrupted by user") {
		return ""
	}
	return t
}

// ListSessions lists the sessions of the project at cwd, newest first.
// A project without sessions gives an empty list.
func ListSessions(configDir, cwd string) ([]SessionInfo, error) {
	dir := ProjectDir(configDir, cwd)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []SessionInfo{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := []SessionInfo{}
	for _, ent := range ents {
		name := ent.Name()
		if ent.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		info, err := ent.Info()
		if err != nil {
			continue
		}
		si := SessionInfo{SessionID: strings.TrimSuffix(name, ".jsonl"), Modified: info.ModTime().Unix()}
		var summary string
		seenAssistant := map[string]bool{}
		err = readTranscript(filepath.Join(dir, name), func(e *transcriptEntry) {
			switch e.Type {
			case "custom-title":
				if e.CustomTitle != "" {
					si.Title = e.CustomTitle
				} else if e.Title != "" {
					si.Title = e.Title
				}
			case "summary":
				if e.Summary != "" {
					summary = e.Summary
				}
			case "user":
				if t := promptText(e); t != "" {
					si.Messages++
					if si.FirstPrompt == "" {
						si.FirstPrompt = firstLine(t, 200)
					}
				}
			case "assistant":
				if !e.IsSidechain && e.Message.ID != "" && !seenAssistant[e.Message.ID] {
					seenAssistant[e.Message.ID] = true
					si.Messages++
				}
			}
		})
		if err != nil {
			continue // unreadable: not listed
		}
		if si.Messages == 0 {
			continue // nothing to resume
		}
		if si.Title == "" {
			si.Title = summary
		}
		if si.Title == "" {
			si.Title = si.FirstPrompt
		}
		out = append(out, si)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Modified > out[j].Modified })
	return out, nil
}

// firstLine is s's first non-empty line, cut to max runes.
func firstLine(s string, max int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			s = l
			break
		}
	}
	r := []rune(s)
	if len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// ReadHistory reads the prompts and answers of a session's transcript, in
// order: assistant blocks of one API message are merged, tool calls are
// listed as one-line summaries.
func ReadHistory(configDir, cwd, sessionID string) ([]HistoryMessage, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, `/\`) {
		return nil, fmt.Errorf("read history: bad session id %q", sessionID)
	}
	out := []HistoryMessage{}
	lastID := ""
	err := readTranscriptLines(TranscriptPath(configDir, cwd, sessionID), messageLine, func(e *transcriptEntry) {
		switch e.Type {
		case "user":
			if t := promptText(e); t != "" {
				out = append(out, HistoryMessage{Role: "user", Text: t, UUID: e.UUID})
				lastID = ""
			}
		case "assistant":
			if e.IsSidechain {
				return
			}
			var m *HistoryMessage
			if e.Message.ID != "" && e.Message.ID == lastID && len(out) > 0 {
				m = &out[len(out)-1]
			} else {
				out = append(out, HistoryMessage{Role: "assistant", UUID: e.UUID})
				m = &out[len(out)-1]
				lastID = e.Message.ID
			}
			for _, b := range parseContent(e.Message.Content) {
				switch b.Type {
				case "text":
					if m.Text != "" {
						m.Text += "\n\n"
					}
					m.Text += b.Text
				case "tool_use":
					m.Tools = append(m.Tools, ToolSummary(b.Name, b.Input))
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", sessionID, err)
	}
	return out, nil
}

// messageLine reports whether a transcript line may be a prompt or an
// answer: one whose type is "user" or "assistant" holds that JSON string,
// whatever its spacing; the other entries (API requests, snapshots,
// attachments, queue operations: a fifth of a long session's bytes) are
// not decoded.
func messageLine(line []byte) bool {
	return bytes.Contains(line, []byte(`"user"`)) || bytes.Contains(line, []byte(`"assistant"`))
}
