//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// sphinxName names PocketSphinx as Debian 12 packages it.
const sphinxName = "PocketSphinx 0.8 (Debian)"

// runDictation measures dictation's stop → text: a 5 s utterance (espeak-ng,
// padded with silence to 5 s) handed over by a stand-in recorder, stopped,
// transcribed by the real engine and typed into the Claude terminal. The
// engine is whisper.cpp when NVIM_CLAUDE_WHISPER_CMD and
// NVIM_CLAUDE_WHISPER_MODEL name it, else PocketSphinx when installed.
func runDictation(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	const target = "≤ 1.5 s"
	engine, name := "", ""
	if c, m := os.Getenv("NVIM_CLAUDE_WHISPER_CMD"), os.Getenv("NVIM_CLAUDE_WHISPER_MODEL"); c != "" && m != "" {
		engine, name = fmt.Sprintf(`engine = "whisper", whisper = { cmd = %q, model = %q, language = "en" }`, c, m), "whisper.cpp ("+filepath.Base(m)+")"
	} else if _, err := exec.LookPath("pocketsphinx_continuous"); err == nil {
		engine, name = `engine = "pocketsphinx"`, sphinxName
	}
	missing := ""
	for _, b := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = b
		}
	}
	if engine == "" || missing != "" {
		why := "no speech-to-text engine (scripts/install-dictation; whisper.cpp: NVIM_CLAUDE_WHISPER_CMD/MODEL)"
		if missing != "" {
			why = "no " + missing + " (scripts/install-dictation)"
		}
		sec.add(row{order: 24, num: "24", scenario: "dictation: stop → text, 5 s utterance", figure: "median",
			result: notAvailable(why), target: target, verdict: verdictInfo})
		return sec, nil
	}
	dir, err := r.project("dictation", nil)
	if err != nil {
		return sec, err
	}
	raw, wav := filepath.Join(dir, "speech.raw.wav"), filepath.Join(dir, "speech.wav")
	if out, err := exec.CommandContext(ctx, "espeak-ng", "-v", "en-us", "-s", "140", "-w", raw,
		"rename parse_args to parse_flags in the main file and run the unit tests").CombinedOutput(); err != nil {
		return sec, fmt.Errorf("espeak-ng: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", wav, "pad", "0.3", "5", "trim", "0", "5").CombinedOutput(); err != nil {
		return sec, fmt.Errorf("sox: %v\n%s", err, out)
	}
	rec := filepath.Join(dir, "rec")
	if err := os.WriteFile(rec, []byte("#!/bin/sh\ntrap 'exit 0' INT TERM\ncp \"$1\" \"$2\" || exit 1\nwhile :; do sleep 0.05; done\n"), 0o755); err != nil {
		return sec, err
	}
	e, err := r.startEditor(ctx, editorOpts{plugin: true, dir: dir,
		setup: fmt.Sprintf(`terminal_cmd = { "sh", "-c", "cat >/dev/null" }, dictation = { %s, recorder = { cmd = { %q, %q, "{file}" } } }`, engine, rec, wav)})
	if err != nil {
		return sec, err
	}
	defer e.close()
	if err := e.exec(ctx, `vim.cmd("ClaudeStart")
_G.bd = {}
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeDictation", callback = function(ev)
  _G.bd[ev.data.state] = vim.loop.hrtime()
  _G.bd.text = ev.data.text or _G.bd.text
  _G.bd.error = ev.data.error or _G.bd.error
end })`, nil); err != nil {
		return sec, err
	}
	runs := 5
	if r.quick {
		runs = 2
	}
	var lat, floor []time.Duration
	text := ""
	for i := 0; i < runs; i++ {
		// the floor: the same engine, same file, run alone (PocketSphinx:
		// the command line lua/claude/dictation.lua builds), interleaved
		if name == sphinxName {
			start := time.Now()
			if out, err := exec.CommandContext(ctx, "pocketsphinx_continuous", "-infile", wav, "-logfn", "/dev/null").CombinedOutput(); err != nil {
				return sec, fmt.Errorf("pocketsphinx_continuous alone: %v\n%s", err, out)
			}
			floor = append(floor, time.Since(start))
		}
		if err := e.exec(ctx, `_G.bd = {} vim.cmd("ClaudeDictate")`, nil); err != nil {
			return sec, err
		}
		// recording: stopped once the recorder has handed the file over
		if err := waitLua(ctx, e, `local s = require("claude.dictation").state()
return _G.bd.error or (s and s.phase == "recording" and vim.fn.getfsize(s.file) > 44 and "ok")`); err != nil {
			return sec, err
		}
		if err := e.exec(ctx, `vim.cmd("ClaudeDictate stop")`, nil); err != nil {
			return sec, err
		}
		var res struct {
			Stopped, Done float64
			Text, Error   string
		}
		if err := waitLua(ctx, e, `return _G.bd.error or (_G.bd.done and "ok")`); err != nil {
			return sec, err
		}
		if err := e.eval(ctx, `return { stopped = _G.bd.stopped, done = _G.bd.done, text = _G.bd.text, error = _G.bd.error }`, &res); err != nil {
			return sec, err
		}
		if res.Error != "" {
			return sec, fmt.Errorf("dictation: %s", res.Error)
		}
		lat = append(lat, time.Duration(res.Done-res.Stopped))
		text = res.Text
	}
	s := ms(lat)
	result := fmtMS(s.median())
	if len(floor) > 0 {
		f := ms(floor)
		result = fmt.Sprintf("%s vs the engine alone %s (+%s)", fmtMS(s.median()), fmtMS(f.median()), fmtMS(s.median()-f.median()))
	}
	sec.add(row{order: 24, num: "24", scenario: "dictation: stop → text, 5 s utterance, " + name,
		figure: "median; floor: the engine run alone on the same file", result: result, spread: fmt.Sprintf("%s, n=%d", fmtRange(s.min(), s.max()), len(s)),
		target: target, verdict: verdict(s.median() <= 1500)})
	sec.printf("A 5 s WAV (espeak-ng, padded with silence) handed over by a stand-in recorder; `:ClaudeDictate stop` → the "+
		"`done` event of `User ClaudeDictation` (the text typed into the Claude terminal), %d runs, engine %s. Last transcript: %q.\n\n",
		runs, name, text)
	return sec, nil
}

// waitLua polls code until it returns a string ("ok", or an error to
// report), for at most a minute.
func waitLua(ctx context.Context, e *editor, code string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var got any
		if err := e.eval(ctx, code, &got); err != nil {
			return err
		}
		if s, ok := got.(string); ok {
			if s == "ok" {
				return nil
			}
			return fmt.Errorf("dictation: %s", s)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("dictation: no result within a minute")
}
