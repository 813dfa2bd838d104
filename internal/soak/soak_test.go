// Package soak loads the whole application — the App on a real Neovim,
// its IDE server on real sockets — with many CLIs calling tools while the
// cursor never stops moving, and checks that nothing fails and nothing
// leaks. `make soak` runs it at full size (SOAK=1); without SOAK it runs a
// small version that finishes in seconds.
package soak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nvim-claude/nvim-claude/app"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// size is the load: clients × calls each, while moves cursor moves go out.
type size struct {
	clients, calls, moves int
}

// full is the figure; small keeps `go test ./...` quick.
var (
	full  = size{clients: 16, calls: 5000, moves: 50000}
	small = size{clients: 4, calls: 150, moves: 2000}
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func loadSize() size {
	s := small
	if os.Getenv("SOAK") == "1" {
		s = full
	}
	return size{
		clients: envInt("SOAK_CLIENTS", s.clients),
		calls:   envInt("SOAK_CALLS", s.calls),
		moves:   envInt("SOAK_MOVES", s.moves),
	}
}

// rssKiB is a process's resident set size.
func rssKiB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	return -1
}

// goSettle collects garbage, returns freed memory to the OS and reports
// the goroutine count, the live heap and the RSS.
func goSettle() (goroutines, heapKiB, rss int) {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), int(m.HeapAlloc >> 10), rssKiB(os.Getpid())
}

// call is one kind of call the clients make, with the check its answer
// must pass.
type call struct {
	name   string
	method string
	params func(file string) string
	ok     func(result json.RawMessage) error
}

func toolCall(name, args string) func(string) string {
	return func(file string) string {
		return fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, strings.ReplaceAll(args, "FILE", file))
	}
}

