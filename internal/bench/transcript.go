//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// runTranscript is scenario 26: the review queue while a session's
// transcript grows. The queue learns of Claude's writes by reading the
// CLI's transcripts (<config dir>/projects/<project>/<session>.jsonl) as
// they grow; a long session appends hundreds of MB. The runner appends a
// realistic mix to one transcript at a steady rate — the assistant's text,
// and every tenth record a prompt and an Edit's result carrying the whole
// file before it (as the CLI records it) — and reads the host's and
// Neovim's CPU and the host's memory. The floor is the same Neovim and
// host over the same time with nothing appended.
func runTranscript(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	totalMB, chunkMB := 200, 1
	if r.quick {
		totalMB = 20
	}
	const every = 250 * time.Millisecond // one chunk per poll of the queue
	src := cursorFile()                  // the edited file: 2,000 lines, ~100 KB
	ep, _, err := r.served(ctx, "transcript", map[string]string{"src/big.go": src})
	if err != nil {
		return sec, err
	}
	defer ep.close()
	dir := ep.dir
	host := ep.hostPID()
	if host == 0 {
		return sec, fmt.Errorf("no host process")
	}
	projects := filepath.Join(ep.cfgDir, "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(dir, "-"))
	if err := os.MkdirAll(projects, 0o700); err != nil {
		return sec, err
	}
	const session = "0d6c1f8e-5a4b-4c3d-9e2f-1a2b3c4d5e6f"
	path := filepath.Join(projects, session+".jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return sec, err
	}
	defer f.Close()
	file := filepath.Join(dir, "src", "big.go")
	// the file as the edits leave it (a file as it was is not listed)
	if err := os.WriteFile(file, []byte(strings.Replace(src, "alpha", "ALPHA", 1)), 0o644); err != nil {
		return sec, err
	}
	seq := 0
	line := func(v map[string]any) []byte {
		seq++
		v["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", seq)
		v["sessionId"], v["cwd"], v["entrypoint"] = session, dir, "cli"
		v["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
		b, _ := json.Marshal(v)
		return append(b, '\n')
	}
	text := strings.Repeat("The change keeps the step functions' signatures and moves the shared part into compute. ", 24)
	prompt := 0
	// chunk is about chunkMB of records.
	chunk := func() []byte {
		var b []byte
		for i := 0; len(b) < chunkMB<<20; i++ {
			if i%10 == 0 {
				prompt++
				pid := fmt.Sprintf("prompt-%d", prompt)
				b = append(b, line(map[string]any{"type": "user", "promptId": pid,
					"message": map[string]any{"role": "user", "content": fmt.Sprintf("tidy step %d", prompt)}})...)
				b = append(b, line(map[string]any{"type": "user", "promptId": pid,
					"message":       map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}}},
					"toolUseResult": map[string]any{"filePath": file, "oldString": "alpha", "newString": "ALPHA", "originalFile": src, "replaceAll": false, "userModified": false}})...)
				continue
			}
			b = append(b, line(map[string]any{"type": "assistant",
				"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}})...)
		}
		return b
	}
	// the queue's first look at the directory, then a quiet baseline
	if _, err := f.Write(chunk()); err != nil {
		return sec, err
	}
	time.Sleep(2 * time.Second)
	measure := func(grow bool) (nvim, hostCPU time.Duration, rssStart, rssPeak, rssEnd int64, written int64, err error) {
		m0, _ := readMem(host)
		rssStart = m0.RSS
		sm := sampleMem(host, 100*time.Millisecond)
		n0, _ := cpuClock(ep.pid)
		h0, _ := cpuClock(host)
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; i < totalMB/chunkMB; i++ {
			if grow {
				b := chunk()
				if _, err = f.Write(b); err != nil {
					sm.result()
					return
				}
				written += int64(len(b))
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				sm.result()
				err = ctx.Err()
				return
			}
		}
		time.Sleep(2 * every) // the last chunk's poll
		if err = ep.exec(ctx, "return 1", nil); err != nil {
			sm.result()
			return
		}
		n1, _ := cpuClock(ep.pid)
		h1, _ := cpuClock(host)
		rssPeak, _ = sm.result()
		m1, _ := readMem(host)
		return n1 - n0, h1 - h0, rssStart, max(rssPeak, m1.RSS), m1.RSS, written, nil
	}
	nF, hF, _, _, _, _, err := measure(false)
	if err != nil {
		return sec, err
	}
	nG, hG, rss0, rssPeak, rss1, written, err := measure(true)
	if err != nil {
		return sec, err
	}
	mb := float64(written) / (1 << 20)
	// what :ClaudeReview lists of the session (its panel closed again)
	listed := -1
	if ep.exec(ctx, `vim.cmd("ClaudeReview session")`, nil) == nil {
		for i := 0; i < 50 && listed <= 0; i++ {
			time.Sleep(100 * time.Millisecond)
			_ = ep.eval(ctx, `return #require("claude.review").items()`, &listed)
		}
	}
	perMB := func(d, floor time.Duration) float64 { return (d - floor).Seconds() * 1000 / mb }
	hostPerMB, nvimPerMB := perMB(hG, hF), perMB(nG, nF)
	growth := float64(rssPeak - rss0)
	sec.add(row{order: 26, num: "26", scenario: fmt.Sprintf("a session transcript grows by %.0f MB (%d MB every %v), the review queue reading it", mb, chunkMB, every),
		figure: "host CPU per MB appended (over the idle floor); Neovim's",
		result: fmt.Sprintf("host %.2f ms/MB, Neovim %+.3f ms/MB", hostPerMB, nvimPerMB),
		spread: fmt.Sprintf("host %s vs idle %s; Neovim %s vs %s", fmtMS(hG.Seconds()*1000), fmtMS(hF.Seconds()*1000), fmtMS(nG.Seconds()*1000), fmtMS(nF.Seconds()*1000)),
		target: "host ≤ 50 ms/MB; Neovim ≤ 1 ms/MB", verdict: verdict(hostPerMB <= 50 && nvimPerMB <= 1), ref: "—"})
	sec.add(row{order: 26.1, num: "26", scenario: "same", figure: "host VmRSS: start → peak (end)",
		result: fmt.Sprintf("%s → %s (%s): %+.1f MB over %.0f MB read", fmtMB(float64(rss0)), fmtMB(float64(rssPeak)), fmtMB(float64(rss1)), growth/(1<<20), mb),
		spread: "sampled every 100 ms", target: "flat: ≤ +10 MB", verdict: verdict(growth <= 10<<20), ref: "—"})
	sec.printf("**26 — the review queue and a growing transcript.** A Neovim with the plugin (`:ClaudeServe`) in a project with a "+
		"2,000-line file; the runner appends to one session transcript in the CLI's projects directory for that project %d MB "+
		"every %v (the queue's poll), %.0f MB in all: the assistant's text (about 2 KB a record), and every tenth record a "+
		"prompt and an Edit's result that carries the whole file before the edit (~100 KB), as the CLI records them. The floor "+
		"is the same run with nothing appended. Host and Neovim CPU from the kernel's process CPU clocks; host VmRSS sampled "+
		"every 100 ms. The queue listed %d file(s) at the end. The CPU targets are what a user cannot feel: a busy session "+
		"appends about a MB a minute, so 50 ms of host CPU per MB is under 0.1%% of a core, and Neovim's share (the queue's "+
		"count for the statusline, once per poll that found a change) a thousandth of that.\n\n", chunkMB, every, mb, listed)
	return sec, nil
}
