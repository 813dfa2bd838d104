//go:build linux

package main

import (
	"context"
	"fmt"
	"strings"
)

// chatRate is a delta rate of scenario 20 (deltas per second), with the
// answer's length at that rate.
type chatRate struct {
	rate float64
	n    int
}

// chatRates are scenario 20's rates: about 10 s of streaming each.
func chatRates() []chatRate { return []chatRate{{20, 200}, {200, 2000}, {2000, 10000}} }

// runChatStream is scenario 20: stand-in write → screen, per delta, at 20,
// 200 and 2,000 deltas/s, against the floor of a bare Neovim whose buffer
// a client appends the same tokens to; and the transcript checked whole
// at the end of every answer.
func runChatStream(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	runs := 3
	scale := 1
	if r.quick {
		runs, scale = 1, 5
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

	type cell struct{ plugin, floor []streamRun }
	res := map[float64]*cell{}
	for _, x := range chatRates() {
		res[x.rate] = &cell{}
	}
	for i := 0; i < runs; i++ {
		for _, x := range chatRates() {
			n := x.n / scale
			// A new chat for each answer: the transcript's length is the
			// long-session scenario's subject (22), not this one's.
			id, err := ce.openChat(ctx, "")
			if err != nil {
				return sec, err
			}
			p, err := ce.stream(ctx, id, ce.nextAsk(n, x.rate))
			if err != nil {
				return sec, fmt.Errorf("%g/s: %w", x.rate, err)
			}
			if err := ce.closeChat(ctx, id); err != nil {
				return sec, err
			}
			if err := fe.reset(ctx); err != nil {
				return sec, err
			}
			f, err := fe.stream(ctx, fe.nextAsk(n, x.rate))
			if err != nil {
				return sec, fmt.Errorf("floor %g/s: %w", x.rate, err)
			}
			res[x.rate].plugin = append(res[x.rate].plugin, p)
			res[x.rate].floor = append(res[x.rate].floor, f)
			ps, fs := p.lat.summarize(), f.lat.summarize()
			r.logf("   run %d, %g deltas/s: p50 %s p99 %s (floor %s / %s), %d not seen, intact %v %s", i+1, x.rate,
				fmtMS(ps.Median), fmtMS(ps.P99), fmtMS(fs.Median), fmtMS(fs.P99), p.missing, p.intact, p.problem)
		}
	}

	sec.printf("**Method.** A headless Neovim 0.12 (`--embed`) runs this checkout's plugin and host; the bench attaches to it as "+
		"its UI (`nvim_ui_attach`, %d×%d, `ext_linegrid`) and keeps the grid as a terminal UI would (`grid_line`, `grid_scroll`, "+
		"`grid_clear`). `:ClaudeChat`'s CLI (`chat.cmd`) is the stand-in `internal/bench/standin`: it replays the turn the real "+
		"CLI 2.1.331 wrote in stream-json mode with chatpanel's command line (`internal/bench/standin/testdata/stream.jsonl`, "+
		"recorded against the fake Messages API by its `TestRecord`) — command_lifecycle, system/init, system/status, "+
		"message_start, content_block_start, the text deltas, the assistant message, content_block_stop, message_delta, "+
		"message_stop, result — with new text: each delta one numbered marker word (`w123`, some **bold** or `code`, in "+
		"paragraphs, bullet lists and fenced Lua blocks), written on a fixed schedule at the rate asked, the time just before "+
		"each line's write logged (CLOCK_MONOTONIC). A delta is **on screen** at the first `flush` after which the bench's grid "+
		"holds its marker, timed when the redraw notification reached the bench's handler: Neovim has drawn it and a UI has "+
		"it — the moment a terminal would paint, with nothing of the plugin's own reporting in the path (a redraw hook or an "+
		"`on_lines` callback would time the buffer change, not the screen, and run inside the Neovim being measured). "+
		"Each answer goes to a new chat (layout right, 80 columns), prompt focused, transcript following the end. At the "+
		"end of each answer the transcript's answer block is compared with the text sent: every delta once, in order.\n\n",
		chatCols, chatRows)
	sec.printf("**Floor.** A Neovim without the plugin with the same UI and an 80-column window on the right holding a markdown " +
		"buffer (the transcript's filetype: treesitter highlighting, wrap, linebreak): the bench appends the same tokens at " +
		"the same rate, each with one `nvim_call_atomic` of `nvim_buf_set_text` at the end and `nvim_win_set_cursor` to the last " +
		"line, timed from just before the call. It is the least any client can do to put a token on a Neovim screen.\n\n")
	sec.printf("| rate (deltas/s) | run | deltas | reached | p50 | p90 | p99 | max | not on screen | transcript | floor p50 | floor p99 |\n")
	sec.printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range chatRates() {
		c := res[x.rate]
		for i, p := range c.plugin {
			f := c.floor[i]
			ps, fs := p.lat.summarize(), f.lat.summarize()
			tr := "intact"
			if !p.intact {
				tr = "**" + p.problem + "**"
			}
			sec.printf("| %g | %d | %d | %.0f/s | %s | %s | %s | %s | %d | %s | %s | %s |\n", x.rate, i+1, p.ask.N, p.achieved,
				fmtMS(ps.Median), fmtMS(ps.P90), fmtMS(ps.P99), fmtMS(ps.Max), p.missing, tr, fmtMS(fs.Median), fmtMS(fs.P99))
		}
	}
	sec.printf("\n")
	for _, x := range chatRates() {
		c := res[x.rate]
		var p50s, p99s, fp99s sample
		intact, missing := true, 0
		for i, p := range c.plugin {
			s := p.lat.summarize()
			p50s = append(p50s, s.Median)
			p99s = append(p99s, s.P99)
			fp99s = append(fp99s, c.floor[i].lat.summarize().P99)
			intact = intact && p.intact
			missing += p.missing
		}
		target, verdictText := "—", verdictInfo
		switch x.rate {
		case 200:
			target = "p99 ≤ 16 ms"
			verdictText = verdict(p99s.median() <= 16)
		case 2000:
			target = "no delta lost or out of order"
			verdictText = verdict(intact)
		}
		result := fmt.Sprintf("p50 %s, p99 %s", fmtMS(p50s.median()), fmtMS(p99s.median()))
		if x.rate == 2000 {
			result += fmt.Sprintf("; transcript %s", map[bool]string{true: "intact in every run", false: "**not intact**"}[intact])
		}
		spread := fmt.Sprintf("p99 %s–%s over %d runs; floor p99 %s–%s", fmtMS(p99s.min()), fmtMS(p99s.max()), len(p99s),
			fmtMS(fp99s.min()), fmtMS(fp99s.max()))
		if missing > 0 {
			spread += fmt.Sprintf("; %d markers never on screen", missing)
		}
		sec.add(row{order: 20 + float64(x.rate)/1e5, num: "20", scenario: fmt.Sprintf("chat: stream → screen at %g deltas/s", x.rate),
			figure: "stand-in writes a delta → its text on the UI's screen", result: result, spread: spread,
			target: target, verdict: verdictText, ref: "—"})
	}
	if strings.Contains(sec.body.String(), "**the") {
		sec.printf("Some answers were not intact: see the transcript column.\n\n")
	}
	return sec, nil
}
