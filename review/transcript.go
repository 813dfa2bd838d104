package review

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxLine is the longest transcript line the queue reads (a record is one
// line). The largest legitimate records are Edit and Write results: they
// hold the file's whole text before the write and, for a Write, after it,
// JSON-escaped (a control character or a quote takes two to six bytes).
// 32 MiB holds those of a file of about 10 MB with room to spare — larger
// than anything the model writes in one turn or a source file it edits —
// while a line that never ends costs the host at most this much. A longer
// line is skipped (and logged): its file is not listed.
const MaxLine = 32 << 20

// readChunk is how much of a transcript is read at a time: what the reader
// holds besides the unfinished line.
const readChunk = 64 << 10

// projectDirName is the directory the CLI keeps a project's session
// transcripts in, under <config dir>/projects: the project's path with
// every character but a letter or a digit made "-".
func projectDirName(cwd string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, cwd)
}

// record is the part of one transcript line the queue reads.
type record struct {
	Type        string `json:"type"`
	UUID        string `json:"uuid"`
	SessionID   string `json:"sessionId"`
	PromptID    string `json:"promptId"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	Entrypoint  string `json:"entrypoint"` // "cli": a terminal; "sdk-cli": a chat (stream-json)
	Timestamp   string `json:"timestamp"`  // RFC 3339; kept when the CLI copies a session's records
	Cwd         string `json:"cwd"`        // the CLI's directory when it wrote the record
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
	// A path with ".." is kept as written: cleaned, it could name another
	// file than the one the CLI reached (through a symlink), and as it is
	// the boundary refuses it.
	path := w.FilePath
	if !hasDotDot(path) {
		path = filepath.Clean(path)
	}
	c := change{session: r.SessionID, path: path}
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
	case w.OldString != nil && w.NewString != nil && !w.UserModified && c.before != nil &&
		strings.Contains(*c.before, *w.OldString):
		// (Not there as it is: the CLI matched it after normalizing
		// quotes or line ends; the file says what it wrote.)
		n := 1
		if w.ReplaceAll {
			n = -1
		}
		s := strings.Replace(*c.before, *w.OldString, *w.NewString, n)
		c.after = &s
	}
	return c, true
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// inProject reports whether a record written in cwd belongs to the
// project at dir (or dir's resolved path): cwd is the project or below it
// (the CLI's shell may have changed into a subdirectory). Two projects can
// share a transcript directory (/x/a-b and /x/a/b are both -x-a-b): the
// record's own cwd tells them apart. A record without one is no project's.
func inProject(cwd, dir string) bool {
	if cwd == "" || !filepath.IsAbs(cwd) || dir == "" {
		return false
	}
	cwd, dir = filepath.Clean(cwd), filepath.Clean(dir)
	if insideDir(cwd, dir) {
		return true
	}
	real, err := filepath.EvalSymlinks(dir)
	return err == nil && real != dir && insideDir(cwd, real)
}

func insideDir(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// tail is one transcript file being read.
type tail struct {
	off  int64
	part []byte // an unfinished last line (at most the cap)
	skip bool   // the line being read is over the cap: dropped to its end
	live bool   // a line was read from it since the queue started
	held int    // the most bytes held at once (the unfinished line and a chunk)
}

// readNew reads what was appended to path since t.off, a chunk at a time,
// and hands each complete line of at most limit bytes to line. A longer
// line is dropped as it comes (over is told the bytes seen when it went
// over), so what is held never exceeds limit and a chunk, whatever is
// appended.
func (t *tail) readNew(path string, size int64, limit int, line func([]byte), over func(n int)) {
	if size < t.off { // rewritten from the start
		t.off, t.part, t.skip = 0, nil, false
	}
	if size == t.off {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, min(readChunk, limit+1))
	for t.off < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-t.off)], t.off)
		if n == 0 {
			return
		}
		t.held = max(t.held, len(t.part)+len(buf))
		chunk := buf[:n]
		t.off += int64(n)
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			piece := chunk
			if i >= 0 {
				piece, chunk = chunk[:i], chunk[i+1:]
			} else {
				chunk = nil
			}
			switch {
			case t.skip:
			case len(t.part)+len(piece) > limit:
				over(len(t.part) + len(piece))
				t.part, t.skip = nil, true
			case i >= 0 && len(t.part) == 0:
				line(piece)
			default:
				t.part = append(t.part, piece...)
				if i >= 0 {
					line(t.part)
					t.part = nil
				}
			}
			if i >= 0 {
				t.skip = false
			}
		}
		if err != nil && err != io.EOF {
			return
		}
	}
}