// toolOK checks a tools/call result: not an error, and the text has want.
func toolOK(want string) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		var r struct {
			Content []mcp.Content `json:"content"`
			IsError bool          `json:"isError"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		text := ""
		for _, c := range r.Content {
			text += c.Text
		}
		if r.IsError || !strings.Contains(text, want) {
			return fmt.Errorf("isError %v: %.200q", r.IsError, text)
		}
		return nil
	}
}

func resultHas(want string) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		if !bytes.Contains(raw, []byte(want)) {
			return fmt.Errorf("%.200s lacks %q", raw, want)
		}
		return nil
	}
}

// mix is what a busy CLI (and the other MCP clients an IDE server meets)
// asks, none of which moves the cursor.
var mix = []call{
	{"getCurrentSelection", "tools/call", toolCall("getCurrentSelection", `{}`), toolOK(`"success":true`)},
	{"getLatestSelection", "tools/call", toolCall("getLatestSelection", `{}`), toolOK(`"success"`)},
	{"getOpenEditors", "tools/call", toolCall("getOpenEditors", `{}`), toolOK(`"tabs"`)},
	{"getWorkspaceFolders", "tools/call", toolCall("getWorkspaceFolders", `{}`), toolOK(`"success":true`)},
	{"getDiagnostics", "tools/call", toolCall("getDiagnostics", `{}`), toolOK(`[`)},
	{"getDiagnostics uri", "tools/call", toolCall("getDiagnostics", `{"uri":"file://FILE"}`), toolOK(`[`)},
	{"checkDocumentDirty", "tools/call", toolCall("checkDocumentDirty", `{"filePath":"FILE"}`), toolOK(`"success":true`)},
	{"get_all_opened_file_paths", "tools/call", toolCall("get_all_opened_file_paths", `{}`), toolOK(`load.txt`)},
	{"closeAllDiffTabs", "tools/call", toolCall("closeAllDiffTabs", `{}`), toolOK(`CLOSED_0_DIFF_TABS`)},
	{"readFile", "readFile", func(string) string { return `{"path":"load.txt"}` }, resultHas(`"content"`)},
	{"listFiles", "listFiles", func(string) string { return `{}` }, resultHas(`load.txt`)},
	{"getWorkspaceInfo", "getWorkspaceInfo", func(string) string { return `{}` }, resultHas(`"folders"`)},
	{"ping", "ping", func(string) string { return `{}` }, resultHas(`{}`)},
	{"tools/list", "tools/list", func(string) string { return `{}` }, resultHas(`getDiagnostics`)},
}

// client is one stand-in CLI.
type client struct {
	ws      *websocket.Conn
	replies sync.Map // id → chan json.RawMessage (the whole frame)

	mu      sync.Mutex
	lastSel json.RawMessage // params of the last selection_changed
	sels    int
}

func dial(t *testing.T, port int, token string, pid int) *client {
	t.Helper()
	h := http.Header{}
	h.Set(mcp.AuthHeader, token)
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: 10 * nvimtest.Slack * time.Second}
	ws, _, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/", port), h)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := &client{ws: ws}
	go c.read()
	if _, err := c.do("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}`, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	if err := c.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":%d}}`, pid)); err != nil {
		t.Fatal(err)
	}
	return c
}

var writeMu sync.Map // *websocket.Conn → *sync.Mutex

func (c *client) write(msg string) error {
	m, _ := writeMu.LoadOrStore(c.ws, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, []byte(msg))
}

// read dispatches replies by id and keeps the latest selection; it ends
// when the connection closes.
func (c *client) read() {
	for {
		_, b, err := c.ws.ReadMessage()
		if err != nil {
			c.replies.Range(func(_, v any) bool {
				close(v.(chan json.RawMessage))
				return true
			})
			return
		}
		var f struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		if f.Method == "selection_changed" {
			c.mu.Lock()
			c.lastSel, c.sels = f.Params, c.sels+1
			c.mu.Unlock()
			continue
		}
		if f.ID != nil {
			if ch, ok := c.replies.LoadAndDelete(*f.ID); ok {
				ch.(chan json.RawMessage) <- b
			}
		}
	}
}

// do sends a request and waits for its reply; it returns the result or
// an error for an error reply, a missing reply or a closed connection.
func (c *client) do(method, params string, id int) (json.RawMessage, error) {
	ch := make(chan json.RawMessage, 1)
	c.replies.Store(id, ch)
	if err := c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		return nil, err
	}
	timer := time.NewTimer(60 * time.Second) // stopped: go.mod's go 1.22 keeps unstopped timers alive
	defer timer.Stop()
	select {
	case b, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: connection closed", method)
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *mcp.Error      `json:"error"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %v", method, r.Error)
		}
		return r.Result, nil
	case <-timer.C:
		return nil, fmt.Errorf("%s: no reply in 60 s", method)
	}
}

func (c *client) last() (json.RawMessage, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSel, c.sels
}

// TestSoak is the load: size.clients clients each make size.calls calls
// from the mix while size.moves cursor moves (with visual selections)
// stream to all of them as selection_changed. Then: no call failed, every
// client's last selection is the editor's final one, and the goroutine
// count and memory of the host side are back at their baseline, Neovim's
// memory too.
func TestSoak(t *testing.T) {
	sz := loadSize()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&text, "line %04d: the quick brown fox ✻ jumps over the lazy dog %d\n", i, i*i)
	}
	file := filepath.Join(dir, "load.txt")
	if err := os.WriteFile(file, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: `require("claude").setup({}) vim.cmd("edit load.txt")`})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	a := app.New(app.Options{Editor: b})
	if err := a.Register(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	var st struct {
		St struct {
			Running  bool   `json:"running"`
			Port     int    `json:"port"`
			LockFile string `json:"lock_file"`
		} `json:"st"`
		Err string `json:"err"`
	}
	n.Eval(t, `local s = require("claude.server")
s.state().chan = ...
assert(s.send_options())
local st, err = s.start()
return { st = st or vim.NIL, err = err or vim.NIL }`, &st, n.ChannelID())
	if !st.St.Running {
		t.Fatalf("start: %s", st.Err)
	}
	lock, err := mcp.ReadLockFile(st.St.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	var nvimPID int
	n.Eval(t, `return vim.fn.getpid()`, &nvimPID)
	// A first round trip loads everything lazily loaded, so the baseline
	// holds what a running editor holds.
	warm := dial(t, st.St.Port, lock.AuthToken, 1)
	for i, c := range mix {
		if _, err := warm.do(c.method, c.params(file), 1000+i); err != nil {
			t.Fatalf("warm-up %s: %v", c.name, err)
		}
	}
	_ = warm.ws.Close()
	time.Sleep(time.Second)
	n.Exec(t, `collectgarbage() collectgarbage()`)
	goBase, heapBase, rssBase := goSettle()
	nvimBase := rssKiB(nvimPID)
	t.Logf("load: %d clients × %d calls, %d cursor moves", sz.clients, sz.calls, sz.moves)
	t.Logf("baseline: %d goroutines, live heap %d KiB, RSS %d KiB; Neovim RSS %d KiB", goBase, heapBase, rssBase, nvimBase)

	clients := make([]*client, sz.clients)
	for i := range clients {
		clients[i] = dial(t, st.St.Port, lock.AuthToken, 10000+i)
	}
	start := time.Now()
	var failures atomic.Int64
	var failMu sync.Mutex
	failed := map[string]int{}
	fail := func(what string, err error) {
		if failures.Add(1) <= 10 {
			t.Errorf("%s: %v", what, err)
		}
		failMu.Lock()
		failed[what]++
		failMu.Unlock()
	}
	var latencies []time.Duration
	var latMu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func(i int, c *client) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(i)))
			lat := make([]time.Duration, 0, sz.calls)
			for j := 0; j < sz.calls; j++ {
				k := mix[rng.Intn(len(mix))]
				t0 := time.Now()
				res, err := c.do(k.method, k.params(file), j)
				lat = append(lat, time.Since(t0))
				if err == nil {
					err = k.ok(res)
				}
				if err != nil {
					fail(k.name, err)
				}
			}
			latMu.Lock()
			latencies = append(latencies, lat...)
			latMu.Unlock()
		}(i, c)
	}

	// The cursor: one motion at a time, each typed and processed before
	// the next (as a user types: every one a CursorMoved), with visual
	// selections now and then, then a final selection everyone must see.
	moved := 0
	motions := []string{"j", "k", "l", "h", "w", "b", "e", "0", "$", "gg", "G", "20j", "15k", "}", "{", "vjjl<Esc>", "Vk<Esc>"}
	rng := rand.New(rand.NewSource(99))
	for ; moved < sz.moves; moved++ {
		if _, err := n.Input(motions[rng.Intn(len(motions))]); err != nil {
			t.Fatal(err)
		}
		if err := n.ExecLua("return 0", nil); err != nil { // the motion is processed
			t.Fatal(err)
		}
	}
	if _, err := n.Input("<Esc>500GVjjj"); err != nil {
		t.Fatal(err)
	}
	var mode string
	n.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode) // the keys are processed
	movesDone := time.Since(start)
	wg.Wait()
	callsDone := time.Since(start)

	// Every client ends with the editor's final selection.
	want, err := clients[0].do("tools/call", `{"name":"getCurrentSelection","arguments":{}}`, -2)
	if err != nil {
		t.Fatal(err)
	}
	var cur struct {
		Content []mcp.Content `json:"content"`
	}
	_ = json.Unmarshal(want, &cur)
	var final map[string]any
	_ = json.Unmarshal([]byte(cur.Content[0].Text), &final)
	delete(final, "success")
	finalJSON, _ := json.Marshal(final)
	if !strings.Contains(string(finalJSON), `"line":499`) || !strings.Contains(string(finalJSON), "line 0500") {
		t.Fatalf("the final selection is not lines 500-503: %s", finalJSON)
	}
	deadline := time.Now().Add(30 * time.Second)
	selsSeen := 0
	for i, c := range clients {
		for {
			last, count := c.last()
			var got map[string]any
			_ = json.Unmarshal(last, &got)
			gotJSON, _ := json.Marshal(got)
			if bytes.Equal(gotJSON, finalJSON) {
				selsSeen += count
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client %d's last selection (of %d) is %s, want %s", i, count, gotJSON, finalJSON)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, c := range clients {
		_ = c.ws.Close()
	}

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)].Round(time.Microsecond)
	}
	total := sz.clients * sz.calls
	t.Logf("%d calls in %v (%.0f/s), %d failed %v; latency p50 %v p99 %v max %v",
		total, callsDone.Round(time.Millisecond), float64(total)/callsDone.Seconds(), failures.Load(), failed, pct(0.5), pct(0.99), pct(1))
	t.Logf("%d cursor moves typed in %v; %d selection_changed received in all, the last one the final selection on every client",
		moved, movesDone.Round(time.Millisecond), selsSeen)

	// Back to baseline: every connection's goroutines gone, memory
	// returned. The limits are failure guards for a leak, which grows with
	// the load: a leak of one goroutine or a few KiB per call shows as tens
	// of thousands of goroutines or hundreds of MiB here.
	p50, p99 := pct(0.5), pct(0.99)
	latencies = nil
	var goAfter, heapAfter, rssAfter int
	settle := time.Now().Add(30 * time.Second)
	for {
		goAfter, heapAfter, rssAfter = goSettle()
		if goAfter <= goBase || time.Now().After(settle) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if prof := os.Getenv("SOAK_HEAPPROFILE"); prof != "" {
		if f, err := os.Create(prof); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	n.Exec(t, `collectgarbage() collectgarbage()`)
	nvimAfter := rssKiB(nvimPID)
	t.Logf("after: %d goroutines (baseline %d), live heap %d KiB (%+d), RSS %d KiB (%+d%s); Neovim RSS %d KiB (%+d)",
		goAfter, goBase, heapAfter, heapAfter-heapBase, rssAfter, rssAfter-rssBase, map[bool]string{true: ", race detector shadow memory included"}[raceEnabled],
		nvimAfter, nvimAfter-nvimBase)
	if goAfter > goBase {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left over:\n%s", goAfter-goBase, buf[:runtime.Stack(buf, true)])
	}
	// Failure guards for a leak, which grows with the load: one goroutine
	// or a few KiB kept per call would show as tens of thousands of
	// goroutines or hundreds of MiB here.
	if heapAfter > heapBase+16<<10 {
		t.Errorf("the live heap is %d KiB above the baseline", heapAfter-heapBase)
	}
	if !raceEnabled && rssAfter > rssBase+64<<10 {
		t.Errorf("the process holds %d KiB more than at the baseline", rssAfter-rssBase)
	}
	if nvimAfter > nvimBase+32<<10 {
		t.Errorf("Neovim holds %d KiB more than at the baseline", nvimAfter-nvimBase)
	}
	if report := os.Getenv("SOAK_REPORT"); report != "" {
		out, _ := json.MarshalIndent(map[string]any{
			"nvim": os.Getenv("NVIM_BIN"), "clients": sz.clients, "calls_per_client": sz.calls, "moves": moved,
			"calls": total, "failed": failures.Load(), "seconds": callsDone.Seconds(),
			"p50_ms": float64(p50.Microseconds()) / 1000, "p99_ms": float64(p99.Microseconds()) / 1000,
			"selection_changed": selsSeen, "goroutines_before": goBase, "goroutines_after": goAfter,
			"heap_kib_before": heapBase, "heap_kib_after": heapAfter, "race": raceEnabled,
			"rss_kib_before": rssBase, "rss_kib_after": rssAfter, "nvim_rss_kib_before": nvimBase, "nvim_rss_kib_after": nvimAfter,
		}, "", "  ")
		if err := os.WriteFile(report, out, 0o644); err != nil {
			t.Error(err)
		}
	}
}
