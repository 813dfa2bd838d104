//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// syncConn is a WebSocket client that does one request at a time on the
// calling goroutine, with the same work per call whether the peer is the
// host or the echo server: write the frame, read frames until the one with
// our id.
type syncConn struct {
	ws   *websocket.Conn
	echo bool
	id   int64
}

func (c *syncConn) roundTrip(frame func(id int64) []byte) (time.Duration, []byte, error) {
	c.id++
	id := c.id
	msg := frame(id)
	start := time.Now()
	if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		return 0, nil, err
	}
	for {
		_, in, err := c.ws.ReadMessage()
		if err != nil {
			return 0, nil, err
		}
		var env struct {
			ID     *int64 `json:"id"`
			Method string `json:"method"`
		}
		if err := json.Unmarshal(in, &env); err != nil {
			return 0, nil, err
		}
		if env.ID != nil && *env.ID == id && (c.echo || env.Method == "") {
			return time.Since(start), in, nil
		}
	}
}

// dialSync connects; for the host it also performs the CLI's handshake.
func dialSync(ctx context.Context, l lockFile, echo bool) (*syncConn, error) {
	ws, err := dialWS(ctx, l)
	if err != nil {
		return nil, err
	}
	c := &syncConn{ws: ws, echo: echo, id: 1000}
	if echo {
		return c, nil
	}
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"nvim-claude-bench","version":"1"}}}`)
	if err := ws.WriteMessage(websocket.TextMessage, init); err != nil {
		ws.Close()
		return nil, err
	}
	for {
		_, in, err := ws.ReadMessage()
		if err != nil {
			ws.Close()
			return nil, fmt.Errorf("initialize: %w", err)
		}
		if strings.Contains(string(in), `"id":0`) {
			break
		}
	}
	for _, m := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":` + strconv.Itoa(pidSelf()) + `}}`,
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			ws.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *syncConn) close() {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = c.ws.Close()
}

