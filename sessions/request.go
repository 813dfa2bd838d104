package sessions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nvim-claude/nvim-claude/display"
)

// Request is what a waiting session asks to be allowed, as the panel and
// :ClaudeAnswer show it: what is allowed must be what is seen. A
// multi-line command says how many lines it has, runs of blank lines are
// collapsed visibly, its end is always shown (a long input loses lines in
// the middle, said so), and the model's description goes next to the
// command, never instead of it.
type Request struct {
	Tool string `json:"tool"`
	// RequestID is a chat's can_use_tool request id, or the id of a
	// terminal's prompt that Neovim can answer (sessions.answer); "" for
	// a terminal's prompt answered in the terminal only.
	RequestID string `json:"request_id,omitempty"`
	// Kind is "plan" for a plan to approve (ExitPlanMode), else "".
	Kind string `json:"kind,omitempty"`
	// Lines are the input, displayable.
	Lines []string `json:"lines"`
	// LineCount is how many lines the input has.
	LineCount   int    `json:"line_count"`
	Description string `json:"description,omitempty"`
	// Summary is the request on one line (what a notice says).
	Summary string `json:"summary"`
	// Whole: Lines show all of the input (no line cut, none left out).
	Whole bool `json:"whole"`
	// Fits: Summary shows all of the input (a one-line input that fits):
	// only then may a view that shows the summary alone allow it.
	Fits bool `json:"fits"`
}

// The shape of a request as shown.
const (
	requestWidth   = 200 // characters of one line of the input (longer: wrapped)
	requestHead    = 20  // lines kept from the start of a long input
	requestTail    = 10  // and from its end
	summaryFirst   = 80  // characters of the first line in the summary
	summaryLast    = 60  // and of the last
	summaryDescMax = 100 // and of the description
	maxDescription = 1000
)

// MaxRequestText bounds the input text a hook sends: a longer one keeps
// its start and its end (CutText).
const MaxRequestText = 4000

// RequestText is the text of a tool's input that a permission shows, and
// the model's description of it: a command, a file, a URL, a pattern,
// followed by a line for each other field that is set (a flag such as
// Bash's dangerouslyDisableSandbox, an MCP tool's method or body: what is
// allowed is what is shown), or else the input's fields — never a file's
// contents.
func RequestText(input json.RawMessage) (text, description string) {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil || m == nil {
		return strings.TrimSpace(string(input)), ""
	}
	description, _ = m["description"].(string)
	for _, k := range []string{"command", "file_path", "notebook_path", "url", "pattern", "query", "prompt"} {
		if v, ok := m[k].(string); ok {
			shown := map[string]bool{k: true, "timeout": true}
			if k == "pattern" {
				if p, ok := m["path"].(string); ok && p != "" {
					v += " in " + p
					shown["path"] = true
				}
			}
			if rest := fields(m, shown, true); rest != "" {
				v += "\n" + rest
			}
			return v, description
		}
	}
	return fields(m, nil, false), description
}

// fields is a line "key: value" for each field of m, sorted, but for those
// in skip, the model's description and a file's contents (and, setOnly,
// those left at false, 0, "" or null).
func fields(m map[string]any, skip map[string]bool, setOnly bool) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		switch k {
		case "description", "content", "old_string", "new_string", "edits", "new_source":
			continue // what the model says of it, or a file's contents
		}
		if skip[k] || setOnly && (v == nil || v == false || v == "" || v == float64(0)) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		v, _ := json.Marshal(m[k])
		if s, ok := m[k].(string); ok {
			v = []byte(s)
		}
		b.WriteString(k + ": " + string(v))
	}
	return b.String()
}

// CutText keeps the start and the end of a text longer than max bytes,
// with a line in between that says how much was left out; it returns the
// text and whether it was cut.
func CutText(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	head, tail := s[:max/2], s[len(s)-max/2:]
	head = strings.ToValidUTF8(head, "")
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return head + "\n… " + strconv.Itoa(len(s)-len(head)-len(tail)) + " bytes left out …\n" + tail, true
}

// newRequest is the request of tool with input text (cut: the text lost
// its middle on the way; lines: the lines the whole input has, 0: count
// them in text).
func newRequest(tool, text, desc string, cut bool, lines int) *Request {
	text = strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	raw := strings.Split(text, "\n")
	if lines <= 0 {
		lines = len(raw)
	}
	r := &Request{Tool: display.Line(tool, maxTool), LineCount: lines, Whole: !cut,
		Description: display.Line(strings.TrimSpace(desc), maxDescription)}
	// a long line is wrapped, not cut: its end is what it runs
	for _, l := range display.Lines(text, 0, 0) {
		rs := []rune(l)
		for i := 0; i == 0 || i < len(rs); i += requestWidth {
			chunk := string(rs[i:min(i+requestWidth, len(rs))])
			if i > 0 {
				chunk = "↪ " + chunk
			}
			r.Lines = append(r.Lines, chunk)
		}
	}
	if n := len(r.Lines); n > requestHead+requestTail+1 {
		kept := append([]string{}, r.Lines[:requestHead]...)
		kept = append(kept, fmt.Sprintf("… %d more lines …", n-requestHead-requestTail))
		r.Lines = append(kept, r.Lines[n-requestTail:]...)
		r.Whole = false
	}
	first, last := "", ""
	for _, l := range raw {
		if strings.TrimSpace(l) != "" {
			if first == "" {
				first = l
			}
			last = l
		}
	}
	r.Summary = display.Line(strings.TrimSpace(first), summaryFirst)
	if lines > 1 {
		r.Summary += fmt.Sprintf(" … (%d lines; the last: %s)", lines, tail(strings.TrimSpace(last), summaryLast))
	} else if shown := display.Line(strings.TrimSpace(first), 0); utf8.RuneCountInString(shown) > summaryFirst {
		r.Summary += fmt.Sprintf(" (%d characters; the end: %s)", utf8.RuneCountInString(shown), tail(first, summaryLast))
	}
	r.Fits = r.Whole && lines == 1 && utf8.RuneCountInString(display.Line(text, 0)) <= summaryFirst
	if r.Description != "" {
		r.Summary += " — " + display.Line(r.Description, summaryDescMax)
	}
	return r
}

// tail is the end of s, displayable, at most n characters ("…" first when
// cut).
func tail(s string, n int) string {
	rs := []rune(display.Line(s, 0))
	if len(rs) <= n {
		return string(rs)
	}
	return "…" + string(rs[len(rs)-n+1:])
}

// waiting is what a session waiting on r shows (Session.Waiting).
func (r *Request) waiting() string {
	if r.Summary == "" {
		return r.Tool
	}
	return display.Line(r.Tool+": "+r.Summary, maxWaiting)
}
