//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestParseStatTicks(t *testing.T) {
	tests := []struct {
		name, line string
		want       int64
		wantErr    bool
	}{
		{"plain", "2308 (bash) S 2307 2308 2308 0 -1 4194560 10544 451789 0 124 2 5 3341 174 20 0 1 0", 7, false},
		{"name with spaces and parens", "42 (a b) (c)) R 1 42 42 0 -1 0 0 0 0 0 100 250 0 0 20 0 1 0", 350, false},
		{"no paren", "42 bash S 1", 0, true},
		{"short", "42 (x) S 1 2 3", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatTicks(tt.line)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseStatTicks = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	m, err := parseStatus("Name:\tnvim\nVmPeak:\t 9999 kB\nVmHWM:\t  300 kB\nVmRSS:\t  200 kB\n")
	if err != nil || m.HWM != 300*1024 || m.RSS != 200*1024 {
		t.Fatalf("parseStatus = %+v, %v", m, err)
	}
	if _, err := parseStatus("Name:\tnvim\nVmRSS:\t 1 kB\n"); err == nil {
		t.Fatal("parseStatus without VmHWM did not fail")
	}
}

func TestProcReaders(t *testing.T) {
	pid := pidSelf()
	d, err := cpuClock(pid)
	if err != nil || d <= 0 {
		t.Fatalf("cpuClock(self) = %v, %v", d, err)
	}
	if _, err := statTicks(pid); err != nil {
		t.Fatal(err)
	}
	m, err := readMem(pid)
	if err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("readMem(self) = %+v, %v", m, err)
	}
	if !alive(pid) || alive(0) {
		t.Fatal("alive is wrong about self or pid 0")
	}
	a := monoMicros()
	time.Sleep(2 * time.Millisecond)
	if b := monoMicros(); b-a < 2000 {
		t.Fatalf("monoMicros advanced %d µs over a 2 ms sleep", b-a)
	}
}

const startupSample = `times in msec
 clock   self+sourced   self:  sourced script
 clock   elapsed:              other lines

000.002  000.002: --- NVIM STARTING ---
009.267  000.374  000.362: require('claude')
009.741  000.967  000.176: sourcing init-setup.lua
009.742  000.693: sourcing vimrc file(s)
010.690  000.049  000.049: sourcing /work/main/plugin/claude.lua
012.983  000.004: --- NVIM STARTED ---
`