func toolFrame(name string) func(id int64) []byte {
	return func(id int64) []byte {
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{},"_meta":{"progressToken":%d}}}`, id, name, id))
	}
}

func pingFrame(id int64) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
}

// startEcho starts the bare echo server and returns its address.
func (r *runner) startEcho() (*exec.Cmd, lockFile, error) {
	cmd := exec.Command(r.echoBin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, lockFile{}, err
	}
	_ = stdin // closed by stopProc's kill; holding it keeps the server up
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, lockFile{}, err
	}
	if err := r.startProc(cmd); err != nil {
		return nil, lockFile{}, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		r.stopProc(cmd)
		return nil, lockFile{}, fmt.Errorf("echo server: %w", err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		r.stopProc(cmd)
		return nil, lockFile{}, fmt.Errorf("echo server said %q", line)
	}
	return cmd, lockFile{Port: port}, nil
}

// rtResult is one side's figures in one round.
type rtResult struct {
	seq        []time.Duration // sequential round trips
	conc       []time.Duration // round trips under 8 concurrent clients
	concRate   float64         // calls per second with 8 clients
	concCalls  int
	concElapse time.Duration
}

// measureRT runs the sequential and the concurrent part against one peer.
func measureRT(ctx context.Context, l lockFile, echo bool, frame func(int64) []byte, nSeq, nConc, clients int) (rtResult, error) {
	var res rtResult
	c, err := dialSync(ctx, l, echo)
	if err != nil {
		return res, err
	}
	defer c.close()
	for i := 0; i < 50; i++ { // warm-up
		if _, _, err := c.roundTrip(frame); err != nil {
			return res, err
		}
	}
	res.seq = make([]time.Duration, 0, nSeq)
	for i := 0; i < nSeq; i++ {
		d, _, err := c.roundTrip(frame)
		if err != nil {
			return res, err
		}
		res.seq = append(res.seq, d)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	conns := make([]*syncConn, clients)
	for i := range conns {
		cc, err := dialSync(ctx, l, echo)
		if err != nil {
			for _, x := range conns[:i] {
				x.close()
			}
			return res, err
		}
		conns[i] = cc
		for j := 0; j < 10; j++ {
			if _, _, err := cc.roundTrip(frame); err != nil {
				return res, err
			}
		}
	}
	defer func() {
		for _, x := range conns {
			x.close()
		}
	}()
	var wg sync.WaitGroup
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	startGate := make(chan struct{})
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-startGate
			out := make([]time.Duration, 0, nConc)
			for j := 0; j < nConc; j++ {
				d, _, err := conns[i].roundTrip(frame)
				if err != nil {
					errs[i] = err
					return
				}
				out = append(out, d)
			}
			lat[i] = out
		}(i)
	}
	start := time.Now()
	close(startGate)
	wg.Wait()
	res.concElapse = time.Since(start)
	for i := range conns {
		if errs[i] != nil {
			return res, errs[i]
		}
		res.conc = append(res.conc, lat[i]...)
	}
	res.concCalls = clients * nConc
	res.concRate = float64(res.concCalls) / res.concElapse.Seconds()
	return res, nil
}

func runRoundTrip(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	e, lock, err := r.served(ctx, "rt", nil)
	if err != nil {
		return sec, err
	}
	defer e.close()
	echoCmd, echoAddr, err := r.startEcho()
	if err != nil {
		return sec, err
	}
	defer r.stopProc(echoCmd)

	// Is the trivial tool there? Fall back to ping, as the brief allows.
	tool := "getWorkspaceFolders"
	var toolNote string
	{
		c, err := dialIDE(ctx, lock)
		if err != nil {
			return sec, err
		}
		res, _, err := c.tool(ctx, tool, nil)
		c.close()
		switch {
		case errors.Is(err, errNoTool):
			toolNote = notAvailable(err.Error()) + "; measured with ping"
			tool = ""
		case err != nil:
			return sec, err
		case len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, `"folders"`):
			return sec, fmt.Errorf("getWorkspaceFolders answered %+v", res)
		}
	}
	hostFrame := pingFrame
	hostWhat := "ping"
	if tool != "" {
		hostFrame = toolFrame(tool)
		hostWhat = "tools/call " + tool
	}

	rounds, nSeq, nConc, clients := 5, 1000, 2000, 8
	if r.quick {
		rounds, nSeq, nConc = 1, 300, 100
	}
	var host, echo, ping []rtResult
	for i := 0; i < rounds; i++ {
		order := []int{0, 1, 2}
		if i%2 == 1 {
			order = []int{2, 1, 0}
		}
		for _, which := range order {
			var res rtResult
			var err error
			switch which {
			case 0:
				res, err = measureRT(ctx, lock, false, hostFrame, nSeq, nConc, clients)
				host = append(host, res)
			case 1:
				res, err = measureRT(ctx, lock, false, pingFrame, nSeq, nConc, clients)
				ping = append(ping, res)
			case 2:
				res, err = measureRT(ctx, echoAddr, true, toolFrame("getWorkspaceFolders"), nSeq, nConc, clients)
				echo = append(echo, res)
			}
			if err != nil {
				return sec, fmt.Errorf("round %d: %w", i+1, err)
			}
		}
		r.logf("   round %d: host p50 %s, echo p50 %s", i+1,
			fmtMS(ms(host[i].seq).median()), fmtMS(ms(echo[i].seq).median()))
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
	cp50 := func(x rtResult) float64 { return ms(x.conc).median() }
	cp99 := func(x rtResult) float64 { return ms(x.conc).quantile(0.99) }

	hp50, ep50 := per(host, p50), per(echo, p50)
	hp99, ep99 := per(host, p99), per(echo, p99)
	hr, er := per(host, rate), per(echo, rate)
	r50 := ratios(hp50, ep50)
	r99 := ratios(hp99, ep99)
	rr := ratios(hr, er)
	ref := "0.11 / 1.5 ms; 7.9k calls/s"
	sec.add(row{order: 11.0, num: "11", scenario: hostWhat + ", 1,000 sequential",
		figure: "round trip p50 / p99 vs bare echo",
		result: fmt.Sprintf("%s / %s (echo %s / %s): %s / %s", fmtMS(hp50.median()), fmtMS(hp99.median()), fmtMS(ep50.median()), fmtMS(ep99.median()), fmtRatio(r50.median()), fmtRatio(r99.median())),
		spread: fmt.Sprintf("ratio p50 %s–%s, p99 %s–%s over %d rounds", fmtRatio(r50.min()), fmtRatio(r50.max()), fmtRatio(r99.min()), fmtRatio(r99.max()), rounds),
		target: "≤ 2× echo", verdict: verdict(r50.median() <= 2 && r99.median() <= 2), ref: ref})
	sec.add(row{order: 11.1, num: "11", scenario: hostWhat + ", 8 concurrent clients",
		figure: "calls per second vs bare echo",
		result: fmt.Sprintf("%.0f/s (echo %.0f/s): %s", hr.median(), er.median(), fmtRatio(rr.median())),
		spread: fmt.Sprintf("ratio %s–%s over %d rounds", fmtRatio(rr.min()), fmtRatio(rr.max()), rounds),
		target: "≥ 0.9× echo", verdict: verdict(rr.median() >= 0.9), ref: ref})
	if toolNote != "" {
		sec.rows[0].verdict += " (" + toolNote + ")"
	}

	sec.printf("Each round measures three peers in turn (the order alternates between rounds): the host answering `%s` "+
		"(a tools/call; on Neovim 0.8+ the host answers it from the folders Lua pushed, after a first call that asks Neovim), the host answering a JSON-RPC `ping` "+
		"(WebSocket + JSON-RPC only, no Neovim), and a bare gorilla/websocket echo server (`internal/bench/echo`, a separate process, "+
		"default buffer sizes) that writes the same request frame back. The client is the same code for all three: write one frame, "+
		"read frames until the one carrying the request's id (it decodes the envelope of every frame it reads, echo included). "+
		"Sequential: one connection, 50 warm-up calls, then %d timed calls. Concurrent: %d connections (each after the CLI handshake), "+
		"%d calls each, all started together; calls/s = all calls ÷ wall time until the last one finished.\n\n", hostWhat, nSeq, clients, nConc)
	sec.printf("| round | peer | sequential p50 | p99 | concurrent p50 | p99 | calls/s (8 clients) |\n|---|---|---|---|---|---|---|\n")
	for i := 0; i < rounds; i++ {
		for _, x := range []struct {
			name string
			r    rtResult
		}{{hostWhat, host[i]}, {"ping (host, no Neovim)", ping[i]}, {"bare echo", echo[i]}} {
			sec.printf("| %d | %s | %s | %s | %s | %s | %.0f |\n", i+1, x.name, fmtMS(p50(x.r)), fmtMS(p99(x.r)), fmtMS(cp50(x.r)), fmtMS(cp99(x.r)), x.r.concRate)
		}
	}
	if sec.rows[0].verdict != verdictMet || sec.rows[1].verdict != verdictMet {
		if why, ok := r.perfUsable(); !ok {
			sec.printf("\nNo profile: %s.\n", why)
		} else {
			for _, x := range []struct {
				what  string
				frame func(int64) []byte
				pids  []int
			}{
				{"Neovim and the host during 3,000 sequential " + hostWhat, hostFrame, []int{e.pid, e.hostPID()}},
				{"the host during 10,000 sequential pings", pingFrame, []int{e.hostPID()}},
			} {
				prof, err := r.startProfile(x.what, x.pids...)
				if err != nil {
					sec.printf("\nNo profile: %v.\n", err)
					break
				}
				n := 3000
				if len(x.pids) == 1 {
					n = 10000
				}
				_, err = measureRT(ctx, lock, false, x.frame, n, 1, 1)
				sec.printf("\n%s", prof.stop(ctx))
				if err != nil {
					return sec, err
				}
			}
		}
	}
	pp50, pr := per(ping, p50), per(ping, rate)
	sec.printf("\nMedians: %s p50 %s (%s echo); ping p50 %s (%s echo), %.0f calls/s (%s echo). "+
		"The difference between the tool call and ping is the tool's dispatch and its larger answer.\n",
		hostWhat, fmtMS(hp50.median()), fmtRatio(r50.median()), fmtMS(pp50.median()), fmtRatio(ratios(pp50, ep50).median()),
		pr.median(), fmtRatio(ratios(pr, er).median()))
	return sec, nil
}
