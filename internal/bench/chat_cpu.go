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
	runs, scale := 5, 1
	if r.quick {
		runs, scale = 1, 5
	}
	chat, chatTS, floor, floorTS, closeAll, err := r.streamSides(ctx)
	if err != nil {
		return sec, err
	}
	defer closeAll()
	// Each comparison: a chat side against its floor, at a rate.
	type pairing struct {
		name        string
		chat, floor streamSide
		x           chatRate
		target      bool
	}
	pairings := []pairing{
		{"200 deltas/s", chat, floor, chatRate{200, 2000}, true},
		{"2,000 deltas/s", chat, floor, chatRate{2000, 4000}, false},
		{"200 deltas/s, both with treesitter highlighting", chatTS, floorTS, chatRate{200, 2000}, false},
	}
	type pair struct{ p, f streamRun }
	res := make([][]pair, len(pairings))
	for i := 0; i < runs; i++ {
		for j, pg := range pairings {
			var pr pair
			// The two sides alternate which goes first.
			for k := 0; k < 2; k++ {
				var err error
				if (i+k)%2 == 0 {
					pr.p, err = pg.chat.stream(ctx, pg.x.n/scale, pg.x.rate)
				} else {
					pr.f, err = pg.floor.stream(ctx, pg.x.n/scale, pg.x.rate)
				}
				if err != nil {
					return sec, fmt.Errorf("%s: %w", pg.name, err)
				}
			}
			res[j] = append(res[j], pr)
			r.logf("   run %d, %s: Neovim CPU %v (floor %v), %.1f vs %.1f µs per delta, host %v", i+1, pg.name,
				pr.p.nvimCPU.Round(time.Millisecond), pr.f.nvimCPU.Round(time.Millisecond),
				perDelta(pr.p), perDelta(pr.f), pr.p.hostCPU.Round(time.Millisecond))
		}
	}

	sec.printf("**Method.** The Neovims of scenario 20 (the chat with the plugin, UI and stand-in; the floor): an answer of N "+
		"deltas streams at the rate into a new chat; the Neovim process's CPU time (user + system, all threads, the kernel's "+
		"process CPU clock) is read just before the prompt is sent and when the chat reports the turn's end (`User "+
		"ClaudeChatTurnDone`), and divided by N — so it also carries the turn's own few events (the prompt echoed, the header, "+
		"the end line), a fixed cost spread over the N deltas. The floor is the bare Neovim appending the same N tokens at the "+
		"same rate with `nvim_buf_set_text` + `nvim_win_set_cursor` in one call a write, into a markdown buffer in the same "+
		"80-column window, highlighted as the chat's transcript is, from before the first call until the last token is on "+
		"the screen. Both Neovims draw to a UI (the "+
		"bench), so the redraw is paid on both sides; the chat writes a delta as soon as Neovim answered the last write "+
		"(merging those that came meanwhile), and so does the floor (one token a write while Neovim keeps up). Runs alternate which side goes first. The host's CPU (the Go process between the stand-in and "+
		"Neovim) is shown for information; it is not Neovim's. Sides: %s; %s; %s; %s.\n\n", chat.desc, chatTS.desc, floor.desc, floorTS.desc)
	sec.printf("| comparison | run | deltas | Neovim CPU, chat | per delta | floor | per delta | ratio | host CPU per delta |\n|---|---|---|---|---|---|---|---|---|\n")
	for j, pg := range pairings {
		for i, pr := range res[j] {
			sec.printf("| %s | %d | %d | %s | %.1f µs | %s | %.1f µs | %s | %.1f µs |\n", pg.name, i+1, pr.p.ask.N,
				fmtMS(float64(pr.p.nvimCPU)/1e6), perDelta(pr.p), fmtMS(float64(pr.f.nvimCPU)/1e6), perDelta(pr.f),
				fmtRatio(perDelta(pr.p)/perDelta(pr.f)), float64(pr.p.hostCPU)/1e3/float64(pr.p.ask.N))
		}
	}
	sec.printf("\n**Reading it.** The chat pays, per write, the RPC call from the host, the Lua that renders the event (the " +
		"bridge's JSON decode, the dispatch, the fold map, the follow of the window's cursor) and the redraw; the floor pays " +
		"its call and the redraw per write. At 200 deltas/s Neovim answers a write before the next delta " +
		"comes, so both sides write each delta; at 2,000 a write of either carries what came during the last one. With treesitter both sides pay its re-parse at every write, several " +
		"times the rest (which is why the transcript does without it by default).\n\n")
	var missed []pairing
	for j, pg := range pairings {
		var p, f sample
		for _, pr := range res[j] {
			p = append(p, perDelta(pr.p))
			f = append(f, perDelta(pr.f))
		}
		rat := ratios(p, f)
		ratio := p.median() / f.median()
		target, v := "—", verdictInfo
		if pg.target {
			target, v = "≤ 1.2×", verdict(ratio <= 1.2)
			if ratio > 1.2 {
				missed = append(missed, pg)
			}
		}
		sec.add(row{order: 21 + float64(j)/100, num: "21", scenario: "chat: deltas streamed into the transcript, " + pg.name,
			figure: "Neovim CPU per delta, chat vs set_text floor",
			result: fmt.Sprintf("%s (%.0f vs %.0f µs)", fmtRatio(ratio), p.median(), f.median()),
			spread: fmt.Sprintf("per-run ratio %s–%s (%d runs)", fmtRatio(rat.min()), fmtRatio(rat.max()), len(rat)),
			target: target, verdict: v, ref: "—"})
	}
	for _, pg := range missed {
		sec.printf("**%s: ratio missed.** ", pg.name)
		r.profileMiss(ctx, sec, "the chat's Neovim and host while deltas stream at "+pg.name, pg.chat.pids(), func() error {
			_, err := pg.chat.stream(ctx, pg.x.n/scale, pg.x.rate)
			return err
		})
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
