package reviewq

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// projectDirName is the directory the CLI keeps a project's session
// transcripts in, under <config dir>/projects: the project's path with
// every character but a letter or a digit made "-".
func projectDirName(cwd string) string {
	return nonAlnum.ReplaceAllString(cwd, "-")
}

var nonAlnum = regexp.MustCompile(`[^a-zA-Z0-9]`)

// record is the part of one transcript line the queue reads.
type record struct {
	Type        string `json:"type"`
	UUID        string `json:"uuid"`
	SessionID   string `json:"sessionId"`
	PromptID    string `json:"promptId"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	Entrypoint  string `json:"entrypoint"` // "cli": a terminal; "sdk-cli": a chat (stream-json)
	Message     struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
}

// writeResult is an Edit, MultiEdit or Write result as the CLI records it.
type writeResult struct {
	Type         string          `json:"type"` // Write: "create" or "update"
	FilePath     string          `json:"filePath"`
	Content      *string         `json:"content"`
	OriginalFile json.RawMessage `json:"originalFile"` // absent, null (a new file) or the text
	OldString    *string         `json:"oldString"`
	NewString    *string         `json:"newString"`
	ReplaceAll   bool            `json:"replaceAll"`
	UserModified bool            `json:"userModified"`
}

// change is one write of Claude's the transcript told of.
type change struct {
	session string
	path    string
	before  *string // nil: the file did not exist
	after   *string // nil: read the file (the record does not say)
}

// isPrompt reports a user record that is a prompt, not a tool's result.
func (r *record) isPrompt() bool {
	if r.Type != "user" || r.IsMeta || r.IsSidechain {
		return false
	}
	c := bytes.TrimSpace(r.Message.Content)
	if len(c) > 0 && c[0] == '"' {
		return true
	}
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(c, &parts) != nil || len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if p.Type == "tool_result" {
			return false
		}
	}
	return true
}

// change reads a write of Claude's from a record, if it is one.
func (r *record) change() (change, bool) {
	if r.Type != "user" || len(r.ToolUseResult) == 0 || r.ToolUseResult[0] != '{' {
		return change{}, false
	}
	var w writeResult
	if json.Unmarshal(r.ToolUseResult, &w) != nil || w.FilePath == "" || !filepath.IsAbs(w.FilePath) {
		return change{}, false
	}
	c := change{session: r.SessionID, path: filepath.Clean(w.FilePath)}
	orig := bytes.TrimSpace(w.OriginalFile)
	switch {
	case w.Type == "create":
		// before stays nil
	case len(orig) == 0:
		return change{}, false // a result without the text before: not a write
	case string(orig) == "null":
		if w.Type != "update" {
			return change{}, false
		}
	default:
		var s string
		if json.Unmarshal(orig, &s) != nil {
			return change{}, false
		}
		c.before = &s
	}
	switch {
	case (w.Type == "create" || w.Type == "update") && w.Content != nil:
		c.after = w.Content
	case w.OldString != nil && w.NewString != nil && !w.UserModified && c.before != nil:
		n := 1
		if w.ReplaceAll {
			n = -1
		}
		s := strings.Replace(*c.before, *w.OldString, *w.NewString, n)
		c.after = &s
	}
	return c, true
}

// tail is one transcript file being read.
type tail struct {
	off  int64
	part []byte // an unfinished last line
	live bool   // a line was read from it since the queue started
}

// readNew reads what was appended to path since t.off and returns its
// complete lines.
func (t *tail) readNew(path string, size int64) [][]byte {
	if size < t.off { // rewritten from the start
		t.off, t.part = 0, nil
	}
	if size == t.off {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, size-t.off)
	n, err := f.ReadAt(buf, t.off)
	if err != nil && err != io.EOF {
		return nil
	}
	buf = buf[:n]
	t.off += int64(n)
	data := append(t.part, buf...)
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 {
		t.part = data
		return nil
	}
	t.part = append([]byte(nil), data[last+1:]...)
	return bytes.Split(data[:last], []byte("\n"))
}
