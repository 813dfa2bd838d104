package selection

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
)

func TestSelCoalescer(t *testing.T) {
	sel := func(seq int64, path string, line int) nvimbridge.SelectionState {
		p := nvimbridge.SelectionPos{Line: line}
		return nvimbridge.SelectionState{Seq: seq, Kind: "selection", Path: path, Start: p, End: p, Empty: true}
	}
	other := func(seq int64, kind string) nvimbridge.SelectionState {
		return nvimbridge.SelectionState{Seq: seq, Kind: kind}
	}
	tests := []struct {
		name string
		in   []nvimbridge.SelectionState
		want []string // per observation: "" = nothing sent, else "path:line" or "clear"
	}{
		{"first is sent", []nvimbridge.SelectionState{sel(1, "/a", 0)}, []string{"/a:0"}},
		{"duplicate dropped", []nvimbridge.SelectionState{sel(1, "/a", 0), sel(2, "/a", 0), sel(3, "/a", 1)}, []string{"/a:0", "", "/a:1"}},
		{"stale dropped", []nvimbridge.SelectionState{sel(5, "/a", 5), sel(4, "/a", 4), sel(6, "/a", 6)}, []string{"/a:5", "", "/a:6"}},
		{"skip, keep, wait change nothing", []nvimbridge.SelectionState{sel(1, "/a", 0), other(2, "skip"), other(3, "keep"), other(0, "wait"), sel(4, "/a", 0)}, []string{"/a:0", "", "", "", ""}},
		{"skip does not make an older push stale", []nvimbridge.SelectionState{other(9, "skip"), sel(3, "/a", 3)}, []string{"", "/a:3"}},
		{"denied clears what was sent", []nvimbridge.SelectionState{sel(1, "/a", 0), other(2, "denied"), other(3, "denied"), sel(4, "/a", 0)}, []string{"/a:0", "clear", "", "/a:0"}},
		{"denied first sends nothing", []nvimbridge.SelectionState{other(1, "denied")}, []string{""}},
		{"no path is ignored", []nvimbridge.SelectionState{sel(1, "", 0)}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c selCoalescer
			for i := range tt.in {
				p, send := c.observe(&tt.in[i])
				got := ""
				switch {
				case send && p == selCleared:
					got = "clear"
				case send:
					got = p.FilePath + ":" + string(rune('0'+p.Selection.Start.Line))
				}
				if got != tt.want[i] {
					t.Errorf("observation %d (%+v): sent %q, want %q", i, tt.in[i], got, tt.want[i])
				}
			}
		})
	}
}

