//go:build unix

package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// Dictation: no microphone. The recorder is a script standing in
// for pw-record/arecord (dictation.recorder.cmd): it copies a WAV made
// beforehand to the output path, then records "silence" until it is
// stopped (SIGINT, as the plugin stops a real recorder). The engine is a
// fake that prints known text (exact assertions), or the real PocketSphinx
// on sentences spoken by espeak-ng.

// dictRecorder writes the stand-in recorder: `rec SRC OUT`. The trap runs
// once cp has finished (sh defers traps until the foreground command
// ends), so a stop never leaves half a file; with "once" it exits by
// itself after the copy, as a recorder reaching the end of its input.
func dictRecorder(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "rec")
	script := `#!/bin/sh
trap 'exit 0' INT TERM
cp "$1" "$2" || exit 1
[ "$3" = once ] && exit 0
while :; do sleep 0.1; done
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// silentWAV writes a 16 kHz mono 16-bit WAV of n samples of silence.
func silentWAV(t *testing.T, path string, n int) {
	t.Helper()
	b := make([]byte, 44+2*n)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], 16000)
	binary.LittleEndian.PutUint32(b[28:], 32000)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dictFakeEngine prints its text in two lines (two partial results), with
// a CR and an escape sequence in it: what reaches the prompt must be one
// clean line (a CR would submit the terminal's prompt). It refuses a file
// that is not a WAV, and records the file's mode for the test.
func dictFakeEngine(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "engine")
	script := `#!/bin/sh
[ "$(head -c 4 "$1")" = RIFF ] || { echo "not a WAV: $1" >&2; exit 3; }
stat -c %a "$1" > "$(dirname "$0")/mode"
stat -c %a "$(dirname "$1")" >> "$(dirname "$0")/mode"
printf 'list the\rfiles\r\n'
printf ' in this \033[31mdirectory\n'
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const dictEvents = `_G.dict = {}
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeDictation", callback = function(ev)
  table.insert(_G.dict, ev.data)
end })`

type dictEvent struct {
	State    string `json:"state"`
	Target   string `json:"target"`
	Text     string `json:"text"`
	Error    string `json:"error"`
	Recorder string `json:"recorder"`
	Engine   string `json:"engine"`
}

func dictEventsOf(t *testing.T, e *editor) []dictEvent {
	t.Helper()
	var evs []dictEvent
	e.Eval(t, `return _G.dict`, &evs)
	return evs
}

func dictStates(evs []dictEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.State)
	}
	return strings.Join(s, " ")
}

// waitDict waits for an event of one of the states (the last one seen).
func waitDict(t *testing.T, e *editor, states ...string) dictEvent {
	t.Helper()
	var cond []string
	for _, s := range states {
		cond = append(cond, fmt.Sprintf(`e.state == %q`, s))
	}
	e.WaitFor(t, 30*time.Second,
		`(function() for _, e in ipairs(_G.dict) do if `+strings.Join(cond, " or ")+` then return true end end end)()`,
		`return { events = _G.dict, notes = _G.notes, state = require("claude.dictation").state() }`,
		"dictation to reach "+strings.Join(states, "/"))
	evs := dictEventsOf(t, e)
	for i := len(evs) - 1; i >= 0; i-- {
		for _, s := range states {
			if evs[i].State == s {
				return evs[i]
			}
		}
	}
	t.Fatal("unreachable")
	return dictEvent{}
}

// dictEditor is Neovim with the chat UI stubbed (chat_ui_test.go), the
// dictation options in extra, and XDG_CACHE_HOME (where recordings go) in
// a directory of the test's own.
type dictEditor struct {
	*chatUI
	cache string
}

func startDictation(t *testing.T, extra string) *dictEditor {
	t.Helper()
	return startDictationWith(t, extra, true)
}

// startDictationWith: chat false leaves the chat unstubbed (the stub
// replaces the server's requests: :ClaudeStart needs the real ones); env
// is more of Neovim's environment (a PATH of stand-in recorders).
func startDictationWith(t *testing.T, extra string, chat bool, env ...string) *dictEditor {
	t.Helper()
	cache := t.TempDir()
	e := startEditor(t, editorOpts{extra: extra, nvim: append([]string{"XDG_CACHE_HOME=" + cache}, env...)})
	var ok bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &ok)
	if !ok {
		t.Skip("dictation needs Neovim 0.8+ (see TestDictationNeedsNeovim08)")
	}
	e.Exec(t, captureNotify)
	if chat {
		e.Exec(t, chatStub)
	}
	e.Exec(t, dictEvents)
	return &dictEditor{chatUI: &chatUI{e}, cache: cache}
}

// fakeDictOpts are the dictation options of a stand-in recorder that
// copies wav and the fake engine, both made in dir.
func fakeDictOpts(t *testing.T, dir, wav string) string {
	t.Helper()
	return fmt.Sprintf(`dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		dictRecorder(t, dir), wav, dictFakeEngine(t, dir))
}

// startFakeDictation is startDictation with the stand-in recorder of a
// second of silence (speech.wav in dir) and the fake engine.
func startFakeDictation(t *testing.T) (d *dictEditor, dir, wav string) {
	t.Helper()
	dir = t.TempDir()
	wav = filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	return startDictation(t, ", "+fakeDictOpts(t, dir, wav)), dir, wav
}

// recordings lists the recordings' directories left in the cache.
func (d *dictEditor) recordings(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(d.cache, "nvim", "nvim-claude-dictation", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitAudio waits until the stand-in recorder has written its file (a stop
// before that would find a recorder that wrote nothing: an error).
func (d *dictEditor) waitAudio(t *testing.T) {
	t.Helper()
	d.WaitFor(t, 10*time.Second, `(function() local s = require("claude.dictation").state() local st = s and (vim.uv or vim.loop).fs_stat(s.file) return st and st.size > 44 end)()`,
		`return require("claude.dictation").state()`, "the recorder to write")
}

func (d *dictEditor) noRecordings(t *testing.T) {
	t.Helper()
	if r := d.recordings(t); len(r) != 0 {
		t.Errorf("recordings left behind: %v", r)
	}
}

func (d *dictEditor) promptText(t *testing.T) string {
	t.Helper()
	var buf int
	d.Eval(t, `return require("claude.chat").get("1").pbuf`, &buf)
	return d.Lines(t, buf)
}

// A fake engine, the chat prompt: <C-g> starts, the indicator shows, the
// file is private, <C-g> stops; the words land at the cursor exactly, as
// one clean line; the events come in order; nothing is left behind.
func TestDictationChatPrompt(t *testing.T) {
	d, dir, _ := startFakeDictation(t)
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, { "please now" }) vim.api.nvim_win_set_cursor(0, { 1, 6 }) vim.cmd("startinsert")`)
	d.feed(t, "<C-g>")
	waitDict(t, d.editor, "started")
	var st struct {
		Phase  string `json:"phase"`
		Target string `json:"target"`
		File   string `json:"file"`
		Bar    string `json:"bar"`
	}
	d.Eval(t, `local s = require("claude.dictation").state() or {}
return { phase = s.phase, target = s.target, file = s.file, bar = vim.wo.winbar }`, &st)
	if st.Phase != "recording" || st.Target != "chat" || !strings.Contains(st.Bar, "REC") {
		t.Fatalf("while recording: %+v notes %v", st, d.notes(t))
	}
	fi, err := os.Stat(st.File)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(filepath.Dir(st.File))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("recording %s mode %v, its directory %v; want 0600 in 0700", st.File, fi.Mode().Perm(), di.Mode().Perm())
	}
	d.waitAudio(t)
	d.feed(t, "<C-g>")
	done := waitDict(t, d.editor, "done", "error")
	if done.State != "done" || done.Text != "list the files in this directory" || done.Target != "chat" {
		t.Fatalf("end event %+v; notes %v", done, d.notes(t))
	}
	if got, want := d.promptText(t), "please list the files in this directory now"; got != want {
		t.Errorf("prompt = %q, want %q", got, want)
	}
	if got, want := dictStates(dictEventsOf(t, d.editor)), "started stopped transcribing partial partial done"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if evs := dictEventsOf(t, d.editor); len(evs) > 4 && evs[3].Text != "list the files" {
		t.Errorf("first partial %+v", evs[3])
	}
	mode, err := os.ReadFile(filepath.Join(dir, "mode"))
	if err != nil || string(mode) != "600\n700\n" {
		t.Errorf("the engine saw modes %q (%v), want 600 then 700", mode, err)
	}
	var after struct {
		Bar   string `json:"bar"`
		Maps  int    `json:"maps"`
		State any    `json:"state"`
	}
	d.Eval(t, `local n = 0
for _, m in ipairs(vim.api.nvim_buf_get_keymap(0, "i")) do if m.lhs == "<Esc>" then n = n + 1 end end
return { bar = vim.wo.winbar, maps = n, state = require("claude.dictation").state() }`, &after)
	if strings.Contains(after.Bar, "REC") || strings.Contains(after.Bar, "transcribing") || after.Maps != 0 || after.State != nil {
		t.Errorf("after dictation: %+v (the indicator, the <Esc> mapping and the session must go)", after)
	}
	d.noRecordings(t)
	if ns := d.notes(t); len(ns) != 0 {
		t.Errorf("notes %v", ns)
	}
}

