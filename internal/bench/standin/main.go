//go:build linux

// Command standin stands in for the Claude Code CLI in stream-json mode, for
// the chat benchmarks (internal/bench, scenarios 20–23): chatpanel runs it
// as the chat's CLI (the chat.cmd option) and it answers with the very
// lines the real CLI 2.1.331 wrote — testdata/stream.jsonl, recorded by
// TestRecord with the command line chatpanel uses — but with new text,
// written at a controlled rate.
//
// A prompt made by chatwire.Ask.Prompt ("stream n=2000 rate=200 seq=0")
// gets an answer of n text deltas at rate per second; any other prompt a
// short one. Every line of the recorded turn is replayed in order
// (command_lifecycle, system/init, system/status, the stream_events, the
// assistant message, the result), with the session id, the host's message
// uuid, a fresh message id and fresh event uuids put in; the recorded
// deltas are replaced by the new ones, and the assistant message and the
// result carry the new text. Before the result it appends to the file named
// by $NVIM_CLAUDE_STANDIN_LOG when each delta's line was written
// (chatwire.Log).
//
// Control requests: initialize gets the recorded answer (the real CLI's
// commands and models); interrupt stops the running answer's deltas (the
// rest of the turn follows as usual — the real CLI's interrupt shapes are
// not replayed); end_session ends the process; anything else is answered
// with an empty success. Like the CLI, it exits 0 when stdin closes, once
// the running turn is over, and 1 on a line that is not JSON.
package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nvim-claude/nvim-claude/internal/bench/chatwire"
)

//go:embed testdata/stream.jsonl
var recording []byte

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run is the stand-in; it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	sc, err := parseRecording(recording)
	if err != nil {
		fmt.Fprintln(stderr, "standin:", err)
		return 2
	}
	s := &standin{
		sc: sc, out: stdout, logPath: getenv(chatwire.LogEnv),
		subst: map[string]string{"$CWD": getenv("PWD"), "$CONFIG": getenv("CLAUDE_CONFIG_DIR"), "$HOME": getenv("HOME")},
		turns: make(chan turnReq, 64),
	}
	if wd, err := os.Getwd(); err == nil {
		s.subst["$CWD"] = wd
	}
	s.session = uuid.NewString()
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--resume", "--session-id":
			s.session = args[i+1]
		}
	}
	// The turn runner is owned by run: it ends when turns is closed (stdin
	// closed, end_session) and run waits for it.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for t := range s.turns {
			s.play(t)
		}
	}()
	code := s.read(stdin, stderr)
	close(s.turns)
	wg.Wait()
	return code
}

// standin is one stand-in process's state.
type standin struct {
	sc      *script
	session string
	subst   map[string]string // $CWD, $CONFIG, $HOME of the recording
	logPath string
	turns   chan turnReq

	wmu sync.Mutex // one line at a time
	out io.Writer

	abort atomic.Bool // interrupt: the running answer stops
}

// turnReq is a user message: its uuid and text.
type turnReq struct {
	uuid, text string
}

