//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nvim-claude/nvim-claude/remote/sshtest"
)

// benchT is what sshtest needs of its caller, for the runner (which has no
// testing.TB): a skip or a failure ends the start (a panic Start's caller
// recovers), cleanups run at close.
type benchT struct {
	dir      string
	n        int
	cleanups []func()
	skip     string
	fail     string
}

func (b *benchT) Helper()                     {}
func (b *benchT) Skip(args ...any)            { b.skip = fmt.Sprint(args...); panic(b) }
func (b *benchT) Skipf(f string, args ...any) { b.skip = fmt.Sprintf(f, args...); panic(b) }
func (b *benchT) Fatal(args ...any)           { b.fail = fmt.Sprint(args...); panic(b) }
func (b *benchT) Fatalf(f string, args ...any) {
	b.fail = fmt.Sprintf(f, args...)
	panic(b)
}
func (b *benchT) Logf(string, ...any) {}
func (b *benchT) Failed() bool        { return b.fail != "" }
func (b *benchT) Cleanup(f func())    { b.cleanups = append(b.cleanups, f) }
func (b *benchT) TempDir() string {
	b.n++
	d := filepath.Join(b.dir, "t"+strconv.Itoa(b.n))
	if err := os.MkdirAll(d, 0o700); err != nil {
		b.Fatal(err)
	}
	return d
}
func (b *benchT) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

// errSkip is a start that cannot run here (not root, no sshd).
var errSkip = errors.New("skipped")

// startSSHD starts the tests' throwaway sshd (its own network namespace).
func startSSHD(r *runner) (srv *sshtest.Server, bt *benchT, err error) {
	bt = &benchT{dir: filepath.Join(r.tmp, "sshd")}
	local := filepath.Join(r.tmp, "sshd-local")
	if err := os.MkdirAll(local, 0o755); err != nil {
		return nil, nil, err
	}
	defer func() {
		if v := recover(); v != nil {
			if v != bt {
				panic(v)
			}
			bt.close()
			if bt.skip != "" {
				err = fmt.Errorf("%w: %s", errSkip, bt.skip)
			} else {
				err = errors.New(bt.fail)
			}
			srv, bt = nil, nil
		}
	}()
	srv = sshtest.Start(bt, local, filepath.Join(r.tmp, "sshd-far", "app"))
	return srv, bt, nil
}