// In Normal mode the words go after the character under the cursor (as
// with "a"), a multibyte one included; at the end of the line too.
func TestDictationNormalModeCursor(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}", "once" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		dictRecorder(t, dir), wav, dictFakeEngine(t, dir)))
	d.open(t)
	d.focus(t, "1", "p")
	for _, c := range []struct {
		line string
		col  int
		want string
	}{
		{"café: ok", 3, "café list the files in this directory: ok"}, // on "é" (bytes 3-4)
		{"then", 3, "then list the files in this directory"},
		{"", 0, "list the files in this directory"},
	} {
		d.Exec(t, `_G.dict = {} vim.cmd("stopinsert") vim.api.nvim_buf_set_lines(0, 0, -1, false, { (select(1, ...)) }) vim.api.nvim_win_set_cursor(0, { 1, (select(2, ...)) })`, c.line, c.col)
		d.Exec(t, `vim.cmd("ClaudeDictate")`)
		if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" {
			t.Fatalf("%+v", ev)
		}
		if got := d.promptText(t); got != c.want {
			t.Errorf("%q at %d: prompt %q, want %q", c.line, c.col, got, c.want)
		}
	}
}

// termEcho is a stand-in CLI in a raw terminal: it prints, after each read,
// everything it has received so far in brackets, control characters
// escaped, so a CR (a submit) or an escape sequence would show.
func termEcho(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "fake-claude")
	script := `#!/usr/bin/env python3
import os, sys, tty
tty.setraw(0)
os.write(1, b"READY\r\n")
got = b""
while True:
    b = os.read(0, 4096)
    if not b:
        break
    got += b
    os.write(1, b"GOT: [" + got.decode("latin-1").encode("unicode_escape") + b"]\r\n")
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// startTerminal runs :ClaudeStart with cli and waits for want on its screen.
func (d *dictEditor) startTerminal(t *testing.T, want string) status {
	t.Helper()
	d.Exec(t, `vim.cmd("ClaudeStart")`)
	st := d.status(t)
	if !st.Running || st.Terminal == nil {
		t.Fatalf(":ClaudeStart: %+v notes %v", st, d.notes(t))
	}
	killOnCleanup(t, st.Terminal.PID)
	killOnCleanup(t, d.hostPID(t))
	d.waitScreen(t, st.Terminal.Bufnr, want)
	return st
}

func (d *dictEditor) waitScreen(t *testing.T, buf int, want string) {
	t.Helper()
	d.WaitFor(t, 60*time.Second, fmt.Sprintf(`table.concat(vim.api.nvim_buf_get_lines(%d, 0, -1, false), "\n"):find(%q, 1, true)`, buf, want),
		fmt.Sprintf(`return vim.api.nvim_buf_get_lines(%d, 0, -1, false)`, buf), fmt.Sprintf("the terminal to show %q", want))
}

// A fake engine, the Claude terminal: <C-g> in Terminal mode starts, <Esc>
// stops; the text is typed into the CLI's input without a CR.
func TestDictationTerminal(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	d := startDictationWith(t, fmt.Sprintf(`, terminal_cmd = { %q }, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		termEcho(t, dir), dictRecorder(t, dir), wav, dictFakeEngine(t, dir)), false)
	st := d.startTerminal(t, "READY")
	d.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("startinsert")`, st.Terminal.Bufnr)
	d.feed(t, "<C-g>")
	started := waitDict(t, d.editor, "started", "error")
	if started.State != "started" || started.Target != "terminal" {
		t.Fatalf("start: %+v notes %v", started, d.notes(t))
	}
	barOf := `return vim.wo[vim.fn.win_findbuf(...)[1]].winbar`
	d.WaitFor(t, 10*time.Second, `vim.wo[vim.fn.win_findbuf(`+strconv.Itoa(st.Terminal.Bufnr)+`)[1]].winbar:find("REC", 1, true)`, strings.Replace(barOf, "...", strconv.Itoa(st.Terminal.Bufnr), 1), "the indicator")
	d.waitAudio(t)
	d.feed(t, "<Esc>")
	done := waitDict(t, d.editor, "done", "error")
	if done.State != "done" {
		t.Fatalf("end: %+v notes %v", done, d.notes(t))
	}
	d.waitScreen(t, st.Terminal.Bufnr, "GOT: [")
	screen := d.Lines(t, st.Terminal.Bufnr)
	var got []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "GOT: ") {
			got = append(got, l)
		}
	}
	if want := "GOT: [list the files in this directory]"; len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("the CLI received %q, want %q (no CR, no escape); screen:\n%s", got, want, screen)
	}
	var bar string
	d.Eval(t, barOf, &bar, st.Terminal.Bufnr)
	if bar != "" {
		t.Errorf("the terminal's winbar after dictation: %q, want its own (empty)", bar)
	}
	// <Esc> went back to the terminal: no mapping of ours is left.
	var maps int
	d.Eval(t, `local n = 0
for _, m in ipairs(vim.api.nvim_buf_get_keymap(..., "t")) do if m.lhs == "<Esc>" or m.lhs == "<C-C>" then n = n + 1 end end
return n`, &maps, st.Terminal.Bufnr)
	if maps != 0 {
		t.Errorf("%d dictation mappings left in the terminal", maps)
	}
	d.noRecordings(t)
}

// Cancel (<C-c> while recording, :ClaudeDictate cancel while the engine
// runs) discards: no text, the recorder and engine gone, no file left.
func TestDictationCancel(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	// An engine that never finishes by itself (its pid in a file).
	slow := filepath.Join(dir, "slow-engine")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\necho $$ > \"$(dirname \"$0\")/engine.pid\"\necho partial words\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		dictRecorder(t, dir), wav, slow))
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("startinsert")`)

	// 1. While recording.
	d.feed(t, "<C-g>")
	waitDict(t, d.editor, "started")
	var recPID int
	d.Eval(t, `return vim.fn.jobpid(require("claude.dictation")._session().rec)`, &recPID)
	killOnCleanup(t, recPID)
	d.feed(t, "<C-c>")
	waitDict(t, d.editor, "cancelled")
	waitGone(t, recPID, "the recorder")
	d.noRecordings(t)
	// The chat's own <C-c> (interrupt) is back, in both modes, and works.
	var descs []string
	d.Eval(t, `local out = {}
for _, m in ipairs({ "n", "i" }) do
  for _, k in ipairs(vim.api.nvim_buf_get_keymap(0, m)) do
    if k.lhs == "<C-C>" then table.insert(out, m .. ":" .. (k.desc or "")) end
  end
end
return out`, &descs)
	if strings.Join(descs, ",") != "n:nvim-claude: interrupt the turn,i:nvim-claude: interrupt the turn" {
		t.Errorf("<C-c> mappings after dictation: %q", descs)
	}
	before := len(d.reqs(t, "chat_interrupt"))
	d.feed(t, "<C-c>")
	if after := len(d.reqs(t, "chat_interrupt")); after != before+1 {
		t.Errorf("<C-c> after dictation sent %d interrupts, want 1 (requests %v)", after-before, d.reqs(t, ""))
	}

	// 2. While transcribing.
	d.Exec(t, `_G.dict = {}`)
	d.feed(t, "<C-g>")
	waitDict(t, d.editor, "started")
	d.waitAudio(t)
	d.feed(t, "<C-g>")
	waitDict(t, d.editor, "partial")
	pidFile := filepath.Join(dir, "engine.pid")
	waitFile(t, pidFile, true)
	b, _ := os.ReadFile(pidFile)
	engPID, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	killOnCleanup(t, engPID)
	d.Exec(t, `vim.cmd("ClaudeDictate cancel")`)
	waitDict(t, d.editor, "cancelled")
	waitGone(t, engPID, "the engine")
	if got := d.promptText(t); got != "" {
		t.Errorf("prompt after cancel = %q", got)
	}
	if got := dictStates(dictEventsOf(t, d.editor)); got != "started stopped transcribing partial cancelled" {
		t.Errorf("events %q", got)
	}
	d.noRecordings(t)
}

