//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The word error rate of dictation on coding prompts, through the whole
// path: a voice speaks each prompt into a WAV, the stand-in recorder hands
// it over, the real engine transcribes it and the words land in the chat
// prompt (every voice) and in the Claude terminal (one voice). Set and
// bound were fixed before any tuning; identifiers, numbers and file names
// count as words.

// werPrompts: the five prompts dictation was first tried on, then coding
// prompts with identifiers, numbers and file names.
var werPrompts = []string{
	"fix the typo in the readme",
	"run the unit tests",
	"list the files in this directory",
	"open the main function",
	"rename parse_args to parse_flags",
	"add a test for the login handler",
	"explain what this function does",
	"rename user_id to account_id in models.py",
	"move the retry logic into client.go",
	"set the timeout to 30 seconds",
	"why does line 42 panic",
	"add a flag called verbose to the command",
	"delete the unused imports in main.go",
	"write a docstring for parse_config",
	"show me the diff for the last commit",
	"make the cache size 256 megabytes",
	"split handle_request into two functions",
	"add error handling to read_file",
	"convert this loop to a list comprehension",
	"open package.json and update the scripts",
	"the test on line 118 fails with a nil pointer",
	"replace print with logging in server.py",
	"add a section about installation to the readme",
	"use a map instead of a slice here",
	"check why the build takes 5 minutes",
	"refactor get_user to return an error",
	"sort the results by created_at",
	"limit the page size to 50 items",
	"add type hints to utils.py",
	"run go vet on the whole project",
	"the port should be 8080 not 3000",
	"commit the changes with a short message",
}

// werBound is the mean word error rate the recommended engine must stay
// under, over every prompt and voice.
const werBound = 0.15

// werVoice is a synthetic speaker at a speed.
type werVoice struct {
	name string
	argv func(text, out string) []string
}

var werVoices = []werVoice{
	{"espeak-ng 140 wpm", func(text, out string) []string {
		return []string{"espeak-ng", "-v", "en-us", "-s", "140", "-w", out, text}
	}},
	{"espeak-ng 175 wpm", func(text, out string) []string {
		return []string{"espeak-ng", "-v", "en-us", "-s", "175", "-w", out, text}
	}},
	{"flite rms", func(text, out string) []string {
		return []string{"flite", "-voice", "rms", "-t", text, "-o", out}
	}},
	{"flite rms faster", func(text, out string) []string {
		return []string{"flite", "-voice", "rms", "--setf", "duration_stretch=0.8", "-t", text, "-o", out}
	}},
}

// werNormal is a transcript as compared: lower case, the sentence's
// punctuation gone (a dot or underscore inside a word stays: main.go,
// parse_args, 2.1.0), "read me" as the one word it is in code.
func werNormal(s string) string {
	s = strings.ToLower(s)
	var words []string
	for _, w := range strings.Fields(s) {
		w = strings.Trim(w, ".,;:!?\"'()`")
		w = strings.ReplaceAll(w, ",", "")
		if w != "" {
			words = append(words, w)
		}
	}
	return strings.ReplaceAll(strings.Join(words, " "), "read me", "readme")
}

