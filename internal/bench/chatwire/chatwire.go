//go:build linux

// Package chatwire is what the chat benchmarks (internal/bench) and their
// stand-in CLI (internal/bench/standin) share: the prompt that asks the
// stand-in for an answer ([Ask]), the answer's text, made of numbered
// marker words that a screen reader can find ([Token], [Markers]), and the
// stand-in's log of when it wrote each piece ([Log]).
package chatwire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// LogEnv names the environment variable that tells the stand-in where to
// append its [Log]s.
const LogEnv = "NVIM_CLAUDE_STANDIN_LOG"

// Ask is what a prompt asks the stand-in for: an answer of N text deltas
// (stream_event content_block_delta lines), written at Rate per second,
// whose markers are numbered from Seq.
type Ask struct {
	N    int
	Rate float64
	Seq  int
}

// Prompt is the user message that asks for a.
func (a Ask) Prompt() string {
	return fmt.Sprintf("stream n=%d rate=%g seq=%d", a.N, a.Rate, a.Seq)
}

// ParseAsk reads a prompt made by [Ask.Prompt].
func ParseAsk(text string) (Ask, bool) {
	var a Ask
	f := strings.Fields(text)
	if len(f) != 4 || f[0] != "stream" {
		return a, false
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "n":
			a.N, err = strconv.Atoi(v)
		case "rate":
			a.Rate, err = strconv.ParseFloat(v, 64)
		case "seq":
			a.Seq, err = strconv.Atoi(v)
		default:
			return a, false
		}
		if err != nil {
			return a, false
		}
	}
	return a, a.N > 0 && a.Rate > 0
}

// Marker is the word that numbers a delta: "w" and the number.
func Marker(n int) string { return "w" + strconv.Itoa(n) }

// Token is the text of the i-th delta of a: its marker (sometimes **bold**
// or `code`) and what follows it, markdown as an answer has it: words,
// paragraphs of 16 words, a bullet list every 50 words, a fenced Lua block
// every 200.
func (a Ask) Token(i int) string {
	m := Marker(a.Seq + i)
	switch {
	case i%7 == 3:
		m = "**" + m + "**"
	case i%11 == 5:
		m = "`" + m + "`"
	}
	switch {
	case i%200 == 199:
		return m + "\n\n```lua\nlocal n = " + strconv.Itoa(i) + "\nreturn n * 2\n```\n\n"
	case i%50 == 39:
		return m + ":\n\n- "
	case i%50 > 39 && i%50 < 49:
		return m + "\n- "
	case i%50 == 49, i%16 == 15:
		return m + "\n\n"
	}
	return m + " "
}

// Text is the whole answer: every token, in order.
func (a Ask) Text() string {
	var b strings.Builder
	for i := 0; i < a.N; i++ {
		b.WriteString(a.Token(i))
	}
	return b.String()
}

// Markers calls fn with the number of every marker in s: a "w" that does
// not follow a letter or digit, and the digits after it.
func Markers(s string, fn func(n int)) {
	for i := 0; i < len(s); i++ {
		if s[i] != 'w' || (i > 0 && isAlnum(s[i-1])) {
			continue
		}
		j := i + 1
		n := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			n = n*10 + int(s[j]-'0')
			j++
		}
		if j > i+1 && (j == len(s) || !isAlnum(s[j])) {
			fn(n)
		}
		i = j - 1
	}
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// Log is the stand-in's record of one answer: when it began writing each
// delta's line to stdout.
type Log struct {
	Seq  int     `json:"seq"`
	N    int     `json:"n"`
	Rate float64 `json:"rate"`
	// Written holds, per delta, CLOCK_MONOTONIC in µs (see [Mono]) just
	// before its line was written.
	Written []int64 `json:"written"`
}

// Append adds l to the log file at path (one JSON line per answer).
func (l Log) Append(path string) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// FindLog reads the log file at path and returns the answer whose markers
// start at seq.
func FindLog(path string, seq int) (Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var l Log
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Seq == seq {
			return l, nil
		}
	}
	if err := sc.Err(); err != nil {
		return Log{}, err
	}
	return Log{}, fmt.Errorf("%s has no answer for seq %d", path, seq)
}

// Mono is CLOCK_MONOTONIC in µs: the clock of Neovim's vim.uv.hrtime() and
// of the bench, across processes.
func Mono() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return time.Now().UnixMicro()
	}
	return ts.Nano() / 1e3
}