// An engine that is missing or misconfigured is named, with why and how to
// install one, before anything records.
func TestDictationEngineMissing(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	rec := dictRecorder(t, dir)
	// a PocketSphinx 0.8 installed under dir, its model not
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	sphinxNoModel := filepath.Join(dir, "bin", "pocketsphinx_continuous")
	if err := os.WriteFile(sphinxNoModel, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, opts, want string
	}{
		{"pocketsphinx", `engine = "pocketsphinx", pocketsphinx = { cmd = "/nonexistent/pocketsphinx_continuous" }`,
			"PocketSphinx: /nonexistent/pocketsphinx_continuous is not executable (dictation.pocketsphinx.cmd)"},
		{"whisper no model", `engine = "whisper", whisper = { cmd = "/bin/true" }`,
			"whisper.cpp needs dictation.whisper.cmd and dictation.whisper.model"},
		{"whisper model missing", `engine = "whisper", whisper = { cmd = "/bin/true", model = "/nonexistent/ggml-base.en.bin" }`,
			"whisper.cpp: model /nonexistent/ggml-base.en.bin is not a readable file"},
		{"cmd", `engine = "cmd", cmd = { "/nonexistent/stt" }`, "dictation.cmd: /nonexistent/stt is not executable"},
		// Debian's pocketsphinx without pocketsphinx-en-us (not one of its
		// dependencies): it would fail on every recording, saying nothing
		{"pocketsphinx no model", fmt.Sprintf(`engine = "pocketsphinx", pocketsphinx = { cmd = %q }`, sphinxNoModel),
			"PocketSphinx: its US English model is not installed (no " + filepath.Join(dir, "share/pocketsphinx/model/en-us/en-us") + "; Debian: apt-get install pocketsphinx-en-us"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, %s }`, rec, wav, c.opts))
			d.open(t)
			d.focus(t, "1", "p")
			d.Exec(t, `vim.cmd("ClaudeDictate")`)
			ev := waitDict(t, d.editor, "error", "started")
			if ev.State != "error" {
				t.Fatalf("event %+v", ev)
			}
			ns := d.notes(t)
			if len(ns) != 1 || !strings.Contains(ns[0].Msg, c.want) || !strings.Contains(ns[0].Msg, "apt-get install pocketsphinx pocketsphinx-en-us") {
				t.Errorf("notes %v, want one with %q and the install hint", ns, c.want)
			}
			d.noRecordings(t)
		})
	}
}

// A recorder that fails says which and why; the files go.
func TestDictationRecorderFails(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad-rec")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho 'audio open error: No such file or directory' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		bad, dictFakeEngine(t, dir)))
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	ev := waitDict(t, d.editor, "error", "done")
	// arecord's words when it finds no device: said first
	want := "no input device: the recorder " + bad + " failed (exit 1: audio open error: No such file or directory)"
	if ev.State != "error" || ev.Error != want {
		t.Errorf("event %+v, want error %q", ev, want)
	}
	if ns := d.notes(t); len(ns) != 1 || !strings.Contains(ns[0].Msg, want) {
		t.Errorf("notes %v", ns)
	}
	if got := d.promptText(t); got != "" {
		t.Errorf("prompt = %q", got)
	}
	d.noRecordings(t)
}

// A recorder that is installed on a machine with nothing to record from
// (no sound card, no sound server: a container, an ssh session) fails
// with ALSA's lines of noise and then the reason: the error's first words
// say what is wrong, the noise is left out, and :checkhealth warns rather
// than reporting the recorder OK.
func TestDictationNoInputDevice(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sh", "cat"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// what sox's rec prints here, on a machine without /dev/snd
	rec := "#!/bin/sh\n" +
		"echo \"ALSA lib confmisc.c:855:(parse_card) cannot find card '0'\" >&2\n" +
		"echo 'ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM default' >&2\n" +
		"echo 'rec FAIL sox: Sorry, there is no default audio device configured' >&2\n" +
		"exit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "rec"), []byte(rec), 0o755); err != nil {
		t.Fatal(err)
	}
	snd, run := filepath.Join(dir, "snd"), filepath.Join(dir, "run")
	for _, p := range []string{snd, run} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d := startDictationWith(t, fmt.Sprintf(`, dictation = { engine = "cmd", cmd = { %q, "{file}" } }`, dictFakeEngine(t, dir)), true,
		"PATH="+bin, "XDG_RUNTIME_DIR="+run, "PULSE_SERVER=", "PIPEWIRE_REMOTE=")
	d.Exec(t, `require("claude.dictation")._snd_dir = ...`, snd)
	var linux bool
	d.Eval(t, `return vim.loop.os_uname().sysname == "Linux"`, &linux)
	if !linux {
		t.Skip("input devices are looked for on Linux only")
	}
	health := func() string {
		t.Helper()
		d.Exec(t, `vim.cmd("checkhealth claude")`)
		out := d.Lines(t, 0)
		d.Exec(t, `vim.cmd("bwipeout!")`)
		i := strings.Index(out, "nvim-claude: dictation")
		if i < 0 {
			t.Fatalf("no dictation section:\n%s", out)
		}
		return out[i:]
	}
	sec := health()
	if !strings.Contains(sec, "WARNING recorder: rec, but this machine has no input device (no ALSA capture device in /dev/snd, no PulseAudio or PipeWire server): dictation cannot record here") ||
		strings.Contains(sec, "OK recorder") {
		t.Errorf("checkhealth, no input device:\n%s", sec)
	}

	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	ev := waitDict(t, d.editor, "error", "done")
	want := "no input device: no recorder works: rec (exit 1: rec FAIL sox: Sorry, there is no default audio device configured) (connect a microphone"
	if ev.State != "error" || !strings.HasPrefix(ev.Error, want) || strings.Contains(ev.Error, "ALSA lib") {
		t.Errorf("event %+v, want error %q…", ev, want)
	}
	if ns := d.notes(t); len(ns) != 1 || !strings.HasPrefix(ns[0].Msg, "nvim-claude: dictation: "+want) {
		t.Errorf("notes %v", ns)
	}
	d.noRecordings(t)

	// a capture device, or a sound server: the recorder is OK, and says
	// what it records from
	if err := os.WriteFile(filepath.Join(snd, "pcmC0D0c"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(run, "pulse"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "pulse", "native"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if sec := health(); !strings.Contains(sec, "OK recorder: rec (input: an ALSA capture device, a PulseAudio server)") {
		t.Errorf("checkhealth, input devices:\n%s", sec)
	}
}

// A killed Neovim's recording is swept at the next start; another live
// Neovim's is not.
func TestDictationSweep(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}", "once" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		dictRecorder(t, dir), wav, dictFakeEngine(t, dir)))
	base := filepath.Join(d.cache, "nvim", "nvim-claude-dictation")
	// A pid that is gone: a child that has exited and been reaped.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(base, fmt.Sprintf("%d-1", c.Process.Pid))
	live := filepath.Join(base, fmt.Sprintf("%d-1", os.Getpid()))
	for _, p := range []string{dead, live} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		silentWAV(t, filepath.Join(p, "audio.wav"), 10)
	}
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" {
		t.Fatalf("%+v notes %v", ev, d.notes(t))
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the killed Neovim's recording %s is still there (%v)", dead, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's recording was removed: %v", err)
	}
	_ = os.RemoveAll(live)
	d.noRecordings(t)
}

// Neovim 0.7 says dictation needs 0.8, and maps nothing.
func TestDictationNeedsNeovim08(t *testing.T) {
	e := startEditor(t, editorOpts{nvim: []string{"XDG_CACHE_HOME=" + t.TempDir()}})
	var old bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 0`, &old)
	if !old {
		t.Skip("Neovim 0.8+ dictates (the other TestDictation* tests)")
	}
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeDictate")`)
	e.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, "a note")
	if ns := e.notes(t); len(ns) != 1 || ns[0].Msg != "nvim-claude: dictation needs Neovim 0.8 or newer" {
		t.Errorf("notes %v", ns)
	}
}

// --- The real engine: PocketSphinx on espeak-ng's speech ----------------------

// dictDebianPackages are what scripts/install-dictation installs.
const dictDebianPackages = "pocketsphinx pocketsphinx-en-us espeak-ng flite sox"

