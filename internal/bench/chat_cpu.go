//go:build linux

package main

import (
	"context"
	"fmt"
	"time"
)

// runChatCPU is scenario 21: Neovim's CPU time per streamed delta in the
// chat against the floor of a bare Neovim appending the same tokens with
// nvim_buf_set_text, both drawing to the bench's UI.
func runChatCPU(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	runs := 5
	rates := []chatRate{{200, 2000}, {2000, 10000}}
	if r.quick {
		runs = 1
		rates = []chatRate{{200, 400}, {2000, 2000}}
	}
	ce, err := r.startChatEditor(ctx, "right", "")
	if err != nil {
		return sec, err
	}
	defer ce.close()
	fe, err := r.startFloorEditor(ctx)
	if err != nil {
		return sec, err
	}
	defer fe.close()

	type pair struct{ p, f streamRun }
	res := map[float64][]pair{}
	for i := 0; i < runs; i++ {
		for _, x := range rates {
			var pr pair
			// The two sides alternate which goes first.
			for k := 0; k < 2; k++ {
				if (i+k)%2 == 0 {
					id, err := ce.openChat(ctx, "")
					if err != nil {
						return sec, err
					}
					if pr.p, err = ce.stream(ctx, id, ce.nextAsk(x.n, x.rate)); err != nil {
						return sec, fmt.Errorf("%g/s: %w", x.rate, err)
					}
					if err := ce.closeChat(ctx, id); err != nil {
						return sec, err
					}
					continue
				}
				if err := fe.reset(ctx); err != nil {
					return sec, err
				}
				if pr.f, err = fe.stream(ctx, fe.nextAsk(x.n, x.rate)); err != nil {
					return sec, fmt.Errorf("floor %g/s: %w", x.rate, err)
				}
			}
			res[x.rate] = append(res[x.rate], pr)
			r.logf("   run %d, %g deltas/s: Neovim CPU %v (floor %v), %.1f vs %.1f µs per delta, host %v", i+1, x.rate,
				pr.p.nvimCPU.Round(time.Millisecond), pr.f.nvimCPU.Round(time.Millisecond),
				perDelta(pr.p), perDelta(pr.f), pr.p.hostCPU.Round(time.Millisecond))
		}
	}

	sec.printf("**Method.** As in scenario 20 (the same Neovim with the plugin, UI, stand-in and floor): an answer of N deltas " +
		"streams at the rate into a new chat; the Neovim process's CPU time (user + system, all threads, the kernel's process CPU " +
		"clock) is read just before the prompt is sent and when the chat reports the turn's end (`User ClaudeChatTurnDone`), and " +
		"divided by N — so it also carries the turn's own few events (the prompt echoed, the header, the end line), a fixed " +
		"cost spread over the N deltas. The floor is the bare Neovim of scenario 20 appending the same N tokens at the same rate " +
		"with `nvim_buf_set_text` + `nvim_win_set_cursor` in one call each, into a markdown buffer in the same 80-column window " +
		"(treesitter highlighting on, as the transcript's), from before the first call until the last token is on the screen. " +
		"Both Neovims draw to a UI (the bench), so the redraw is paid on both sides. Runs alternate which side goes first. The " +
		"host's CPU (the Go process between the stand-in and Neovim) is shown for information; it is not Neovim's.\n\n")
	sec.printf("| rate | run | deltas | Neovim CPU, chat | per delta | floor | per delta | ratio | host CPU per delta |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range rates {
		for i, pr := range res[x.rate] {
			sec.printf("| %g/s | %d | %d | %s | %.1f µs | %s | %.1f µs | %s | %.1f µs |\n", x.rate, i+1, pr.p.ask.N,
				fmtMS(float64(pr.p.nvimCPU)/1e6), perDelta(pr.p), fmtMS(float64(pr.f.nvimCPU)/1e6), perDelta(pr.f),
				fmtRatio(perDelta(pr.p)/perDelta(pr.f)), float64(pr.p.hostCPU)/1e3/float64(pr.p.ask.N))
		}
	}
	sec.printf("\n")
	for _, x := range rates {
		var p, f sample
		for _, pr := range res[x.rate] {
			p = append(p, perDelta(pr.p))
			f = append(f, perDelta(pr.f))
		}
		rat := ratios(p, f)
		ratio := p.median() / f.median()
		target, v := "—", verdictInfo
		if x.rate == 200 {
			target, v = "≤ 1.5×", verdict(ratio <= 1.5)
		}
		sec.add(row{order: 21 + float64(x.rate)/1e5, num: "21", scenario: fmt.Sprintf("chat: %g deltas/s streamed into the transcript", x.rate),
			figure: "Neovim CPU per delta, chat vs set_text floor",
			result: fmt.Sprintf("%s (%.1f vs %.1f µs)", fmtRatio(ratio), p.median(), f.median()),
			spread: fmt.Sprintf("per-run ratio %s–%s (%d runs)", fmtRatio(rat.min()), fmtRatio(rat.max()), len(rat)),
			target: target, verdict: v, ref: "—"})
	}
	return sec, nil
}

// perDelta is a run's Neovim CPU per delta in µs.
func perDelta(s streamRun) float64 {
	if s.ask.N == 0 {
		return 0
	}
	return float64(s.nvimCPU) / 1e3 / float64(s.ask.N)
}