func TestWERNormal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Fix the typo in the README.", "fix the typo in the readme"},
		{"Rename parse_args to parse_flags.", "rename parse_args to parse_flags"},
		{"Open package.json, and update the scripts!", "open package.json and update the scripts"},
		{"The port should be 8,080, not 3,000.", "the port should be 8080 not 3000"},
		{"fix the typo in the read me", "fix the typo in the readme"},
	} {
		if got := werNormal(c.in); got != c.want {
			t.Errorf("werNormal(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// werEngine is the dictation options of the engine under test, or a
// reason to skip. The recommended engine is whisper.cpp with an English
// model (NVIM_CLAUDE_WHISPER_CMD, NVIM_CLAUDE_WHISPER_MODEL);
// NVIM_CLAUDE_WER_ENGINE=pocketsphinx measures PocketSphinx instead (it
// fails the bound: the test then reports its rate and transcripts).
func werEngine() (opts, skip string) {
	if os.Getenv("NVIM_CLAUDE_WER_ENGINE") == "pocketsphinx" {
		if _, err := exec.LookPath("pocketsphinx_continuous"); err != nil {
			return "", "no pocketsphinx_continuous: run scripts/install-dictation"
		}
		return `engine = "pocketsphinx"`, ""
	}
	cmd, model := os.Getenv("NVIM_CLAUDE_WHISPER_CMD"), os.Getenv("NVIM_CLAUDE_WHISPER_MODEL")
	if cmd == "" || model == "" {
		return "", "no whisper.cpp to measure: set NVIM_CLAUDE_WHISPER_CMD and NVIM_CLAUDE_WHISPER_MODEL (whisper-cli and an English ggml model; none is installable from Debian's packages, npm or the Go module proxy: see README's dictation section)"
	}
	return fmt.Sprintf(`engine = "whisper", whisper = { cmd = %q, model = %q, language = "en" }`, cmd, model), ""
}

func TestDictationWordErrorRate(t *testing.T) {
	engine, skip := werEngine()
	if skip != "" {
		t.Skip(skip)
	}
	requireSpeechTools(t)
	dir := t.TempDir()
	// every prompt in every voice, spoken once, before any dictation
	type utterance struct {
		prompt, voice, wav string
	}
	var utts []utterance
	for vi, v := range werVoices {
		for pi, p := range werPrompts {
			raw := filepath.Join(dir, fmt.Sprintf("%d-%02d.raw.wav", vi, pi))
			wav := filepath.Join(dir, fmt.Sprintf("%d-%02d.wav", vi, pi))
			argv := v.argv(p, raw)
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", v.name, err, out)
			}
			if out, err := exec.Command("sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", wav, "gain", "-n", "-1", "pad", "0.3", "0.5").CombinedOutput(); err != nil {
				t.Fatalf("sox: %v\n%s", err, out)
			}
			utts = append(utts, utterance{p, v.name, wav})
		}
	}
	// The project the prompts are spoken in: its files open, the cursor
	// on the identifier each prompt names (what whisper.cpp's prompt is
	// made of).
	proj := filepath.Join(dir, "shop-api")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md", "models.py", "client.go", "main.go", "server.py", "utils.py", "package.json", "code.txt"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(proj, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := dictRecorder(t, dir)
	opts := fmt.Sprintf(`, terminal_cmd = { %q }, dictation = { %s, recorder = { cmd = { %q, %q, "{file}", "once" } } }`,
		termEcho(t, dir), engine, rec, filepath.Join(dir, "next.wav"))
	// One Neovim for the chat prompt (the chat stubbed), one for the Claude
	// terminal (the stub would stand in for what :ClaudeStart needs).
	project := func(d *dictEditor) {
		d.Exec(t, `local proj, files = ...
vim.cmd("cd " .. vim.fn.fnameescape(proj))
for _, f in ipairs(files) do vim.cmd("edit " .. vim.fn.fnameescape(f)) end
_G.code_win = vim.api.nvim_get_current_win()`, proj, files)
	}
	chat := startDictation(t, opts)
	project(chat)
	chat.open(t)
	var pbuf int
	chat.Eval(t, `return require("claude.chat").get("1").pbuf`, &pbuf)
	term := startDictationWith(t, opts, false)
	project(term)
	st := term.startTerminal(t, "READY")

	// dictate puts wav where the recorder takes it from, with the cursor
	// on the prompt's identifier in the code window, and dictates into the
	// chat prompt (pbuf, from its window) or, pbuf 0, the Claude terminal
	// (from the code window: the running terminal is the target there).
	dictate := func(d *dictEditor, u utterance, pbuf int) dictEvent {
		t.Helper()
		data, err := os.ReadFile(u.wav)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "next.wav"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ident := ""
		for _, w := range strings.Fields(u.prompt) {
			if strings.Contains(w, "_") {
				ident = w
				break
			}
		}
		d.Exec(t, `local ident, pbuf = ...
vim.api.nvim_set_current_win(_G.code_win)
vim.cmd("stopinsert")
vim.cmd("buffer code.txt")
vim.api.nvim_buf_set_lines(0, 0, -1, false, { ident })
vim.api.nvim_win_set_cursor(0, { 1, 0 })
if pbuf ~= 0 then
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, {})
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(pbuf)[1])
end
_G.dict = {}
vim.cmd("ClaudeDictate")`, ident, pbuf)
		ev := waitDict(t, d.editor, "done", "error")
		if ev.State != "done" && ev.Error != "the engine heard no words" {
			t.Fatalf("%s %q: %+v", u.voice, u.prompt, ev)
		}
		want := map[bool]string{true: "chat", false: "terminal"}[pbuf != 0]
		if ev.State == "done" && ev.Target != want {
			t.Fatalf("%s %q: dictated into %q, want %q", u.voice, u.prompt, ev.Target, want)
		}
		return ev
	}
	errs, words := 0, 0
	byVoice := map[string][2]int{}
	for _, u := range utts {
		got := ""
		if ev := dictate(chat, u, pbuf); ev.State == "done" {
			got = chat.Lines(t, pbuf)
		}
		ref := werNormal(u.prompt)
		n := wordErrors(ref, werNormal(got))
		t.Logf("%-18s %-48q -> %q (%d/%d)", u.voice, u.prompt, got, n, len(strings.Fields(ref)))
		errs += n
		words += len(strings.Fields(ref))
		bv := byVoice[u.voice]
		byVoice[u.voice] = [2]int{bv[0] + n, bv[1] + len(strings.Fields(ref))}
	}
	// the terminal: the same words typed into the CLI's prompt box, for
	// one voice (the path, not the engine, is what differs from the chat)
	for _, u := range utts[:len(werPrompts)] {
		want := ""
		if ev := dictate(chat, u, pbuf); ev.State == "done" {
			want = chat.Lines(t, pbuf)
		}
		ev := dictate(term, u, 0)
		if want != "" && (ev.State != "done" || ev.Text != want) {
			t.Errorf("terminal, %q: %+v, the chat prompt got %q", u.prompt, ev, want)
		}
	}
	term.waitScreen(t, st.Terminal.Bufnr, "GOT: [")
	for _, v := range werVoices {
		bv := byVoice[v.name]
		t.Logf("%s: word error rate %.1f%% (%d/%d)", v.name, 100*float64(bv[0])/float64(bv[1]), bv[0], bv[1])
	}
	rate := float64(errs) / float64(words)
	t.Logf("mean word error rate %.1f%% (%d/%d) over %d prompts × %d voices", 100*rate, errs, words, len(werPrompts), len(werVoices))
	if rate > werBound {
		t.Errorf("mean word error rate %.1f%%, want <= %.0f%%", 100*rate, 100*werBound)
	}
}