func requireSpeechTools(t *testing.T) {
	t.Helper()
	// Neovim 0.7 skips these: before speaking and transcribing sentences
	// (seconds of CI time for nothing)
	if out, err := exec.Command(nvimtest.Bin(t), "--version").Output(); err == nil && strings.HasPrefix(string(out), "NVIM v0.7.") {
		t.Skip("dictation needs Neovim 0.8+ (see TestDictationNeedsNeovim08)")
	}
	for _, b := range []string{"pocketsphinx_continuous", "espeak-ng", "flite", "sox"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("no %s: run scripts/install-dictation (apt-get install %s; make test-deps does it as root)", b, dictDebianPackages)
		}
	}
}

// speak writes sentence, spoken by voice ("espeak-ng", or "flite" with
// its rms voice), as a 16 kHz mono WAV with pad seconds of silence after
// it. No dither (-D): the same sentence makes the same file, so what the
// engine hears does not change from run to run.
func speak(t *testing.T, voice, path, sentence string, pad float64) {
	t.Helper()
	raw := path + ".raw.wav"
	var synth *exec.Cmd
	switch voice {
	case "flite":
		synth = exec.Command("flite", "-voice", "rms", "-t", sentence, "-o", raw)
	default:
		synth = exec.Command("espeak-ng", "-v", "en-us", "-s", "140", "-w", raw, sentence)
	}
	if out, err := synth.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", voice, err, out)
	}
	if out, err := exec.Command("sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", path, "gain", "-n", "-1", "pad", "0.3", fmt.Sprint(pad)).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
}

// sphinx is what PocketSphinx hears in path, run directly.
func sphinx(t *testing.T, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "pocketsphinx_continuous", "-infile", path, "-logfn", "/dev/null").Output()
	if err != nil {
		t.Fatalf("pocketsphinx_continuous %s: %v", path, err)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// wordErrors is the edit distance in words between ref and hyp.
func wordErrors(ref, hyp string) int {
	r, h := strings.Fields(ref), strings.Fields(hyp)
	prev := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur := make([]int, len(h)+1)
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(h)]
}

func TestWordErrors(t *testing.T) {
	for _, c := range []struct {
		ref, hyp string
		want     int
	}{
		{"a b c", "a b c", 0},
		{"a b c", "a x c", 1},
		{"a b c", "a c", 1},
		{"a b c", "a b c d", 1},
		{"a b c", "", 3},
		{"list the files in this directory", "list the finals in the surgery", 3},
	} {
		if got := wordErrors(c.ref, c.hyp); got != c.want {
			t.Errorf("wordErrors(%q, %q) = %d, want %d", c.ref, c.hyp, got, c.want)
		}
	}
}

// dictateSentence dictates the WAV at wav with the default engine
// (PocketSphinx, found on PATH) into a chat prompt and into a terminal,
// and returns the text that reached both (the test fails if they differ
// from each other or from what PocketSphinx hears in the file directly).
func dictateSentence(t *testing.T, dir, wav string) string {
	t.Helper()
	want := sphinx(t, wav)
	opts := fmt.Sprintf(`, terminal_cmd = { %q }, dictation = { recorder = { cmd = { %q, %q, "{file}" } } }`, termEcho(t, dir), dictRecorder(t, dir), wav)
	// the chat prompt
	d := startDictation(t, opts)
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("startinsert")`)
	d.feed(t, "<C-g>")
	if ev := waitDict(t, d.editor, "started", "error"); ev.State != "started" || !strings.Contains(ev.Engine, "PocketSphinx") {
		t.Fatalf("start %+v notes %v", ev, d.notes(t))
	}
	d.waitAudio(t)
	d.feed(t, "<C-g>")
	done := waitDict(t, d.editor, "done", "error")
	if want == "" {
		if done.State != "error" || done.Error != "the engine heard no words" {
			t.Errorf("nothing heard: %+v", done)
		}
		return ""
	}
	if done.State != "done" || d.promptText(t) != want {
		t.Fatalf("end %+v, prompt %q, want %q", done, d.promptText(t), want)
	}
	d.noRecordings(t)
	// the terminal
	d = startDictationWith(t, opts, false)
	st := d.startTerminal(t, "READY")
	d.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("startinsert")`, st.Terminal.Bufnr)
	d.feed(t, "<C-g>")
	waitDict(t, d.editor, "started")
	d.waitAudio(t)
	d.feed(t, "<Esc>")
	if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" {
		t.Fatalf("terminal: %+v", ev)
	}
	d.waitScreen(t, st.Terminal.Bufnr, "GOT: ["+want+"]")
	d.noRecordings(t)
	return want
}

// PocketSphinx (Debian's pocketsphinx_continuous, the default engine when
// installed) transcribes spoken sentences into the chat prompt and the
// terminal: what lands is exactly what the engine hears in the file, and
// with flite's voice the words are right (word error rate <= 25 % over the
// sentences). espeak-ng's formant voice is too far from the speech
// Debian 12's PocketSphinx 0.8 model knows (its word error rate is over
// 100 %): its sentences check the path only, their error rate is logged.
func TestDictationPocketSphinx(t *testing.T) {
	requireSpeechTools(t)
	sentences := []string{"list the files in this directory", "open the main function"}
	for _, voice := range []string{"flite", "espeak-ng"} {
		t.Run(voice, func(t *testing.T) {
			errs, words := 0, 0
			for i, s := range sentences {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					dir := t.TempDir()
					wav := filepath.Join(dir, "speech.wav")
					speak(t, voice, wav, s, 0.5)
					got := dictateSentence(t, dir, wav)
					n := wordErrors(s, got)
					t.Logf("%s says %q: the prompt gets %q (%d word errors)", voice, s, got, n)
					errs += n
					words += len(strings.Fields(s))
				})
			}
			rate := float64(errs) / float64(words)
			t.Logf("%s: word error rate %.0f%% (%d/%d)", voice, 100*rate, errs, words)
			if voice == "flite" && rate > 0.25 {
				t.Errorf("word error rate %.0f%% over the sentences, want <= 25%%", 100*rate)
			}
		})
	}
}