// forwardVia puts a client behind ssh: one connection carries -R P (the
// far CLI's forward to our server, on the far side's own loopback) and -L
// (this side's way to that far port). A client through it crosses ssh twice
// (there and back), where the far CLI crosses it once: an upper bound of
// what the forward costs the far CLI.
func forwardVia(ctx context.Context, srv *sshtest.Server, l lockFile) (lockFile, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return l, nil, err
	}
	local := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := strconv.Itoa(l.Port)
	args := append([]string{"-N", "-o", "ExitOnForwardFailure=yes",
		"-L", "127.0.0.1:" + strconv.Itoa(local) + ":127.0.0.1:" + p,
		"-R", "127.0.0.1:" + p + ":127.0.0.1:" + p}, srv.Options...)
	cmd := exec.Command("ssh", append(args, "--", srv.Dest)...)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return l, nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	via := l
	via.Via = local
	deadline := time.Now().Add(20 * time.Second)
	for {
		ws, err := dialWS(ctx, via)
		if err == nil {
			ws.Close()
			return via, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return l, nil, fmt.Errorf("the forward never reached the server: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runRemote(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	na := func(why string) {
		for _, x := range []struct {
			order float64
			what  string
		}{{27, "ping round trip through an SSH forward"}, {27.1, "openDiff 1 MB through an SSH forward"}} {
			sec.add(row{order: x.order, num: "27", scenario: x.what, figure: "—", result: "—", spread: "—", target: "—",
				verdict: notAvailable(why), ref: "—"})
		}
	}
	srv, bt, err := startSSHD(r)
	if errors.Is(err, errSkip) {
		na(err.Error())
		return sec, nil
	}
	if err != nil {
		return sec, err
	}
	defer bt.close()
	via := func(l lockFile) (lockFile, func(), error) { return forwardVia(ctx, srv, l) }

	// Round trips: one Neovim, the same server, direct and through ssh.
	e, lock, err := r.served(ctx, "remote-rt", nil)
	if err != nil {
		return sec, err
	}
	defer e.close()
	vlock, stop, err := via(lock)
	if err != nil {
		return sec, err
	}
	defer stop()
	rounds, nSeq, nConc, clients := 3, 1000, 500, 8
	if r.quick {
		rounds, nSeq, nConc = 1, 200, 50
	}
	var direct, tunnel []rtResult
	for i := 0; i < rounds; i++ {
		for j, side := range [][]lockFile{{lock, vlock}, {vlock, lock}}[i%2] {
			res, err := measureRT(ctx, side, false, pingFrame, nSeq, nConc, clients)
			if err != nil {
				return sec, fmt.Errorf("round %d: %w", i+1, err)
			}
			if (i%2 == 0) == (j == 0) {
				direct = append(direct, res)
			} else {
				tunnel = append(tunnel, res)
			}
		}
		r.logf("   round %d: direct p50 %s, through ssh p50 %s", i+1, fmtMS(ms(direct[i].seq).median()), fmtMS(ms(tunnel[i].seq).median()))
	}
	per := func(rs []rtResult, f func(rtResult) float64) sample {
		out := sample{}
		for _, x := range rs {
			out = append(out, f(x))
		}
		return out
	}
	p50 := func(x rtResult) float64 { return ms(x.seq).median() }
	p99 := func(x rtResult) float64 { return ms(x.seq).quantile(0.99) }
	rate := func(x rtResult) float64 { return x.concRate }
	dp50, tp50 := per(direct, p50), per(tunnel, p50)
	dp99, tp99 := per(direct, p99), per(tunnel, p99)
	r50 := ratios(tp50, dp50)
	sec.add(row{order: 27, num: "27", scenario: fmt.Sprintf("ping, %s sequential, through ssh -L/-R", thousands(float64(nSeq))),
		figure: "round trip p50 / p99 through ssh vs direct",
		result: fmt.Sprintf("%s / %s (direct %s / %s): %s", fmtMS(tp50.median()), fmtMS(tp99.median()), fmtMS(dp50.median()), fmtMS(dp99.median()), fmtRatio(r50.median())),
		spread: fmt.Sprintf("ratio p50 %s–%s over %d rounds", fmtRatio(r50.min()), fmtRatio(r50.max()), rounds),
		target: "—", verdict: verdictInfo, ref: "—"})
	sec.add(row{order: 27.05, num: "27", scenario: fmt.Sprintf("ping, %d concurrent clients, through ssh -L/-R", clients),
		figure: "calls per second through ssh vs direct",
		result: fmt.Sprintf("%.0f/s (direct %.0f/s)", per(tunnel, rate).median(), per(direct, rate).median()),
		spread: fmt.Sprintf("over %d rounds", rounds), target: "—", verdict: verdictInfo, ref: "—"})
	stop()
	e.close()

	// openDiff 1 MB: fresh Neovims, direct and through ssh, alternating.
	old, proposal, _ := bigTexts(1 << 20)
	reps := 3
	if r.quick {
		reps = 1
	}
	var dd, td []diffRun
	for i := 0; i < reps; i++ {
		for _, through := range [][]bool{{false, true}, {true, false}}[i%2] {
			var v func(lockFile) (lockFile, func(), error)
			if through {
				v = via
			}
			run, err := diffWithPlugin(ctx, r, old, proposal, nil, v)
			if err != nil {
				return sec, fmt.Errorf("openDiff rep %d (ssh %v): %w", i+1, through, err)
			}
			if through {
				td = append(td, run)
			} else {
				dd = append(dd, run)
			}
		}
	}
	get := func(rs []diffRun, f func(diffRun) float64) sample {
		out := sample{}
		for _, x := range rs {
			out = append(out, f(x))
		}
		return out
	}
	drawn := func(x diffRun) float64 { return x.drawn }
	accept := func(x diffRun) float64 { return x.accept }
	sec.add(row{order: 27.1, num: "27", scenario: "openDiff 1 MB through ssh -L/-R",
		figure: "tools/call → diff drawn; :w → FILE_SAVED at the client",
		result: fmt.Sprintf("%s; %s (direct %s; %s)", fmtMS(get(td, drawn).median()), fmtMS(get(td, accept).median()),
			fmtMS(get(dd, drawn).median()), fmtMS(get(dd, accept).median())),
		spread: fmt.Sprintf("drawn %s–%s through ssh over %d reps", fmtMS(get(td, drawn).min()), fmtMS(get(td, drawn).max()), reps),
		target: "—", verdict: verdictInfo, ref: "—"})

	sec.printf("A throwaway sshd (Debian's OpenSSH, the tests' `remote/sshtest`: loopback, throwaway keys, its own network "+
		"namespace, so its 127.0.0.1 is another machine's) and one `ssh -N` connection carrying `-R P:127.0.0.1:P` — the "+
		"hold's forward, which the far CLI uses — and `-L L:127.0.0.1:P` on this side. The client dials L (Host header "+
		"127.0.0.1:P, as the far CLI sends): its frames cross the ssh connection twice (to the far side and back), the far "+
		"CLI's once, so the figures are an upper bound of the forward's cost. Ping: one Neovim and server, both paths "+
		"measured in each round (order alternating), %d sequential calls after 50 warm-up, then %d clients × %d calls. "+
		"openDiff: a fresh Neovim per repetition as in scenario 3, the same 1 MB texts, direct and through ssh alternating.\n\n",
		nSeq, clients, nConc)
	sec.printf("| round | peer | sequential p50 | p99 | calls/s (%d clients) |\n|---|---|---|---|---|\n", clients)
	for i := 0; i < rounds; i++ {
		sec.printf("| %d | direct | %s | %s | %.0f |\n", i+1, fmtMS(p50(direct[i])), fmtMS(p99(direct[i])), direct[i].concRate)
		sec.printf("| %d | through ssh | %s | %s | %.0f |\n", i+1, fmtMS(p50(tunnel[i])), fmtMS(p99(tunnel[i])), tunnel[i].concRate)
	}
	sec.printf("\n| rep | peer | drawn | accept |\n|---|---|---|---|\n")
	for i := 0; i < reps; i++ {
		sec.printf("| %d | direct | %s | %s |\n", i+1, fmtMS(dd[i].drawn), fmtMS(dd[i].accept))
		sec.printf("| %d | through ssh | %s | %s |\n", i+1, fmtMS(td[i].drawn), fmtMS(td[i].accept))
	}
	return sec, nil
}
