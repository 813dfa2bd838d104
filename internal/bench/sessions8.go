//go:build linux

package main

import (
	"context"
	"fmt"
	"time"
)

// eightSessions measures what seven more CLIs connected cost while the user
// types (rows 1.1 and 1.2): the same script on the plugin's Neovim, runs
// alternating between one client connected and eight, and the host's
// memory with eight. The seven extra clients read every frame (as CLIs do)
// and say they are this process, which no terminal session of the
// plugin's is: each gets every selection, the host's costliest case.
func eightSessions(ctx context.Context, r *runner, sec *section, ep *editor, lock lockFile, c *ideClient, keys []string, runs int) error {
	const extra = 7
	connect := func() ([]*ideClient, error) {
		var out []*ideClient
		for i := 0; i < extra; i++ {
			x, err := dialIDE(ctx, lock)
			if err != nil {
				for _, y := range out {
					y.close()
				}
				return nil, fmt.Errorf("client %d: %w", i+2, err)
			}
			out = append(out, x)
		}
		// The host greets a new CLI after a delay: start once that is over.
		time.Sleep(1200 * time.Millisecond)
		return out, nil
	}
	var one, eight []cpuRun
	var mem memInfo
	host := ep.hostPID()
	for i := 0; i < runs; i++ {
		for _, many := range []bool{i%2 == 0, i%2 == 1} {
			if !many {
				run, err := runScript(ctx, ep, c, keys)
				if err != nil {
					return fmt.Errorf("one client, run %d: %w", i+1, err)
				}
				one = append(one, run)
				continue
			}
			more, err := connect()
			if err != nil {
				return err
			}
			run, err := runScript(ctx, ep, c, keys)
			if host > 0 {
				if m, merr := readMem(host); merr == nil {
					mem.RSS = max(mem.RSS, m.RSS)
					mem.HWM = max(mem.HWM, m.HWM)
				}
			}
			for _, x := range more {
				x.close()
			}
			if err != nil {
				return fmt.Errorf("eight clients, run %d: %w", i+1, err)
			}
			eight = append(eight, run)
		}
		r.logf("   run %d: Neovim CPU with one client %v, with eight %v", i+1,
			one[i].nvim.Round(time.Millisecond), eight[i].nvim.Round(time.Millisecond))
	}
	c1, c8 := sample{}, sample{}
	for i := range one {
		c1 = append(c1, one[i].nvim.Seconds()*1000)
		c8 = append(c8, eight[i].nvim.Seconds()*1000)
	}
	rat := ratios(c8, c1)
	ratio := c8.median() / c1.median()
	sec.add(row{order: 1.1, num: "1", scenario: fmt.Sprintf("same %d moves with eight clients connected (sessions in parallel)", len(keys)),
		figure: "Neovim CPU time, eight clients vs one",
		result: fmt.Sprintf("%s (%s vs %s)", fmtRatio(ratio), fmtMS(c8.median()), fmtMS(c1.median())),
		spread: fmt.Sprintf("per-run ratio %s–%s (%d runs)", fmtRatio(rat.min()), fmtRatio(rat.max()), runs),
		target: "≤ 1.05×", verdict: verdict(ratio <= 1.05), ref: "—"})
	if host > 0 && mem.HWM > 0 {
		sec.add(row{order: 1.2, num: "1", scenario: "same, eight clients connected", figure: "Go host RSS (VmRSS / VmHWM)",
			result: fmt.Sprintf("%s / %s", fmtMB(float64(mem.RSS)), fmtMB(float64(mem.HWM))),
			spread: "the highest after each run with eight", target: "≤ 40 MB", verdict: verdict(mem.HWM <= 40<<20), ref: "—"})
	}
	sec.printf("**1 — eight sessions.** The same script on the plugin's Neovim, %d runs alternating between the one client above "+
		"and eight: seven more WebSocket clients dialled, handshaken as the CLI does and reading every frame (each gets every "+
		"selection_changed, as a CLI that is no terminal session of this Neovim does), closed after the run. Host memory: "+
		"`/proc/<host pid>/status` after each run with eight.\n\n", runs)
	sec.printf("| run | Neovim CPU, one client | eight clients | ratio | host CPU, one | host CPU, eight |\n|---|---|---|---|---|---|\n")
	for i := range one {
		sec.printf("| %d | %s | %s | %s | %s | %s |\n", i+1, fmtMS(c1[i]), fmtMS(c8[i]), fmtRatio(c8[i]/c1[i]),
			fmtMS(one[i].host.Seconds()*1000), fmtMS(eight[i].host.Seconds()*1000))
	}
	sec.printf("\n")
	return nil
}