// A 60 s recording (a 60 s file: no minute of wall time) transcribes
// whole with the real engine, the partial text arriving as it goes.
func TestDictationLongRecording(t *testing.T) {
	requireSpeechTools(t)
	dir := t.TempDir()
	var parts []string
	for i, s := range []string{"list the files in this directory", "open the main function", "list the files in this directory"} {
		p := filepath.Join(dir, fmt.Sprintf("p%d.wav", i))
		speak(t, "flite", p, s, 2)
		parts = append(parts, p)
	}
	joined := filepath.Join(dir, "joined.wav")
	if out, err := exec.Command("sox", append(parts, joined)...).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	long := filepath.Join(dir, "long.wav")
	// pad to 60 s with silence, then trim to exactly 60 s
	if out, err := exec.Command("sox", joined, long, "pad", "0", "60", "trim", "0", "60").CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	if out, err := exec.Command("soxi", "-D", long).Output(); err != nil || strings.TrimSpace(string(out)) != "60.000000" {
		t.Fatalf("long.wav lasts %q (%v)", out, err)
	}
	want := sphinx(t, long)
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } } }`, dictRecorder(t, dir), long))
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	waitDict(t, d.editor, "started")
	d.waitAudio(t)
	d.Exec(t, `vim.cmd("ClaudeDictate stop")`)
	done := waitDict(t, d.editor, "done", "error")
	if done.State != "done" || d.promptText(t) != want {
		t.Fatalf("end %+v: prompt %q, want %q; notes %v", done, d.promptText(t), want, d.notes(t))
	}
	var partials int
	for _, e := range dictEventsOf(t, d.editor) {
		if e.State == "partial" {
			partials++
		}
	}
	if partials < 2 {
		t.Errorf("%d partial results for three utterances", partials)
	}
	d.noRecordings(t)
}

// :checkhealth claude names the recorder and engine found, or says how to
// install one.
func TestDictationCheckhealth(t *testing.T) {
	dir := t.TempDir()
	// A PATH with only sh and a fake arecord: no other recorder, no engine.
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"arecord", "sh"} {
		target := "/bin/sh"
		if name == "arecord" {
			target = "/bin/true"
		}
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	engine := dictFakeEngine(t, dir)
	model := filepath.Join(dir, "ggml-base.en.bin")
	if err := os.WriteFile(model, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	// a PocketSphinx 0.8 with its model, installed under dir/ps
	sphinxBin := filepath.Join(dir, "ps", "bin", "pocketsphinx_continuous")
	if err := os.MkdirAll(filepath.Join(dir, "ps", "share", "pocketsphinx", "model", "en-us", "en-us"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(sphinxBin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sphinxBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, opts string
		want       []string
	}{
		{"pocketsphinx before cmd", fmt.Sprintf(`dictation = { cmd = { %q }, pocketsphinx = { cmd = %q } }`, engine, sphinxBin), []string{
			"WARNING engine: PocketSphinx (" + sphinxBin + ") (not recommended: on spoken coding prompts it gets most words wrong)",
			"recommended: whisper.cpp's whisper-cli with an English model",
			`dictation.cmd is set, but PocketSphinx (` + sphinxBin + `) comes first with engine = "auto": set engine = "cmd" to use yours`,
		}},
		{"nothing", `dictation = { recorder = { cmd = { "/nonexistent/rec" } } }`, []string{
			"recorder /nonexistent/rec (dictation.recorder.cmd) is not executable",
			"no speech-to-text engine", "apt-get install pocketsphinx pocketsphinx-en-us",
		}},
		{"whisper", fmt.Sprintf(`dictation = { whisper = { cmd = "/bin/true", model = %q } }`, model), []string{
			"OK engine: whisper.cpp (/bin/true), model " + model,
		}},
		{"found", fmt.Sprintf(`dictation = { cmd = { %q } }`, engine), []string{
			"recorder: arecord", "engine: " + engine,
		}},
		// "auto" passes over a whisper.cpp set up wrong: said here, as
		// nothing says it when dictating
		{"whisper passed over", fmt.Sprintf(`dictation = { cmd = { %q }, whisper = { cmd = "/bin/true", model = "/nonexistent/ggml-base.en.bin" } }`, engine), []string{
			"engine: " + engine,
			"dictation.whisper is set but not used (whisper.cpp: model /nonexistent/ggml-base.en.bin is not a readable file",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := nvimtest.Start(t, nvimtest.Options{
				Env:  []string{"PATH=" + bin},
				Init: fmt.Sprintf(`require("claude").setup({ bin = %q, terminal_cmd = "true", %s })`, hostBin, c.opts),
			})
			var ok bool
			n.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &ok)
			if !ok {
				t.Skip("dictation needs Neovim 0.8+")
			}
			n.Exec(t, `vim.cmd("checkhealth claude")`)
			out := n.Lines(t, 0)
			if !strings.Contains(out, "nvim-claude: dictation") {
				t.Fatalf("no dictation section:\n%s", out)
			}
			sec := out[strings.Index(out, "nvim-claude: dictation"):]
			for _, w := range c.want {
				if !strings.Contains(sec, w) {
					t.Errorf("checkhealth's dictation section lacks %q:\n%s", w, sec)
				}
			}
		})
	}
}

// The real CLI: the words are typed into its prompt box and stay there,
// not submitted: a key typed after them joins the same prompt, and no
// request reaches the API.
func TestDictationRealCLI(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	s := startSession(t, sessionOpts{extra: fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}", "once" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		dictRecorder(t, dir), wav, dictFakeEngine(t, dir))})
	var ok bool
	s.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &ok)
	if !ok {
		t.Skip("dictation needs Neovim 0.8+")
	}
	s.Exec(t, dictEvents)
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("ClaudeDictate")`, s.st.Terminal.Bufnr)
	if ev := waitDict(t, s.editor, "done", "error"); ev.State != "done" || ev.Target != "terminal" {
		t.Fatalf("%+v notes %v", ev, s.notes(t))
	}
	s.waitScreen(t, 30*time.Second, "list the files in this directory")
	s.typeKeys(t, "!")
	s.waitScreen(t, 30*time.Second, "list the files in this directory!")
	if n := len(s.api.MainRequests()); n != 0 {
		t.Errorf("%d requests reached the API: the dictated text was submitted", n)
	}
}

// The dictation options are checked like the others (one message naming
// the bad ones; the rest apply), and lists replace their defaults.
func TestDictationOptions(t *testing.T) {
	tests := []struct {
		name, opts, wantErr, check string
	}{
		{"defaults", `{}`, "", `o.engine == "auto" and o.max_seconds == 300 and o.keys.toggle == "<C-g>" and o.recorder.cmd == nil`},
		{"engine", `{ dictation = { engine = "vosk" } }`, `'dictation.engine' must be one of "auto", "whisper", "pocketsphinx", "cmd"`, `o.engine == "auto"`},
		{"recorder string", `{ dictation = { recorder = { cmd = "my-rec" } } }`, "", `o.recorder.cmd == "my-rec"`},
		{"recorder empty list", `{ dictation = { recorder = { cmd = {} } } }`, `'dictation.recorder.cmd' must not be an empty list`, `o.recorder.cmd == nil`},
		{"cmd list", `{ dictation = { cmd = { "stt", "--wav", "{file}" } } }`, "", `#o.cmd == 3`},
		{"args replace", `{ dictation = { whisper = { args = { "-t", "2" } } } }`, "", `#o.whisper.args == 2 and o.whisper.cmd == nil`},
		{"key off", `{ dictation = { keys = { toggle = false } } }`, "", `o.keys.toggle == false`},
		{"max_seconds", `{ dictation = { max_seconds = -1 } }`, `'dictation.max_seconds' must be 0 (no limit) or more`, `o.max_seconds == 300`},
		{"unknown", `{ dictation = { wisper = {} } }`, `unknown option 'dictation.wisper'`, `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nvimtest.Start(t, nvimtest.Options{Init: captureNotify})
			n.Exec(t, `require("claude").setup(`+tt.opts+`)`)
			var ns []note
			n.Eval(t, `return _G.notes`, &ns)
			if tt.wantErr == "" && len(ns) != 0 {
				t.Errorf("unexpected messages %+v", ns)
			}
			if tt.wantErr != "" && (len(ns) != 1 || !strings.Contains(ns[0].Msg, tt.wantErr)) {
				t.Errorf("messages %+v, want one with %q", ns, tt.wantErr)
			}
			var ok bool
			n.Eval(t, `local o = require("claude.config").options.dictation return `+tt.check, &ok)
			if !ok {
				t.Errorf("after setup: %s is false", tt.check)
			}
		})
	}
}

// Without dictation.recorder.cmd the recorders are tried in order: one
// that fails is passed over for the next (each named when none works).
func TestDictationRecorderFallback(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("pw-record", "#!/bin/sh\necho 'pw-record: no PipeWire daemon' >&2\nexit 1\n")
	write("parecord", "#!/bin/sh\necho 'Connection refused' >&2\nexit 1\n")
	// arecord … FILE: the stand-in recorder on the last argument
	write("arecord", fmt.Sprintf("#!/bin/sh\nfor f; do :; done\nexec %q %q \"$f\"\n", dictRecorder(t, dir), wav))
	for _, name := range []string{"rec", "sox"} {
		write(name, "#!/bin/sh\nexit 1\n")
	}
	d := startDictationWith(t, fmt.Sprintf(`, dictation = { engine = "cmd", cmd = { %q, "{file}" } }`, dictFakeEngine(t, dir)), true, "PATH="+bin+":/usr/bin:/bin")
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	d.WaitFor(t, 10*time.Second, `(require("claude.dictation").state() or {}).recorder == "arecord"`,
		`return { s = require("claude.dictation").state(), ev = _G.dict }`, "arecord to record")
	d.waitAudio(t)
	d.Exec(t, `vim.cmd("ClaudeDictate stop")`)
	if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" || d.promptText(t) != "list the files in this directory" {
		t.Fatalf("%+v prompt %q notes %v", ev, d.promptText(t), d.notes(t))
	}
	d.noRecordings(t)

	// None works: each is named with why.
	write("arecord", "#!/bin/sh\necho 'arecord: main:830: audio open error: No such file or directory' >&2\nexit 1\n")
	d.Exec(t, `_G.dict = {} _G.notes = {}`)
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	ev := waitDict(t, d.editor, "error")
	for _, w := range []string{"no recorder works: pw-record (exit 1: pw-record: no PipeWire daemon)", "parecord (exit 1: Connection refused)",
		"arecord (exit 1: arecord: main:830: audio open error: No such file or directory)", "rec (exit 1)", "sox (exit 1)"} {
		if !strings.Contains(ev.Error, w) {
			t.Errorf("error %q lacks %q", ev.Error, w)
		}
	}
	d.noRecordings(t)
}

// An engine that fails is named with its exit status and what it printed;
// dictation.max_seconds stops a recording nobody stops.
func TestDictationEngineFailsAndMaxSeconds(t *testing.T) {
	dir := t.TempDir()
	notWAV := filepath.Join(dir, "noise.bin")
	if err := os.WriteFile(notWAV, []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	engine := dictFakeEngine(t, dir)
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" }, max_seconds = 1 }`,
		dictRecorder(t, dir), notWAV, engine))
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	// nobody stops it: max_seconds does
	ev := waitDict(t, d.editor, "error", "done")
	if !strings.HasPrefix(ev.Error, "the engine "+engine+" failed (exit 3: not a WAV: ") {
		t.Errorf("event %+v", ev)
	}
	notes := fmt.Sprint(d.notes(t))
	if !strings.Contains(notes, "dictation: stopped at 1 s (dictation.max_seconds)") {
		t.Errorf("notes %s", notes)
	}
	if got := dictStates(dictEventsOf(t, d.editor)); got != "started stopped transcribing error" {
		t.Errorf("events %q", got)
	}
	d.noRecordings(t)
}