// read handles stdin until it closes (0), end_session (0) or a line that
// is not JSON (1, as the CLI).
func (s *standin) read(stdin io.Reader, stderr io.Writer) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 64<<20)
	for in.Scan() {
		var l struct {
			Type      string `json:"type"`
			UUID      string `json:"uuid"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
			Message *struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(in.Bytes(), &l); err != nil {
			fmt.Fprintf(stderr, "Error parsing streaming input line (%d chars): %v\n", len(in.Bytes()), err)
			return 1
		}
		switch l.Type {
		case "user":
			if l.Message == nil {
				fmt.Fprintln(stderr, "Error: Expected message role 'user', got 'undefined'")
				return 1
			}
			s.abort.Store(false)
			s.turns <- turnReq{uuid: l.UUID, text: contentText(l.Message.Content)}
		case "control_request":
			switch l.Request.Subtype {
			case "initialize":
				s.write(strings.Replace(s.sc.initResp, s.sc.initID, jsonString(l.RequestID), 1))
			case "interrupt":
				s.abort.Store(true)
				s.write(emptySuccess(l.RequestID))
			case "end_session":
				s.abort.Store(true)
				s.write(emptySuccess(l.RequestID))
				return 0
			default:
				s.write(emptySuccess(l.RequestID))
			}
		}
	}
	return 0
}

func emptySuccess(id string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":` + jsonString(id) + `,"response":{}}}`
}

// contentText is the text of a user message's content (a string or
// blocks).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// write writes one line and returns CLOCK_MONOTONIC (µs) just before it.
func (s *standin) write(line string) int64 {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t := chatwire.Mono()
	_, _ = io.WriteString(s.out, line+"\n")
	return t
}

// play answers one user message with the recorded turn.
func (s *standin) play(t turnReq) {
	ask, ok := chatwire.ParseAsk(t.text)
	if !ok {
		ask = chatwire.Ask{N: 8, Rate: 1000}
	}
	// What this turn puts in place of the recorded values.
	pairs := []string{s.sc.session, s.session, s.sc.hostUUID, t.uuid, s.sc.msgID, "msg_01" + strings.ReplaceAll(uuid.NewString(), "-", "")[:22]}
	for _, u := range s.sc.uuids {
		pairs = append(pairs, u, uuid.NewString())
	}
	for k, v := range s.subst {
		pairs = append(pairs, k, v)
	}
	turn := strings.NewReplacer(pairs...)
	var text string
	var written []int64
	for _, l := range s.sc.turn {
		line := turn.Replace(l.raw)
		switch l.kind {
		case lineDelta:
			if l.first {
				written, text = s.stream(line, turn.Replace(l.uuid), ask)
			}
			continue
		case lineText:
			line = strings.Replace(line, s.sc.textJSON, jsonString(text), 1)
		case lineResult:
			if s.logPath != "" {
				if err := (chatwire.Log{Seq: ask.Seq, N: len(written), Rate: ask.Rate, Written: written}).Append(s.logPath); err != nil {
					fmt.Fprintln(os.Stderr, "standin: log:", err)
				}
			}
			line = strings.Replace(line, s.sc.textJSON, jsonString(text), 1)
		}
		s.write(line)
	}
}

// stream writes the answer's deltas at ask.Rate per second (on a fixed
// schedule: a late line is followed at once by the ones due), each line the
// delta line tmpl with a fresh uuid in place of its id and the token in
// place of the recorded text.
func (s *standin) stream(tmpl, id string, ask chatwire.Ask) ([]int64, string) {
	var text strings.Builder
	i := strings.Index(tmpl, s.sc.deltaJSON)
	j := strings.Index(tmpl, id)
	if i < 0 || j < 0 {
		panic("standin: the delta template lost its text or uuid") // parseRecording checked both
	}
	written := make([]int64, 0, ask.N)
	interval := time.Duration(float64(time.Second) / ask.Rate)
	start := time.Now()
	var b strings.Builder
	for k := 0; k < ask.N && !s.abort.Load(); k++ {
		if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
			time.Sleep(d)
		}
		tok := ask.Token(k)
		text.WriteString(tok)
		b.Reset()
		// text before uuid in the recorded key order, or after it
		if i < j {
			b.WriteString(tmpl[:i])
			b.WriteString(jsonString(tok))
			b.WriteString(tmpl[i+len(s.sc.deltaJSON) : j])
			b.WriteString(uuid.NewString())
			b.WriteString(tmpl[j+len(id):])
		} else {
			b.WriteString(tmpl[:j])
			b.WriteString(uuid.NewString())
			b.WriteString(tmpl[j+len(id) : i])
			b.WriteString(jsonString(tok))
			b.WriteString(tmpl[i+len(s.sc.deltaJSON):])
		}
		written = append(written, s.write(b.String()))
	}
	return written, text.String()
}

// jsonString is s as a JSON string, without HTML escapes (as the CLI's
// JSON.stringify writes it).
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// lineKind is what the stand-in does with a recorded line.
type lineKind int

const (
	lineAsIs   lineKind = iota
	lineDelta           // a text delta: replaced by the new ones
	lineText            // the assistant message: carries the new text
	lineResult          // the result: carries the new text; the log goes first
)

// recLine is one recorded line of the turn.
type recLine struct {
	raw   string
	kind  lineKind
	first bool   // the first delta (where the new deltas go)
	uuid  string // the line's own uuid
}

// script is the recording, ready to replay.
type script struct {
	initResp string // the answer to initialize
	initID   string // its request_id, as JSON
	turn     []recLine
	session  string   // the recorded session id
	hostUUID string   // the recorded host message uuid
	msgID    string   // the recorded message id
	uuids    []string // every other uuid of the turn
	// textJSON is the recorded answer as a JSON string, deltaJSON the
	// first delta's text.
	textJSON, deltaJSON string
}