func TestParseStartupLog(t *testing.T) {
	l, err := parseStartupLog(startupSample, "init-setup.lua")
	if err != nil {
		t.Fatal(err)
	}
	if l.initSourced != 0.967 || l.plugin != 0.049 || l.total != 12.983 {
		t.Fatalf("parseStartupLog = %+v", l)
	}
	if _, err := parseStartupLog("000.002  000.002: --- NVIM STARTING ---\n", "x.lua"); err == nil {
		t.Fatal("a log without NVIM STARTED did not fail")
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
BenchmarkDecodeToolCall-2   	  154012	      7310 ns/op	  29.00 MB/s	    1728 B/op	      37 allocs/op
BenchmarkDecodeToolCall-2   	  154012	      7000 ns/op	  30.00 MB/s	    1728 B/op	      37 allocs/op
BenchmarkSelCoalescer/moving-2         	 5000000	        48.0 ns/op	       0 B/op	       0 allocs/op
PASS
`
	res := parseGoBench(out)
	d := res["BenchmarkDecodeToolCall"]
	if d == nil || len(d.nsOp) != 2 || d.nsOp.median() != 7155 || d.mbS.median() != 29.5 || d.allocsOp.median() != 37 {
		t.Fatalf("DecodeToolCall = %+v", d)
	}
	m := res["BenchmarkSelCoalescer/moving"]
	if m == nil || m.nsOp[0] != 48 || len(m.mbS) != 0 || m.bytesOp[0] != 0 {
		t.Fatalf("SelCoalescer/moving = %+v", m)
	}
}

func TestStalls(t *testing.T) {
	m := meterResult{Gaps: [][2]int64{{100, 120}, {200, 260}, {300, 1300}, {1400, 1500}, {5000, 9000}}}
	if got := m.maxBefore(150, 1200); got != 60 {
		t.Fatalf("maxBefore = %d, want 60", got)
	}
	if got := m.maxIn(150, 2000); got != 1000 {
		t.Fatalf("maxIn = %d", got)
	}
	if got := m.maxIn(9500, 9600); got != 0 {
		t.Fatalf("maxIn outside every gap = %d", got)
	}
}

func TestCursorScript(t *testing.T) {
	a, b := cursorScript(20000, 1), cursorScript(20000, 1)
	if len(a) != 20000 || strings.Join(a, "") != strings.Join(b, "") {
		t.Fatal("the script is not 20,000 keys, or not deterministic")
	}
	inVisual := false
	visual := 0
	for i, k := range a {
		switch k {
		case "v", "V", "<C-v>":
			if inVisual {
				t.Fatalf("key %d: Visual mode entered twice", i)
			}
			inVisual = true
			visual++
		case "<Esc>":
			if !inVisual {
				t.Fatalf("key %d: <Esc> outside Visual mode", i)
			}
			inVisual = false
		}
	}
	if inVisual || visual < 200 {
		t.Fatalf("the script ends in Visual mode (%v) or has only %d Visual selections", inVisual, visual)
	}
}

func TestBigTexts(t *testing.T) {
	old, proposal, lines := bigTexts(1 << 20)
	if len(old) < 1<<20 || len(old) > 1<<20+200 {
		t.Fatalf("old is %d bytes", len(old))
	}
	ol, pl := strings.Split(old, "\n"), strings.Split(proposal, "\n")
	if len(ol) != lines+1 || len(pl) != lines+1 {
		t.Fatalf("%d and %d lines, want %d", len(ol)-1, len(pl)-1, lines)
	}
	changed := 0
	seen := map[string]bool{}
	for i := range ol {
		if ol[i] != pl[i] {
			changed++
		}
		if seen[ol[i]] && ol[i] != "" {
			t.Fatalf("line %d repeats", i)
		}
		seen[ol[i]] = true
	}
	if want := (lines + 99) / 100; changed != want {
		t.Fatalf("%d lines changed, want %d (1 %%)", changed, want)
	}
}

func TestLockCreated(t *testing.T) {
	tests := []struct {
		ev   fileEvent
		want bool
	}{
		{fileEvent{Name: "4242.lock", Mask: syscall.IN_MOVED_TO}, true},
		{fileEvent{Name: "4242.lock", Mask: syscall.IN_CLOSE_WRITE}, true},
		{fileEvent{Name: "4242.lock", Mask: syscall.IN_CREATE}, false},
		{fileEvent{Name: ".4242.lock.tmp", Mask: syscall.IN_MOVED_TO}, false},
		{fileEvent{Name: "x.lock", Mask: syscall.IN_MOVED_TO}, false},
	}
	for _, tt := range tests {
		if got := lockCreated(tt.ev); got != tt.want {
			t.Errorf("lockCreated(%+v) = %v, want %v", tt.ev, got, tt.want)
		}
	}
}

// fakeIDE is a WebSocket server that answers like the host: initialize,
// tools/list with one tool, that tool, and -32602 for any other.
func fakeIDE(t *testing.T) lockFile {
	t.Helper()
	up := websocket.Upgrader{Subprotocols: []string{"mcp"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Claude-Code-Ide-Authorization") != "secret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			var req struct {
				ID     *int64 `json:"id"`
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			_ = json.Unmarshal(msg, &req)
			if req.ID == nil {
				if req.Method == "ide_connected" {
					_ = c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"selection_changed","params":{"text":"x"}}`))
				}
				continue
			}
			id := strconv.FormatInt(*req.ID, 10)
			var out string
			switch {
			case req.Method == "initialize":
				out = `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25"}}`
			case req.Method == "tools/list":
				out = `{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"getWorkspaceFolders"}]}}`
			case req.Method == "ping":
				out = `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
			case req.Params.Name == "getWorkspaceFolders":
				out = `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"{\"folders\":[]}"}]}}`
			case req.Params.Name == "broken":
				out = `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"it broke"}],"isError":true}}`
			default:
				out = `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"Unknown tool: ` + req.Params.Name + `"}}`
			}
			_ = c.WriteMessage(websocket.TextMessage, []byte(out))
		}
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	return lockFile{Port: port, AuthToken: "secret"}
}

func TestIDEClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := fakeIDE(t)
	c, err := dialIDE(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	tools, err := c.toolNames(ctx)
	if err != nil || !tools["getWorkspaceFolders"] || len(tools) != 1 {
		t.Fatalf("toolNames = %v, %v", tools, err)
	}
	res, _, err := c.tool(ctx, "getWorkspaceFolders", nil)
	if err != nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "folders") {
		t.Fatalf("tool = %+v, %v", res, err)
	}
	if _, _, err := c.tool(ctx, "openDiff", nil); !errors.Is(err, errNoTool) {
		t.Fatalf("an unknown tool gave %v, want errNoTool", err)
	}
	if _, _, err := c.tool(ctx, "broken", nil); err == nil || errors.Is(err, errNoTool) || !strings.Contains(err.Error(), "it broke") {
		t.Fatalf("an isError result gave %v", err)
	}
	select {
	case n := <-c.notes:
		if n.Method != "selection_changed" || n.Mono == 0 {
			t.Fatalf("note = %+v", n)
		}
	case <-ctx.Done():
		t.Fatal("no notification")
	}
	if _, err := dialIDE(ctx, lockFile{Port: l.Port, AuthToken: "wrong"}); err == nil {
		t.Fatal("a wrong token connected")
	}
}

func TestMeasureRT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := fakeIDE(t)
	for _, frame := range []func(int64) []byte{toolFrame("getWorkspaceFolders"), pingFrame} {
		res, err := measureRT(ctx, l, false, frame, 20, 10, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.seq) != 20 || len(res.conc) != 30 || res.concCalls != 30 || res.concRate <= 0 {
			t.Fatalf("measureRT = %d sequential, %d concurrent, %d calls, %v/s", len(res.seq), len(res.conc), res.concCalls, res.concRate)
		}
	}
}

func TestMeasureRTEcho(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	up := websocket.Upgrader{Subprotocols: []string{"mcp"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil || c.WriteMessage(mt, msg) != nil {
				return
			}
		}
	}))
	defer srv.Close()
	l := lockFile{Port: srv.Listener.Addr().(*net.TCPAddr).Port}
	res, err := measureRT(ctx, l, true, toolFrame("getWorkspaceFolders"), 20, 10, 2)
	if err != nil || len(res.seq) != 20 || res.concCalls != 20 {
		t.Fatalf("measureRT against an echo server = %+v, %v", res, err)
	}
}

func TestFormatPerf(t *testing.T) {
	byObj := "    60.00%  nvim         nvim\n    30.00%  nvim-claude  nvim-claude\n"
	self := "    54.60%  nvim     nvim                 [.] diff_infold    -      -\n" +
		"            |\n" +
		"     2.10%  nvim-claude  nvim-claude      [.] encoding/json.(*decodeState).value\n" +
		"     1.60%  nvim     [kernel.kallsyms]    [k] clear_page_erms\n"
	incl := "    25.00%     0.10%  [.] encoding/json.Unmarshal\n     9.00%     9.00%  [.] runtime.memmove\n"
	got := formatPerf("test", byObj, self, incl)
	for _, want := range []string{
		"60.00% nvim/nvim, 30.00% nvim-claude/nvim-claude",
		"25.00% `encoding/json.Unmarshal`",
		"| 54.60% | nvim | nvim | `diff_infold` |",
		"| 2.10% | nvim-claude | nvim-claude | `encoding/json.(*decodeState).value` |",
		"| 1.60% | nvim | [kernel.kallsyms] | `clear_page_erms` |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("formatPerf output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "runtime.memmove") {
		t.Error("runtime functions are listed among the host's inclusive times")
	}
	if !strings.Contains(formatPerf("x", "", "", ""), "no samples") {
		t.Error("an empty report is not said to be empty")
	}
}

func TestTimeline(t *testing.T) {
	m := meterResult{Gaps: [][2]int64{{1000, 1010}, {2000, 32000}, {40000, 100000}, {200000, 300000}}}
	if got, want := m.timeline(1000, 150000, 20000), "+1.00 ms: 30.0 ms, +39.0 ms: 60.0 ms"; got != want {
		t.Fatalf("timeline = %q, want %q", got, want)
	}
	if got := m.timeline(0, 500, 20000); got != "none" {
		t.Fatalf("timeline without gaps = %q", got)
	}
}

func TestParseIO(t *testing.T) {
	c, err := parseIO("rchar: 1234\nwchar: 99\nsyscr: 5\nread_bytes: 0\n")
	if err != nil || c.read != 1234 || c.written != 99 {
		t.Fatalf("parseIO = %+v, %v", c, err)
	}
	if _, err := parseIO("syscr: 5\n"); err == nil {
		t.Fatal("parseIO without rchar did not fail")
	}
	if _, err := readIO(pidSelf()); err != nil {
		t.Fatal(err)
	}
}