// whisper.cpp (a stand-in for its CLI: whisper.cpp is not in Debian 12)
// is run with the model, no timestamps, no progress, the language, the
// extra arguments and the file; its markers and padding are dropped.
func TestDictationWhisperCommandLine(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	model := filepath.Join(dir, "ggml-base.en.bin")
	if err := os.WriteFile(model, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	whisper := filepath.Join(dir, "whisper-cli")
	script := `#!/bin/sh
printf '%s\n' "$@" > "$(dirname "$0")/args"
printf '\n [BLANK_AUDIO]\n Open the main function.\n'
`
	if err := os.WriteFile(whisper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// A project (its .git at the top) with a file open, the cursor on an
	// identifier in it: whisper's initial prompt names them.
	proj := filepath.Join(dir, "acme-server")
	src := filepath.Join(proj, "cmd", "parse.go")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("package main\n\nfunc parse_flags() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// engine "auto": whisper.cpp wins over an installed PocketSphinx
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}", "once" } }, whisper = { cmd = %q, model = %q, language = "en", args = { "-t", "2" } } }`,
		dictRecorder(t, dir), wav, whisper, model))
	d.Exec(t, `local cwd, file = ...
vim.cmd("cd " .. vim.fn.fnameescape(cwd))
vim.cmd("edit " .. vim.fn.fnameescape(file))
vim.api.nvim_win_set_cursor(0, { 3, 8 })
_G.code_win = vim.api.nvim_get_current_win()`, filepath.Join(proj, "cmd"), src)
	d.open(t)
	d.Exec(t, `vim.api.nvim_set_current_win(_G.code_win)`)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	ev := waitDict(t, d.editor, "done", "error")
	if ev.State != "done" || d.promptText(t) != "Open the main function." {
		t.Fatalf("%+v prompt %q notes %v", ev, d.promptText(t), d.notes(t))
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n")
	if len(got) != 12 {
		t.Fatalf("whisper args %q", got)
	}
	file := got[11]
	want := []string{"-m", model, "-nt", "-np", "-l", "en", "--prompt", "acme-server, parse_flags, parse.go", "-t", "2", "-f", file}
	if strings.Join(got, "|") != strings.Join(want, "|") || !strings.HasSuffix(file, "/audio.wav") {
		t.Errorf("whisper args %q, want %q", got, want)
	}
	d.noRecordings(t)

	// prompt = false: none; a function gets the words and says what to use
	for _, c := range []struct{ opt, want string }{
		{"false", ""},
		{`function(words) return "Go code. " .. words end`, "Go code. acme-server, parse_flags, parse.go"},
		{`"fixed words"`, "fixed words"},
	} {
		d.Exec(t, `require("claude.config").options.dictation.whisper.prompt = loadstring("return " .. select(1, ...))()
vim.api.nvim_set_current_win(_G.code_win)
vim.api.nvim_set_current_win(vim.fn.win_findbuf(require("claude.chat").get("1").pbuf)[1])
_G.dict = {}
vim.cmd("ClaudeDictate")`, c.opt)
		if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" {
			t.Fatalf("prompt = %s: %+v", c.opt, ev)
		}
		args, err := os.ReadFile(filepath.Join(dir, "args"))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if i := strings.Index(string(args), "--prompt\n"); i >= 0 {
			got = strings.SplitN(string(args)[i+len("--prompt\n"):], "\n", 2)[0]
		}
		if got != c.want {
			t.Errorf("prompt = %s: whisper's --prompt %q, want %q\n%s", c.opt, got, c.want, args)
		}
	}
}

// A recorder is often a script or a pipeline (`sh -c "arecord … | sox …"`):
// stopping reaches every process of it, as Ctrl-C in a shell does, and
// none is left running (recording) after the dictation ends.
func TestDictationRecorderProcessGroup(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	write := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// the recorder proper: writes its file when interrupted, like arecord
	ready := filepath.Join(dir, "ready")
	inner := write("inner-rec", fmt.Sprintf("#!/bin/sh\ntrap 'cp \"$1\" \"$2\"; exit 0' INT\ntouch %q\nwhile :; do sleep 0.1; done\n", ready))
	cases := []struct {
		name, script string
	}{
		// a wrapper that waits for the recorder it runs: only the recorder
		// getting SIGINT makes a recording
		{"wrapper", fmt.Sprintf("#!/bin/sh\ntrap : INT\n%q \"$1\" \"$2\"\n", inner)},
		// a recorder that leaves a child behind (a background job ignores
		// SIGINT): the child must not outlive the dictation
		{"child", fmt.Sprintf("#!/bin/sh\nsleep 600 &\necho $! > %q\ntrap 'exit 0' INT\ncp \"$1\" \"$2\"\nwhile :; do sleep 0.1; done\n", filepath.Join(dir, "child.pid"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := write("rec-"+c.name, c.script)
			d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
				rec, wav, dictFakeEngine(t, dir)))
			d.open(t)
			d.focus(t, "1", "p")
			d.Exec(t, `vim.cmd("ClaudeDictate")`)
			waitDict(t, d.editor, "started")
			var recPID int
			d.Eval(t, `return require("claude.dictation")._session().rec_pid`, &recPID)
			t.Cleanup(func() { _ = syscall.Kill(-recPID, syscall.SIGKILL) }) // the group, whatever happens
			childFile := filepath.Join(dir, "child.pid")
			if c.name == "child" {
				d.waitAudio(t)
				waitFile(t, childFile, true)
			} else {
				waitFile(t, ready, true) // both traps are set
			}
			d.Exec(t, `vim.cmd("ClaudeDictate stop")`)
			if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" || d.promptText(t) != "list the files in this directory" {
				t.Fatalf("%+v prompt %q notes %v", ev, d.promptText(t), d.notes(t))
			}
			if c.name == "child" {
				b, err := os.ReadFile(childFile)
				if err != nil {
					t.Fatal(err)
				}
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				killOnCleanup(t, pid)
				waitGone(t, pid, "the recorder's child")
			}
			d.noRecordings(t)
		})
	}
}

// :ClaudeDictate from another window dictates into the chat's prompt: the
// prompt's own <C-c> (interrupt) is what comes back there after, and the
// current buffer's mappings stay where they were.
func TestDictationFromAnotherWindowKeepsMappings(t *testing.T) {
	d, _, _ := startFakeDictation(t)
	d.open(t)
	d.Exec(t, `vim.cmd("botright new") vim.keymap.set("i", "<C-c>", "<Nop>", { buffer = 0, desc = "scratch" })`)
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	if ev := waitDict(t, d.editor, "started", "error"); ev.State != "started" || ev.Target != "chat" {
		t.Fatalf("%+v notes %v", ev, d.notes(t))
	}
	d.Exec(t, `vim.cmd("ClaudeDictate cancel")`)
	waitDict(t, d.editor, "cancelled")
	var got struct {
		Prompt  []string `json:"prompt"`
		Scratch []string `json:"scratch"`
	}
	d.Eval(t, `local function maps(buf)
  local out = {}
  for _, m in ipairs({ "n", "i" }) do
    for _, k in ipairs(vim.api.nvim_buf_get_keymap(buf, m)) do
      if k.lhs == "<C-C>" then table.insert(out, m .. ":" .. (k.desc or "")) end
    end
  end
  return out
end
return { prompt = maps(require("claude.chat").get("1").pbuf), scratch = maps(0) }`, &got)
	if strings.Join(got.Prompt, ",") != "n:nvim-claude: interrupt the turn,i:nvim-claude: interrupt the turn" {
		t.Errorf("the prompt's <C-c> after dictation: %q", got.Prompt)
	}
	if strings.Join(got.Scratch, ",") != "i:scratch" {
		t.Errorf("the current buffer's <C-c> after dictation: %q", got.Scratch)
	}
	d.noRecordings(t)
}

