//go:build linux

package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memSampler samples a process's VmRSS every period until stopped.
type memSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
	n    int
}

// sampleMem starts sampling pid; the caller owns the sampler and must
// call stop.
func sampleMem(pid int, period time.Duration) *memSampler {
	m := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if mi, err := readMem(pid); err == nil {
				m.mu.Lock()
				m.peak = max(m.peak, mi.RSS)
				m.n++
				m.mu.Unlock()
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// result stops sampling and returns the highest VmRSS seen and the
// number of samples.
func (m *memSampler) result() (int64, int) {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak, m.n
}

// memPhase is what the host's memory was in one phase of scenario 23.
type memPhase struct {
	name     string
	rss, hwm int64 // at the phase's end
	peak     int64 // highest sampled VmRSS during the phase
	samples  int
	note     string
}

// runChatMem is scenario 23: the host's memory with 5 chats open, all
// streaming at once.
func runChatMem(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	const chats = 5
	loads := []chatRate{{200, 4000}, {2000, 20000}}
	if r.quick {
		loads = []chatRate{{200, 800}, {2000, 4000}}
	}
	// Each chat in its own tab (layout "tab"): one is on screen, as a
	// user with five chats would have them.
	ce, err := r.startChatEditor(ctx, "tab", "")
	if err != nil {
		return sec, err
	}
	defer ce.close()
	if err := ce.exec(ctx, `assert(require("claude.server").ensure_job())`, nil); err != nil {
		return sec, fmt.Errorf("start the host: %w", err)
	}
	host := ce.hostPID()
	if host == 0 {
		return sec, fmt.Errorf("no host process")
	}
	var phases []memPhase
	note := func(name string, peak int64, n int, extra string) error {
		mi, err := readMem(host)
		if err != nil {
			return err
		}
		phases = append(phases, memPhase{name: name, rss: mi.RSS, hwm: mi.HWM, peak: max(peak, mi.RSS), samples: n, note: extra})
		r.logf("   %s: VmRSS %s, VmHWM %s, sampled peak %s", name, fmtMB(float64(mi.RSS)), fmtMB(float64(mi.HWM)), fmtMB(float64(max(peak, mi.RSS))))
		return nil
	}
	time.Sleep(500 * time.Millisecond)
	if err := note("host started, no chat", 0, 0, ""); err != nil {
		return sec, err
	}
	ids := make([]string, 0, chats)
	for i := 0; i < chats; i++ {
		id, err := ce.openChat(ctx, "")
		if err != nil {
			return sec, err
		}
		ids = append(ids, id)
	}
	time.Sleep(500 * time.Millisecond)
	if err := note(fmt.Sprintf("%d chats open, idle", chats), 0, 0, ""); err != nil {
		return sec, err
	}
	for _, load := range loads {
		drainEvents(ce.editor)
		m := sampleMem(host, 20*time.Millisecond)
		asks := make(map[string]int, chats)
		start := time.Now()
		for _, id := range ids {
			a := ce.nextAsk(load.n, load.rate)
			asks[id] = a.Seq
			if err := ce.send(ctx, id, a.Prompt()); err != nil {
				m.result()
				return sec, err
			}
		}
		limit := time.Duration(float64(load.n)/load.rate*float64(time.Second)) + time.Minute
		for range ids {
			if _, err := ce.waitEvent(ctx, "chat_turn_done", limit); err != nil {
				m.result()
				return sec, fmt.Errorf("%g/s in %d chats: %w", load.rate, chats, err)
			}
		}
		wall := time.Since(start)
		peak, n := m.result()
		if err := note(fmt.Sprintf("%d chats streaming %d deltas each at %g/s", chats, load.n, load.rate), peak, n,
			fmt.Sprintf("%.1f s", wall.Seconds())); err != nil {
			return sec, err
		}
	}
	ce.noteCLIs()

	sec.printf("**Method.** One Neovim with the plugin and the bench's UI; `chat.layout = \"tab\"` puts each chat in its own tab, so "+
		"one is on screen. The host's memory is read from `/proc/<pid>/status`: VmRSS sampled every 20 ms while the chats stream "+
		"(the peak is the column \"sampled peak\"), VmRSS and VmHWM (the peak over the process's life) at the end of each phase. "+
		"The phases run in order in the same host: started (`ensure_job`), %d chats opened (each its own stand-in CLI), then "+
		"all %d asked for an answer at once, at each rate. The host is a Go process; its RSS includes the runtime's heap "+
		"reserve (GOGC's doubling of the live heap) and the binary's text.\n\n", chats, chats)
	sec.printf("| phase | VmRSS at end | sampled peak | VmHWM at end | samples | wall |\n|---|---|---|---|---|---|\n")
	var worst int64
	for _, p := range phases {
		sec.printf("| %s | %s | %s | %s | %d | %s |\n", p.name, fmtMB(float64(p.rss)), fmtMB(float64(p.peak)), fmtMB(float64(p.hwm)), p.samples, p.note)
		worst = max(worst, p.hwm)
	}
	sec.printf("\nWhat a chat holds in the host while it streams: its session (the CLI's pipes and a line buffer), the events " +
		"waiting for Lua (streamed text of one block merges into one event while Neovim is busy, so a slow Neovim grows a " +
		"string, not a queue) and the turn's state; the rest of the growth under load is Go's heap reserve (GOGC's doubling of " +
		"the live heap between collections).\n\n")
	last := phases[len(phases)-1]
	sec.add(row{order: 23, num: "23", scenario: fmt.Sprintf("chat: host memory, %d chats open and streaming (up to %s deltas/s each)", chats, thousands(loads[len(loads)-1].rate)),
		figure: "host VmHWM (VmRSS peak)", result: fmtMB(float64(worst)),
		spread: fmt.Sprintf("VmRSS %s idle with %d chats, %s at the end", fmtMB(float64(phases[1].rss)), chats, fmtMB(float64(last.rss))),
		target: "≤ 30 MB = 28.6 MiB", verdict: verdict(float64(worst) <= 30e6), ref: "—"})
	return sec, nil
}
