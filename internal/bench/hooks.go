//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// runHooks is scenario 25: what the sessions dashboard's hooks cost a tool
// call. The CLI runs a PreToolUse and a PostToolUse hook around every tool
// call, each a shell command it waits for; ours is `nvim-claude hook`,
// which reports to the host over the editor tools' socket. The floor is
// the same two shell commands doing nothing (`true`): what any hook costs
// the CLI. The hooks run against a terminal session :ClaudeStart
// registered (its CLI a stand-in, `cat`, which ignores the arguments), so the host and Neovim do all
// they do for a real one (state changes, the dashboard's event).
func runHooks(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	calls := 200
	if r.quick {
		calls = 40
	}
	dir, err := r.project("hooks", map[string]string{"a.txt": "alpha\n"})
	if err != nil {
		return sec, err
	}
	ep, err := r.startEditor(ctx, editorOpts{plugin: true, dir: dir, setup: `terminal_cmd = { "sh", "-c", "cat", "claude" }`})
	if err != nil {
		return sec, err
	}
	defer ep.close()
	if err := ep.exec(ctx, `vim.cmd("ClaudeStart")`, nil); err != nil {
		return sec, fmt.Errorf(":ClaudeStart: %w", err)
	}
	var st struct {
		Env  map[string]string `json:"env"`
		ID   string            `json:"id"`
		Port int               `json:"port"`
		PID  int               `json:"pid"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := ep.eval(ctx, `local st = require("claude").status()
local tools = require("claude.terminal").editor_tools()
local id
for _, s in ipairs(require("claude").sessions()) do if s.mode == "terminal" then id = s.id end end
if not (st.port and tools and tools.socket and id) then return vim.empty_dict() end
return { env = require("claude.terminal").env(st.port, tools), id = id, port = st.port, pid = st.terminal and st.terminal.pid or 0 }`, &st)
		if err != nil {
			return sec, err
		}
		if st.ID != "" && len(st.Env) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return sec, fmt.Errorf("no terminal session with the editor tools' socket after :ClaudeStart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	file := filepath.Join(dir, "a.txt")
	input := func(event string) string {
		b, _ := json.Marshal(map[string]any{"session_id": "5b1f3e52-7d1c-4a53-9d55-1f0a2b3c4d5e", "cwd": dir,
			"hook_event_name": event, "tool_name": "Read", "tool_input": map[string]any{"file_path": file}})
		return string(b)
	}
	env := os.Environ()
	for k, v := range st.Env {
		env = append(env, k+"="+v)
	}
	// the HTTP hooks' token, as the CLI has it: in the settings layer file
	// the stand-in was given (--settings <file>)
	token := ""
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.PID)); err == nil {
		args := strings.Split(string(b), "\x00")
		for i, a := range args {
			if a == "--settings" && i+1 < len(args) {
				if layer, err := os.ReadFile(args[i+1]); err == nil {
					if _, rest, ok := strings.Cut(string(layer), `"Authorization":"Bearer `); ok {
						token, _, _ = strings.Cut(rest, `"`)
					}
				}
			}
		}
	}
	if token == "" {
		return sec, fmt.Errorf("the terminal's CLI got no HTTP hooks with a token (sessions.http_hooks off?)")
	}
	// a bare HTTP server answering {}: the HTTP hook's floor
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "{}")
	}))
	defer bare.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // the CLI's hooks: a request each
	post := func(url string) func(string) error {
		return func(ev string) error {
			req, _ := http.NewRequestWithContext(ctx, "POST", url+ev+"/"+st.ID, strings.NewReader(input(ev)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", ev, resp.Status)
			}
			return nil
		}
	}
	httpOurs := post(fmt.Sprintf("http://127.0.0.1:%d/hook/", st.Port))
	httpFloor := post(bare.URL + "/hook/")
	ours := func(event string) string { return shellWord(r.hostBin) + " hook " + event + " " + st.ID }
	floor := func(string) string { return "true" }
	// command runs one tool call's two hooks the way the CLI runs command
	// hooks (sh -c, the hook's JSON on stdin); http the way it runs HTTP
	// hooks (a POST each). Each returns the call's wall time.
	command := func(cmd func(string) string) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			start := time.Now()
			for _, ev := range []string{"PreToolUse", "PostToolUse"} {
				c := exec.CommandContext(ctx, "sh", "-c", cmd(ev))
				c.Env, c.Dir = env, dir
				c.Stdin = strings.NewReader(input(ev))
				var stderr strings.Builder
				c.Stderr = &stderr
				if err := c.Run(); err != nil || stderr.Len() > 0 {
					return 0, fmt.Errorf("%s: %v %s", cmd(ev), err, stderr.String())
				}
			}
			return time.Since(start), nil
		}
	}
	httpCall := func(post func(string) error) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			start := time.Now()
			for _, ev := range []string{"PreToolUse", "PostToolUse"} {
				if err := post(ev); err != nil {
					return 0, err
				}
			}
			return time.Since(start), nil
		}
	}
	type variant struct {
		run        func() (time.Duration, error)
		wall       sample
		nvim, host time.Duration
	}
	vs := []*variant{{run: httpCall(httpOurs)}, {run: httpCall(httpFloor)}, {run: command(ours)}, {run: command(floor)}}
	hostPID := ep.hostPID()
	for i := 0; i < calls; i++ {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			n0, _ := cpuClock(ep.pid)
			h0, _ := cpuClock(hostPID)
			d, err := v.run()
			if err != nil {
				return sec, err
			}
			// what the hook set off in Neovim (an async event) finishes
			if err := ep.exec(ctx, "return 1", nil); err != nil {
				return sec, err
			}
			n1, _ := cpuClock(ep.pid)
			h1, _ := cpuClock(hostPID)
			v.wall = append(v.wall, d.Seconds()*1000)
			v.nvim += n1 - n0
			v.host += h1 - h0
		}
	}
	var state string
	_ = ep.exec(ctx, `for _, s in ipairs(require("claude").sessions()) do if s.id == ... then return s.state end end return ""`, &state, st.ID)
	perCall := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(calls) }
	hOurs, hFloor, cOurs, cFloor := vs[0], vs[1], vs[2], vs[3]
	wallRow := func(order float64, scenario, figure string, o, f *variant) {
		added := o.wall.median() - f.wall.median()
		sec.add(row{order: order, num: "25", scenario: scenario, figure: figure,
			result: fmt.Sprintf("%s / %s vs %s / %s: %+.2f ms per tool call", fmtMS(o.wall.median()), fmtMS(o.wall.quantile(0.99)),
				fmtMS(f.wall.median()), fmtMS(f.wall.quantile(0.99)), added),
			spread: fmt.Sprintf("p25–p75 %s vs %s", fmtRange(o.wall.quantile(0.25), o.wall.quantile(0.75)), fmtRange(f.wall.quantile(0.25), f.wall.quantile(0.75))),
			target: "≤ +10 ms per tool call", verdict: verdict(added <= 10), ref: "—"})
	}
	wallRow(25, fmt.Sprintf("%d tool calls, each with its PreToolUse and PostToolUse hook (sessions dashboard; HTTP hooks, the default)", calls),
		"wall per tool call: our HTTP hooks vs the same POSTs to a bare HTTP server, p50 / p99", hOurs, hFloor)
	nvimAdded := perCall(hOurs.nvim) - perCall(hFloor.nvim)
	sec.add(row{order: 25.1, num: "25", scenario: "same", figure: "Neovim CPU per tool call, our HTTP hooks vs none",
		result: fmt.Sprintf("%+.3f ms (%s vs %s per call; host %s)", nvimAdded, fmtMS(perCall(hOurs.nvim)), fmtMS(perCall(hFloor.nvim)), fmtMS(perCall(hOurs.host))),
		spread: "—", target: "≤ 1 ms", verdict: verdict(nvimAdded <= 1), ref: "—"})
	wallRow(25.2, "same, `sessions.http_hooks = false`", "wall per tool call: `nvim-claude hook` commands vs `sh -c true`, p50 / p99", cOurs, cFloor)
	sec.printf("**25 — the sessions hooks.** A Neovim with the plugin runs `:ClaudeStart` with a stand-in CLI (`cat`), which "+
		"registers a terminal session as for the real CLI. The runner then plays the CLI's part for %d tool calls: each sends "+
		"the session's PreToolUse and PostToolUse hooks — as HTTP hooks, the default (a POST each, without keep-alive, the "+
		"hook's JSON — a Read of a file — as the body and the token of the stand-in's settings layer in the header), and as "+
		"command hooks (`sh -c` with the JSON on stdin and the environment `:ClaudeStart` gives the CLI) — and waits for each. "+
		"The floors: the same POSTs to a bare HTTP server in the runner that answers `{}`, and the same two `sh -c true`. The "+
		"four alternate. Neovim's and the host's CPU are read from the kernel's process CPU clocks around each call, after a "+
		"no-op request lets Neovim finish what the hook set off. The session's state at the end: %q.\n\n", calls, state)
	return sec, nil
}

// shellWord quotes s for sh.
func shellWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