// The recordings' directory is predictable: where it is a symlink, or
// someone else's directory (a cache shared with others), nothing records
// and the error says what to do; the place it points to gets no audio.
func TestDictationRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	cases := []struct {
		name  string
		plant func(t *testing.T, base, elsewhere string)
		want  string
	}{
		{"symlink", func(t *testing.T, base, elsewhere string) {
			if err := os.Symlink(elsewhere, base); err != nil {
				t.Fatal(err)
			}
		}, "is not a directory of yours (link)"},
		{"another user's", func(t *testing.T, base, _ string) {
			if os.Getuid() != 0 {
				t.Skip("making a directory someone else's needs root")
			}
			if err := os.Mkdir(base, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(base, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "is not a directory of yours (owned by uid 65534)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
				dictRecorder(t, dir), wav, dictFakeEngine(t, dir)))
			base := filepath.Join(d.cache, "nvim", "nvim-claude-dictation")
			elsewhere := t.TempDir()
			if err := os.MkdirAll(filepath.Dir(base), 0o700); err != nil {
				t.Fatal(err)
			}
			c.plant(t, base, elsewhere)
			// what looks like a killed Neovim's recording where the symlink
			// points: not ours to sweep
			gone := exec.Command("true")
			if err := gone.Run(); err != nil {
				t.Fatal(err)
			}
			keep := filepath.Join(elsewhere, fmt.Sprintf("%d-1", gone.Process.Pid))
			if err := os.Mkdir(keep, 0o700); err != nil {
				t.Fatal(err)
			}
			d.open(t)
			d.focus(t, "1", "p")
			d.Exec(t, `vim.cmd("ClaudeDictate")`)
			ev := waitDict(t, d.editor, "error", "started")
			if ev.State != "error" || !strings.Contains(ev.Error, c.want) {
				t.Errorf("event %+v, want an error with %q", ev, c.want)
				d.Exec(t, `vim.cmd("ClaudeDictate cancel")`)
			}
			if ns := d.notes(t); len(ns) != 1 || !strings.Contains(ns[0].Msg, "remove it") {
				t.Errorf("notes %v", ns)
			}
			if m, _ := filepath.Glob(filepath.Join(elsewhere, "*")); len(m) != 1 || m[0] != keep {
				t.Errorf("in %s: %v, want only %s (no recording, and nothing swept there)", elsewhere, m, keep)
			}
		})
	}
}

// The target closing while recording (the chat's prompt wiped, the Claude
// terminal's CLI exiting) stops the recording at once: no microphone left
// on with no indicator. The chat puts a new prompt (with the draft) in
// place of a deleted one: the words go at its end; the terminal's are in
// the warning, having nowhere to go.
func TestDictationTargetClosesWhileRecording(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	opts := fmt.Sprintf(`, terminal_cmd = { %q }, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		termEcho(t, dir), dictRecorder(t, dir), wav, dictFakeEngine(t, dir))
	start := func(t *testing.T, d *dictEditor) int {
		t.Helper()
		d.Exec(t, `vim.cmd("ClaudeDictate")`)
		waitDict(t, d.editor, "started")
		var recPID int
		d.Eval(t, `return require("claude.dictation")._session().rec_pid`, &recPID)
		killOnCleanup(t, recPID)
		d.waitAudio(t)
		return recPID
	}
	t.Run("chat", func(t *testing.T) {
		d := startDictation(t, opts)
		d.open(t)
		d.focus(t, "1", "p")
		d.Exec(t, `vim.api.nvim_buf_set_lines(0, 0, -1, false, { "my draft" })`)
		recPID := start(t, d)
		var old int
		d.Eval(t, `return require("claude.chat").get("1").pbuf`, &old)
		d.Exec(t, `vim.cmd("bwipeout! " .. ...)`, old)
		if ev := waitDict(t, d.editor, "error", "done"); ev.State != "done" || ev.Text != "list the files in this directory" {
			t.Errorf("event %+v notes %v", ev, d.notes(t))
		}
		waitGone(t, recPID, "the recorder")
		var pbuf int
		d.Eval(t, `return require("claude.chat").get("1").pbuf`, &pbuf)
		if got := d.promptText(t); pbuf == old || got != "my draft list the files in this directory" {
			t.Errorf("the new prompt (%d, was %d): %q", pbuf, old, got)
		}
		if notes := fmt.Sprint(d.notes(t)); !strings.Contains(notes, "the chat prompt closed while recording: stopped") {
			t.Errorf("notes %s", notes)
		}
		// the new prompt's own keys are intact
		var descs []string
		d.Eval(t, `local out = {}
for _, m in ipairs({ "n", "i" }) do
  for _, k in ipairs(vim.api.nvim_buf_get_keymap(..., m)) do
    if k.lhs == "<C-C>" then table.insert(out, m .. ":" .. (k.desc or "")) end
  end
end
return out`, &descs, pbuf)
		if strings.Join(descs, ",") != "n:nvim-claude: interrupt the turn,i:nvim-claude: interrupt the turn" {
			t.Errorf("the new prompt's <C-c>: %q", descs)
		}
		d.noRecordings(t)
	})
	t.Run("terminal", func(t *testing.T) {
		d := startDictationWith(t, opts, false)
		st := d.startTerminal(t, "READY")
		d.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])`, st.Terminal.Bufnr)
		recPID := start(t, d)
		if err := syscall.Kill(st.Terminal.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ev := waitDict(t, d.editor, "error", "done")
		if ev.State != "error" || !strings.Contains(ev.Error, "has exited") || ev.Text != "list the files in this directory" {
			t.Errorf("event %+v", ev)
		}
		notes := fmt.Sprint(d.notes(t))
		if !strings.Contains(notes, "the Claude terminal closed while recording: stopped") || !strings.Contains(notes, "(the text: list the files in this directory)") {
			t.Errorf("notes %s", notes)
		}
		waitGone(t, recPID, "the recorder")
		d.noRecordings(t)
	})
}

// Neovim killed while recording (SIGKILL: no VimLeavePre, no job stop):
// the recorder does not go on recording, orphaned; its directory is swept
// by the next Neovim that dictates (TestDictationSweep).
func TestDictationNeovimKilledStopsRecorder(t *testing.T) {
	d, _, _ := startFakeDictation(t)
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	waitDict(t, d.editor, "started")
	d.waitAudio(t)
	var recPID, nvimPID int
	d.Eval(t, `return require("claude.dictation")._session().rec_pid`, &recPID)
	d.Eval(t, `return vim.fn.getpid()`, &nvimPID)
	t.Cleanup(func() { _ = syscall.Kill(-recPID, syscall.SIGKILL) })
	if err := syscall.Kill(nvimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, nvimPID, "Neovim")
	_ = d.Nvim.Close()
	waitGone(t, recPID, "the recorder of a killed Neovim")
}

// Text that cannot be inserted (the prompt made 'nomodifiable' meanwhile)
// is an error naming the words, and the session still ends: no keys, no
// file left, and the next dictation starts.
func TestDictationInsertFails(t *testing.T) {
	d, _, _ := startFakeDictation(t)
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	waitDict(t, d.editor, "started")
	d.waitAudio(t)
	d.Exec(t, `vim.bo.modifiable = false vim.cmd("ClaudeDictate stop")`)
	ev := waitDict(t, d.editor, "error", "done")
	if ev.State != "error" || !strings.Contains(ev.Error, "the text: list the files in this directory") {
		t.Errorf("event %+v", ev)
	}
	var st any
	d.Eval(t, `return require("claude.dictation").state()`, &st)
	if st != nil {
		t.Errorf("session still there: %v", st)
	}
	d.noRecordings(t)
}

// A mapping of the user's in the Claude terminal (made on its FileType
// event, as the docs show) is not replaced by the dictation key.
func TestDictationKeyLeavesUserTerminalMapping(t *testing.T) {
	dir := t.TempDir()
	d := startDictationWith(t, fmt.Sprintf(`, terminal_cmd = { %q }`, termEcho(t, dir)), false)
	d.Exec(t, `vim.api.nvim_create_autocmd("FileType", { pattern = "claude", callback = function(ev)
  vim.keymap.set("t", "<C-g>", "<Nop>", { buffer = ev.buf, desc = "mine" })
end })`)
	st := d.startTerminal(t, "READY")
	var descs []string
	d.Eval(t, `local out = {}
for _, m in ipairs({ "t", "n" }) do
  for _, k in ipairs(vim.api.nvim_buf_get_keymap(..., m)) do
    if k.lhs == "<C-G>" then table.insert(out, m .. ":" .. (k.desc or "")) end
  end
end
return out`, &descs, st.Terminal.Bufnr)
	if got := strings.Join(descs, ","); got != "t:mine,n:nvim-claude: dictate (start/stop)" {
		t.Errorf("<C-g> in the terminal: %q, want the user's in Terminal mode, dictation's in Normal mode", got)
	}
}