// parseRecording takes the first initialize answer and the first turn (the
// lines from the first user message to its command_lifecycle "completed")
// of a recording.
func parseRecording(raw []byte) (*script, error) {
	type entry struct {
		Dir  string          `json:"dir"`
		Line json.RawMessage `json:"line"`
	}
	type fields struct {
		Type      string `json:"type"`
		Subtype   string `json:"subtype"`
		UUID      string `json:"uuid"`
		SessionID string `json:"session_id"`
		State     string `json:"state"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
		Response struct {
			RequestID string `json:"request_id"`
		} `json:"response"`
		Event struct {
			Type    string `json:"type"`
			Message struct {
				ID string `json:"id"`
			} `json:"message"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		} `json:"event"`
		Message struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
		Result string `json:"result"`
	}
	sc := &script{}
	var initReq string
	inTurn, done := false, false
	for _, ln := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e entry
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			return nil, fmt.Errorf("recording: %w", err)
		}
		var f fields
		if err := json.Unmarshal(e.Line, &f); err != nil {
			return nil, fmt.Errorf("recording: %w", err)
		}
		switch {
		case e.Dir == "in" && f.Type == "control_request" && f.Request.Subtype == "initialize" && initReq == "":
			initReq = f.RequestID
		case e.Dir == "out" && f.Type == "control_response" && f.Response.RequestID == initReq && sc.initResp == "":
			sc.initResp = string(e.Line)
			sc.initID = jsonString(initReq)
		case e.Dir == "in" && f.Type == "user" && !inTurn && !done:
			inTurn, sc.hostUUID = true, f.UUID
		case e.Dir == "out" && inTurn:
			l := recLine{raw: string(e.Line), uuid: f.UUID}
			if f.SessionID != "" {
				sc.session = f.SessionID
			}
			switch {
			case f.Type == "stream_event" && f.Event.Type == "message_start":
				sc.msgID = f.Event.Message.ID
			case f.Type == "stream_event" && f.Event.Type == "content_block_delta" && f.Event.Delta.Type == "text_delta":
				l.kind = lineDelta
				if sc.deltaJSON == "" {
					l.first = true
					sc.deltaJSON = jsonString(f.Event.Delta.Text)
				}
			case f.Type == "assistant":
				l.kind = lineText
				if len(f.Message.Content) != 1 || f.Message.Content[0].Type != "text" {
					return nil, errors.New("recording: the assistant message is not one text block")
				}
				sc.textJSON = jsonString(f.Message.Content[0].Text)
			case f.Type == "result":
				l.kind = lineResult
			}
			if f.UUID != "" && f.UUID != sc.hostUUID {
				sc.uuids = append(sc.uuids, f.UUID)
			}
			sc.turn = append(sc.turn, l)
			if f.Type == "command_lifecycle" && f.State == "completed" {
				inTurn, done = false, true
			}
		}
	}
	switch {
	case sc.initResp == "":
		return nil, errors.New("recording: no answer to initialize")
	case !done:
		return nil, errors.New("recording: no complete turn")
	case sc.deltaJSON == "" || sc.textJSON == "" || sc.msgID == "" || sc.session == "":
		return nil, errors.New("recording: the turn has no text delta, assistant text, message id or session id")
	}
	// Every value to replace must be where the replay looks for it.
	for _, l := range sc.turn {
		switch {
		case l.kind == lineDelta && l.first && (!strings.Contains(l.raw, `"text":`+sc.deltaJSON) || l.uuid == "" || !strings.Contains(l.raw, l.uuid)):
			return nil, errors.New("recording: the first delta's text or uuid is not found in its line")
		case (l.kind == lineText || l.kind == lineResult) && !strings.Contains(l.raw, sc.textJSON):
			return nil, errors.New("recording: the answer's text is not found in the assistant message or the result")
		}
	}
	// Any other uuid in the turn (in user_message_uuids, …) is replaced
	// too: each recorded uuid gets a fresh one per turn.
	uuidRE := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	known := map[string]bool{sc.session: true, sc.hostUUID: true}
	for _, u := range sc.uuids {
		known[u] = true
	}
	for _, l := range sc.turn {
		for _, u := range uuidRE.FindAllString(l.raw, -1) {
			if !known[u] {
				known[u] = true
				sc.uuids = append(sc.uuids, u)
			}
		}
	}
	return sc, nil
}