func TestSelFileURL(t *testing.T) {
	for path, want := range map[string]string{
		"/home/u/a.go":          "file:///home/u/a.go",
		"/home/u/my file.go":    "file:///home/u/my%20file.go",
		"/home/u/日本.txt":        "file:///home/u/%E6%97%A5%E6%9C%AC.txt",
		"/home/u/a#b%c?.txt":    "file:///home/u/a%23b%25c%3F.txt",
		"/home/u/.config/x.lua": "file:///home/u/.config/x.lua",
	} {
		if got := selFileURL(path); got != want {
			t.Errorf("selFileURL(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestSelectionTracker follows one CLI through what the user does.
func TestSelectionTracker(t *testing.T) {
	h := startSelHarness(t, selHarnessOpts{setup: `selection = { debounce_ms = 20 }`})
	c := h.connect(t, 4242)
	other := filepath.Join(h.dir, "other.txt")

	// Greeting: the state at attach.
	if got, want := c.selection(t), h.cursorAt(h.file, 0, 0); got != want {
		t.Fatalf("greeting = %+v, want %+v", got, want)
	}
	// A move, after the debounce.
	h.keys(t, "3G")
	if got, want := c.selection(t), h.cursorAt(h.file, 2, 0); got != want {
		t.Fatalf("after 3G = %+v, want %+v", got, want)
	}
	// A pull that finds the same state sends nothing: the tool's flush
	// makes the pull now; the next notification is the next real change.
	h.Exec(t, `vim.cmd("doautocmd nvim-claude-selection BufEnter")`)
	c.call(t, "getLatestSelection")
	h.keys(t, "4G")
	if got, want := c.selection(t), h.cursorAt(h.file, 3, 0); got != want {
		t.Fatalf("after a same-state pull and 4G = %+v, want %+v (a duplicate was sent?)", got, want)
	}
	// Windows that show no file are not reported.
	for _, cmd := range []string{`vim.cmd("help")`, `vim.cmd("botright split") vim.cmd("terminal")`, `vim.cmd("copen")`, `vim.cmd("new") vim.bo.buftype = "nofile"`} {
		h.Exec(t, cmd)
		h.keys(t, "G")
		c.call(t, "getLatestSelection")
		h.Exec(t, `vim.cmd("close!")`)
	}
	h.keys(t, "5G")
	if got, want := c.selection(t), h.cursorAt(h.file, 4, 0); got != want {
		t.Fatalf("after help, terminal, quickfix, scratch and 5G = %+v, want %+v", got, want)
	}
	// Another file.
	h.Exec(t, `vim.cmd("edit " .. ...)`, other)
	if got, want := c.selection(t), h.cursorAt(other, 0, 0); got != want {
		t.Fatalf("in other.txt = %+v, want %+v", got, want)
	}
	// A denied file: the CLI is told to forget; nothing of the file is sent.
	h.Exec(t, `vim.cmd("edit .env")`)
	h.keys(t, "Vy")
	if got := c.selection(t); got != selCleared {
		t.Fatalf("in .env = %+v, want the clearing payload", got)
	}
	h.Exec(t, `vim.cmd("edit " .. ...)`, h.file)
	got := c.selection(t)
	if got.FilePath != h.file {
		t.Fatalf("back in sample.txt = %+v", got)
	}

	// Sharing off: the CLI forgets, and nothing is sent until it is on.
	h.Exec(t, `require("claude.selection").share("off")`)
	if got := c.selection(t); got != selCleared {
		t.Fatalf("after :ClaudeShare off = %+v, want the clearing payload", got)
	}
	var sharing bool
	h.Eval(t, `return require("claude.selection").sharing()`, &sharing)
	if sharing {
		t.Fatal("sharing() is true after :ClaudeShare off")
	}
	h.keys(t, "2GVj<Esc>6G")
	// :ClaudeShare on (with the server running, as server.lua would attach).
	h.Exec(t, `require("claude.selection").share("on") require("claude.selection").attach(...)`, h.ChannelID())
	if got, want := c.selection(t), h.cursorAt(h.file, 5, 0); got != want {
		t.Fatalf("after sharing on again = %+v, want %+v (something leaked while off?)", got, want)
	}
	h.Eval(t, `return require("claude.selection").sharing()`, &sharing)
	if !sharing {
		t.Fatal("sharing() is false while tracking")
	}

	// A CLI that connects later is greeted with the latest selection.
	c2 := h.connect(t, 4343)
	if got, want := c2.selection(t), h.cursorAt(h.file, 5, 0); got != want {
		t.Fatalf("second CLI's greeting = %+v, want %+v", got, want)
	}
}

// TestSelectionEndsNow: leaving visual mode sends the selection at once,
// whatever the debounce, however the mode ends; it stays until the cursor
// moves.
func TestSelectionEndsNow(t *testing.T) {
	tests := []struct {
		name string
		keys string // visual selection made in sample.txt
		end  string // Lua that ends it
		text string
	}{
		{"escape", "2GVj", `vim.api.nvim_input("<Esc>")`, "second 日本 line\nthird 😀 line\n"},
		{"yank", "1G1|vl", `vim.api.nvim_input("y")`, "fi"},
		{"colon", "5GVj", `vim.api.nvim_input(":")`, "fifth line\nsixth line\n"},
		{"window switch by keys", "1G1|vj", `vim.api.nvim_input("<C-w>p")`, "first line\ns"},
		// Neovim 0.7 keeps visual mode in the new window here; WinLeave
		// sends the selection.
		{"window switch by the API", "1G1|vj", `vim.api.nvim_set_current_win(vim.fn.win_getid(vim.fn.winnr("#")))`, "first line\ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startSelHarness(t, selHarnessOpts{hold: true})
			h.Exec(t, `vim.cmd("botright vsplit") vim.cmd("terminal") vim.cmd("wincmd p")`)
			c := h.connect(t, 4242)
			c.selection(t) // greeting
			h.keys(t, tt.keys)
			h.Exec(t, tt.end)
			got := c.selection(t)
			if got.Text != tt.text || got.FilePath != h.file {
				t.Fatalf("sent %+v, want text %q", got, tt.text)
			}
			h.keys(t, "<Esc>")
			// Kept while the cursor stays (also from the terminal window).
			if txt := c.call(t, "getLatestSelection"); !strings.Contains(txt, `"isEmpty":false`) {
				t.Fatalf("after leaving visual mode the latest is %s", txt)
			}
		})
	}
}

// TestSelectionTrackOff: selection.track = false shares nothing until
// :ClaudeShare on.
func TestSelectionTrackOff(t *testing.T) {
	h := startSelHarness(t, selHarnessOpts{setup: `selection = { track = false }`, noAttach: true})
	h.Exec(t, `require("claude.selection").attach(...)`, h.ChannelID()) // what server.lua does: a no-op here
	c := h.connect(t, 4242)
	var sharing bool
	h.Eval(t, `return require("claude.selection").sharing()`, &sharing)
	if sharing {
		t.Fatal("sharing() with track = false")
	}
	h.keys(t, "3GVj<Esc>")
	if txt := c.call(t, "getLatestSelection"); !strings.Contains(txt, "sharing is off") {
		t.Fatalf("getLatestSelection with track = false: %s", txt)
	}
	if txt := c.call(t, "getCurrentSelection"); !strings.Contains(txt, "sharing is off") {
		t.Fatalf("getCurrentSelection with track = false: %s", txt)
	}
	// :ClaudeShare on overrides the option (the server "runs" here: attach).
	h.Exec(t, `require("claude.selection").share("on") require("claude.selection").attach(...)`, h.ChannelID())
	if got, want := c.selection(t), h.cursorAt(h.file, 3, 0); got != want {
		t.Fatalf("after :ClaudeShare on = %+v, want %+v", got, want)
	}
}

// selFlakyEditor fails the first pulls, as a Neovim busy past the pull
// timeout would; only PullSelection is called by the tracker.
type selFlakyEditor struct {
	Editor
	mu    sync.Mutex
	fails int
	pulls int
}

func (e *selFlakyEditor) PullSelection(context.Context, bool) (nvimbridge.SelectionState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pulls++
	if e.pulls <= e.fails {
		return nvimbridge.SelectionState{}, nvimbridge.ErrTimeout
	}
	p := nvimbridge.SelectionPos{Line: 7}
	return nvimbridge.SelectionState{Seq: 1, Kind: "selection", Path: "/p/a.go", Start: p, End: p, Empty: true}, nil
}

// TestSelectionPullRetried: a pull that fails (Neovim busy) is retried, a
// few times, so tracking does not wait for the next move to recover.
func TestSelectionPullRetried(t *testing.T) {
	for _, tt := range []struct {
		fails     int
		wantPulls int
		wantSent  bool
	}{
		{fails: 2, wantPulls: 3, wantSent: true},
		{fails: 10, wantPulls: 1 + selPullRetries, wantSent: false},
	} {
		t.Run(fmt.Sprintf("%d failures", tt.fails), func(t *testing.T) {
			ed := &selFlakyEditor{fails: tt.fails}
			var feat *Tracker
			a := core.New(core.Options{Editor: nil, Features: func(h host.Host) []host.Feature {
				feat = New(h, ed)
				return []host.Feature{feat}
			}})
			defer a.Close()
			c := feat
			c.setOptions(debounceOptions(t, 1))
			c.setSharing(true)
			c.post(selEvent{kind: selDirty})
			deadline := time.Now().Add(15 * time.Second)
			for {
				ed.mu.Lock()
				pulls := ed.pulls
				ed.mu.Unlock()
				if pulls >= tt.wantPulls {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d pulls, want %d", pulls, tt.wantPulls)
				}
				time.Sleep(10 * time.Millisecond)
			}
			c.flush(context.Background()) // a pull still pending would run now
			_, sent := c.latest()
			ed.mu.Lock()
			pulls := ed.pulls
			ed.mu.Unlock()
			if sent != tt.wantSent || pulls != tt.wantPulls {
				t.Fatalf("pulls %d, latest set %v; want %d, %v", pulls, sent, tt.wantPulls, tt.wantSent)
			}
		})
	}
}

// TestSelectionUpdatePull: a pushed selection that asks for a pull (Lua
// left its move autocmds disarmed as visual mode ended) gets one after the
// debounce, as selection_dirty does; one that does not ask gets none.
func TestSelectionUpdatePull(t *testing.T) {
	for _, tt := range []struct {
		name      string
		params    string
		wantPulls int
	}{
		{"pull", `{"state":{"seq":1,"kind":"selection","path":"/p/a.go","text":"x"},"pull":true}`, 1},
		{"no pull", `{"state":{"seq":1,"kind":"selection","path":"/p/a.go","text":"x"}}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ed := &selFlakyEditor{}
			var feat *Tracker
			a := core.New(core.Options{Editor: nil, Features: func(h host.Host) []host.Feature {
				feat = New(h, ed)
				return []host.Feature{feat}
			}})
			defer a.Close()
			c := feat
			c.setOptions(debounceOptions(t, 1))
			c.setSharing(true)
			c.mu.Lock()
			c.holdDebounce = true // the pull stays pending until the flush
			c.mu.Unlock()
			var up updateParams
			if err := json.Unmarshal([]byte(tt.params), &up); err != nil {
				t.Fatal(err)
			}
			c.handleUpdate(up)
			c.flush(context.Background()) // runs a pending pull now
			if p, ok := c.latest(); !ok || p.FilePath != "/p/a.go" {
				t.Fatalf("latest after the update = %+v, %v", p, ok)
			}
			ed.mu.Lock()
			pulls := ed.pulls
			ed.mu.Unlock()
			if pulls != tt.wantPulls {
				t.Fatalf("%d pulls, want %d", pulls, tt.wantPulls)
			}
		})
	}
}

// callCollecting makes a tools/call and returns the selection_changed
// notifications that came before its response. getLatestSelection flushes
// a pending pull before it answers, and the broadcast it makes is written
// before the response: what a burst left to the pull is in here.
func (c *selCLI) callCollecting(t *testing.T, tool string) []selPayload {
	t.Helper()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	c.Send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
	var sels []selPayload
	for {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal([]byte(c.next(t)), &m); err != nil {
			t.Fatal(err)
		}
		if string(m.ID) == id {
			return sels
		}
		if m.Method == "selection_changed" {
			var p selPayload
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatal(err)
			}
			sels = append(sels, p)
		}
	}
}

// TestSelectionLeadingEdge: the first move after a rest reaches the CLI
// without waiting for the debounce (held an hour here: only Lua's push can
// send it); the moves that follow are coalesced, and the pull at rest (a
// tool's flush here) sends the final state: a burst costs the CLI the
// first state and the last, never more. The rest is set per case (_rest: 0
// = any move, math.huge = none), so nothing depends on timing.
func TestSelectionLeadingEdge(t *testing.T) {
	tests := []struct {
		name string
		rest string
		keys []string // typed one after another, each handled before the next
		// early: what the CLI gets before any pull, in order; flushed: what
		// the pull sends. Cursor positions in sample.txt, {line, character}.
		early, flushed [][2]int
	}{
		{"a lone move is sent at once", "0", []string{"3G"}, [][2]int{{2, 0}}, nil},
		{"a burst: the first move at once, then only the final state", "0", []string{"3G", "j", "j", "w"}, [][2]int{{2, 0}}, [][2]int{{4, 6}}},
		{"a burst that comes back to where it started: nothing more", "0", []string{"3G", "j", "k"}, [][2]int{{2, 0}}, nil},
		{"within the rest: nothing until the pull", "math.huge", []string{"3G", "j"}, nil, [][2]int{{3, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startSelHarness(t, selHarnessOpts{hold: true})
			h.Exec(t, `require("claude.selection")._rest(`+tt.rest+`)`)
			t.Cleanup(func() { _ = h.ExecLua(`require("claude.selection")._rest(nil)`, nil) })
			c := h.connect(t, 4242)
			if got, want := c.selection(t), h.cursorAt(h.file, 0, 0); got != want {
				t.Fatalf("greeting = %+v, want %+v", got, want)
			}
			for _, k := range tt.keys {
				h.keys(t, k)
			}
			for i, p := range tt.early {
				if got, want := c.selection(t), h.cursorAt(h.file, p[0], p[1]); got != want {
					t.Fatalf("selection_changed %d before the pull = %+v, want %+v", i, got, want)
				}
			}
			h.sync(t) // Lua's notifications so far are before the flush
			got := c.callCollecting(t, "getLatestSelection")
			var want []selPayload
			for _, p := range tt.flushed {
				want = append(want, h.cursorAt(h.file, p[0], p[1]))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("sent by the pull at rest: %+v\nwant %+v", got, want)
			}
		})
	}
}

// debounceOptions are host options whose selection.debounce_ms is ms.
func debounceOptions(t *testing.T, ms float64) host.Options {
	t.Helper()
	o, err := host.OptionsOf(map[string]any{"selection": Options{DebounceMS: ms}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