// Neovim exiting (:qa!, SIGTERM, SIGHUP) while recording or transcribing
// leaves no recording in the cache and no recorder or engine running.
func TestDictationExitCleansUp(t *testing.T) {
	for _, c := range []struct {
		name, phase string
		end         func(t *testing.T, d *dictEditor)
	}{
		{":qa! recording", "recording", func(t *testing.T, d *dictEditor) { _ = d.Command("qa!") }},
		{":qa! transcribing", "transcribing", func(t *testing.T, d *dictEditor) { _ = d.Command("qa!") }},
		{"SIGTERM recording", "recording", func(t *testing.T, d *dictEditor) { signalNvim(t, d.editor, syscall.SIGTERM) }},
		{"SIGHUP transcribing", "transcribing", func(t *testing.T, d *dictEditor) { signalNvim(t, d.editor, syscall.SIGHUP) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			wav := filepath.Join(dir, "speech.wav")
			silentWAV(t, wav, 16000)
			slow := filepath.Join(dir, "slow-engine")
			if err := os.WriteFile(slow, []byte("#!/bin/sh\necho $$ > \"$(dirname \"$0\")/engine.pid\"\necho partial words\nexec sleep 600\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
				dictRecorder(t, dir), wav, slow))
			d.open(t)
			d.focus(t, "1", "p")
			d.Exec(t, `vim.cmd("ClaudeDictate")`)
			waitDict(t, d.editor, "started")
			d.waitAudio(t)
			var pid, nvimPID int
			d.Eval(t, `return require("claude.dictation")._session().rec_pid`, &pid)
			d.Eval(t, `return vim.fn.getpid()`, &nvimPID)
			what := "the recorder"
			if c.phase == "transcribing" {
				d.Exec(t, `vim.cmd("ClaudeDictate stop")`)
				waitDict(t, d.editor, "partial")
				pidFile := filepath.Join(dir, "engine.pid")
				waitFile(t, pidFile, true)
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				what = "the engine"
			}
			killOnCleanup(t, pid)
			if len(d.recordings(t)) != 1 {
				t.Fatalf("recordings while %s: %v", c.phase, d.recordings(t))
			}
			c.end(t, d)
			waitGone(t, nvimPID, "Neovim")
			_ = d.Nvim.Close()
			waitGone(t, pid, what)
			d.noRecordings(t)
		})
	}
}

// :ClaudeDictate from another window into a chat whose windows are closed:
// the indicator and the keys are out of sight, so a note says the
// microphone is on and how to stop it (none when the prompt is in sight).
func TestDictationHiddenTargetSaysSo(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}", "once" } }, engine = "cmd", cmd = { %q, "{file}" } }`,
		dictRecorder(t, dir), wav, dictFakeEngine(t, dir)))
	d.open(t)
	d.Exec(t, `vim.cmd("botright new")`)
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" {
		t.Fatalf("%+v", ev)
	}
	if ns := d.notes(t); len(ns) != 0 {
		t.Errorf("notes with the prompt in sight: %v", ns)
	}
	d.Exec(t, `_G.dict = {}
local chat = require("claude.chat").get("1")
for _, b in ipairs({ chat.pbuf, chat.tbuf }) do
  for _, w in ipairs(vim.fn.win_findbuf(b)) do pcall(vim.api.nvim_win_close, w, true) end
end`)
	var shown int
	d.Eval(t, `return #vim.fn.win_findbuf(require("claude.chat").get("1").pbuf)`, &shown)
	if shown != 0 {
		t.Fatalf("the prompt is still in %d windows", shown)
	}
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" || ev.Target != "chat" {
		t.Fatalf("%+v", ev)
	}
	want := "nvim-claude: dictation: recording for the hidden chat prompt (:ClaudeDictate stops, :ClaudeDictate cancel discards)"
	if ns := d.notes(t); len(ns) != 1 || ns[0].Msg != want {
		t.Errorf("notes %v, want %q", ns, want)
	}
}

// A recorder that fails after recording (a device unplugged) keeps what
// it recorded: it is transcribed, with a warning naming the recorder and
// why; the next recorder does not start over the file.
func TestDictationRecorderFailsAfterRecording(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// pw-record records, then its device goes; the others would start
	// over the file with nothing
	write("pw-record", fmt.Sprintf("#!/bin/sh\nfor f; do :; done\ncp %q \"$f\"\necho 'pw-record: stream error: device disconnected' >&2\nexit 1\n", wav))
	for _, name := range []string{"parecord", "arecord", "rec", "sox"} {
		write(name, "#!/bin/sh\nfor f; do :; done\n: > \"$f\"\nexit 1\n")
	}
	d := startDictationWith(t, fmt.Sprintf(`, dictation = { engine = "cmd", cmd = { %q, "{file}" } }`, dictFakeEngine(t, dir)), true, "PATH="+bin+":/usr/bin:/bin")
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	if ev := waitDict(t, d.editor, "done", "error"); ev.State != "done" || d.promptText(t) != "list the files in this directory" {
		t.Fatalf("%+v prompt %q notes %v", ev, d.promptText(t), d.notes(t))
	}
	want := "nvim-claude: dictation: the recorder pw-record stopped (exit 1: pw-record: stream error: device disconnected): transcribing what it recorded"
	if ns := d.notes(t); len(ns) != 1 || ns[0].Msg != want {
		t.Errorf("notes %v, want %q", ns, want)
	}
	d.noRecordings(t)
}

// With no chat and no Claude terminal there is nothing to dictate into:
// a warning says what to open, and the event says it too (a statusline
// listening to ClaudeDictation learns of every failure).
func TestDictationNoTarget(t *testing.T) {
	d, _, _ := startFakeDictation(t)
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	ev := waitDict(t, d.editor, "error", "started")
	if ev.State != "error" || ev.Error != "no chat prompt or Claude terminal to dictate into" {
		t.Errorf("event %+v", ev)
	}
	if ns := d.notes(t); len(ns) != 1 || !strings.Contains(ns[0].Msg, "open the chat (:ClaudeChat) or the Claude terminal (:ClaudeStart) first") {
		t.Errorf("notes %v", ns)
	}
	d.noRecordings(t)
}

// PocketSphinx 5 (its `pocketsphinx` CLI; a stand-in, Debian 12 ships
// 0.8) is run as `[args] single FILE`, and the text is taken from the
// JSON object it prints per utterance.
func TestDictationPocketSphinx5CommandLine(t *testing.T) {
	dir := t.TempDir()
	wav := filepath.Join(dir, "speech.wav")
	silentWAV(t, wav, 16000)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ps := filepath.Join(bin, "pocketsphinx")
	script := `#!/bin/sh
printf '%s\n' "$@" > "$(dirname "$0")/args"
echo 'INFO: loading the model' >&2
printf '{"b":0.000,"d":1.200,"p":1.000,"t":"open the main","w":[]}\n'
printf '{"b":1.500,"d":0.600,"p":1.000,"t":"function","w":[]}\n'
`
	if err := os.WriteFile(ps, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDictation(t, fmt.Sprintf(`, dictation = { recorder = { cmd = { %q, %q, "{file}", "once" } }, engine = "pocketsphinx", pocketsphinx = { cmd = %q, args = { "-samprate", "16000" } } }`,
		dictRecorder(t, dir), wav, ps))
	d.open(t)
	d.focus(t, "1", "p")
	d.Exec(t, `vim.cmd("ClaudeDictate")`)
	ev := waitDict(t, d.editor, "done", "error")
	if ev.State != "done" || d.promptText(t) != "open the main function" {
		t.Fatalf("%+v prompt %q notes %v", ev, d.promptText(t), d.notes(t))
	}
	args, err := os.ReadFile(filepath.Join(bin, "args"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(args))
	if len(got) != 4 || strings.Join(got[:3], " ") != "-samprate 16000 single" || !strings.HasSuffix(got[3], "/audio.wav") {
		t.Errorf("pocketsphinx args %q, want -samprate 16000 single <file>", got)
	}
	d.noRecordings(t)
}
