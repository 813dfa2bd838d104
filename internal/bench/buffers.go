//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

const (
	nBuffers     = 500
	diagsPerFile = 20
)

// loadBuffersLua loads every file as a listed buffer and gives each
// diagsPerFile diagnostics (all severities), as language servers would.
const loadBuffersLua = `
local files, per = ...
local ns = vim.api.nvim_create_namespace("nvim-claude-bench")
for _, f in ipairs(files) do
  local b = vim.fn.bufadd(f)
  vim.fn.bufload(b)
  vim.bo[b].buflisted = true
  local d = {}
  for j = 0, per - 1 do
    d[#d + 1] = {
      lnum = j * 2, col = 1, end_lnum = j * 2, end_col = 12,
      severity = (j % 4) + 1,
      message = string.format("bench diagnostic %d: undefined: result%d", j, j),
      source = "bench", code = string.format("B%03d", j),
    }
  end
  vim.diagnostic.set(ns, b, d)
end
return #vim.fn.getbufinfo({ buflisted = 1 })
`

// timeTool calls a tool n times and returns the round trips in ms: from
// just before the request frame is written to the moment the whole answer
// frame has been read (the client's own JSON decoding is not counted).
func timeTool(ctx context.Context, c *ideClient, name string, args func(i int) any, n int) (sample, toolResult, error) {
	var out sample
	var first toolResult
	for i := 0; i < n; i++ {
		p, err := c.start("tools/call", map[string]any{"name": name, "arguments": args(i), "_meta": map[string]any{"progressToken": i}})
		if err != nil {
			return out, first, err
		}
		reply, err := p.wait(ctx)
		res, _, err := decodeTool(name, reply, err)
		if err != nil {
			return out, first, err
		}
		if i == 0 {
			first = res
		}
		out = append(out, usMS(reply.Mono-p.Sent))
	}
	return out, first, nil
}

func runContext(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	files := map[string]string{}
	var paths []string
	for i := 0; i < nBuffers; i++ {
		rel := fmt.Sprintf("src/pkg%02d/file%03d.go", i/50, i)
		var b strings.Builder
		fmt.Fprintf(&b, "package pkg%02d\n\n", i/50)
		for j := 0; j < 40; j++ {
			fmt.Fprintf(&b, "var result%d = compute(%d) // line %d\n", j, i*j, j)
		}
		files[rel] = b.String()
		paths = append(paths, rel)
	}
	dir, err := r.project("buffers", files)
	if err != nil {
		return sec, err
	}
	for i := range paths {
		paths[i] = filepath.Join(dir, paths[i])
	}
	e, err := r.startEditor(ctx, editorOpts{plugin: true, dir: dir})
	if err != nil {
		return sec, err
	}
	defer e.close()
	lock, err := e.serve(ctx)
	if err != nil {
		return sec, err
	}
	c, err := dialIDE(ctx, lock)
	if err != nil {
		return sec, err
	}
	defer c.close()
	tools, err := c.toolNames(ctx)
	if err != nil {
		return sec, err
	}
	var listed int
	if err := e.exec(ctx, loadBuffersLua, &listed, paths, diagsPerFile); err != nil {
		return sec, fmt.Errorf("load buffers: %w", err)
	}
	if listed < nBuffers {
		return sec, fmt.Errorf("%d listed buffers, want %d", listed, nBuffers)
	}
	time.Sleep(1500 * time.Millisecond) // let DiagnosticChanged pushes settle
	c.drain()

	nAll, nURI, nEd := 50, 500, 200
	if r.quick {
		nAll, nURI, nEd = 10, 100, 50
	}
	uri := func(i int) string {
		return (&url.URL{Scheme: "file", Path: paths[i%len(paths)]}).String()
	}
	sec.printf("One Neovim with the plugin (`setup()`, `:ClaudeServe`, one client after the CLI handshake) loads %d files "+
		"(`bufadd` + `bufload`, listed) and gives each %d diagnostics with `vim.diagnostic.set` (all four severities, source and "+
		"code set) — %d in all — after the client connected, as language servers would report them during a session; then "+
		"1.5 s to settle. Each call is a tools/call from the client, timed from just before the frame is written until the "+
		"whole answer frame has been read (not decoded); 5 warm-up calls each first. The floors, for reference, are the same answers computed inside Neovim and "+
		"fetched by the runner over msgpack-RPC (`nvim_exec_lua` returning one JSON string), and a JSON-RPC `ping` to the host.\n\n",
		nBuffers, diagsPerFile, nBuffers*diagsPerFile)

	// 6: getDiagnostics
	if !tools["getDiagnostics"] {
		for _, o := range []float64{6, 6.1} {
			sec.add(row{order: o, num: "6", scenario: "getDiagnostics", figure: "—", result: "—", spread: "—", target: "—",
				verdict: notAvailable("the host has no getDiagnostics tool"), ref: "—"})
		}
	} else {
		noArgs := func(int) any { return map[string]any{} }
		withURI := func(i int) any { return map[string]any{"uri": uri(i)} }
		if _, _, err := timeTool(ctx, c, "getDiagnostics", noArgs, 5); err != nil {
			return sec, err
		}
		all, first, err := timeTool(ctx, c, "getDiagnostics", noArgs, nAll)
		if err != nil {
			return sec, err
		}
		nf, nd, err := countDiagnostics(first)
		if err != nil {
			return sec, err
		}
		if nf != nBuffers || nd != nBuffers*diagsPerFile {
			return sec, fmt.Errorf("getDiagnostics {} answered %d files with %d diagnostics, want %d with %d", nf, nd, nBuffers, nBuffers*diagsPerFile)
		}
		if _, _, err := timeTool(ctx, c, "getDiagnostics", withURI, 5); err != nil {
			return sec, err
		}
		one, firstOne, err := timeTool(ctx, c, "getDiagnostics", withURI, nURI)
		if err != nil {
			return sec, err
		}
		if nf, nd, err := countDiagnostics(firstOne); err != nil || nf != 1 || nd != diagsPerFile {
			return sec, fmt.Errorf("getDiagnostics {uri} answered %d files with %d diagnostics (%v), want 1 with %d", nf, nd, err, diagsPerFile)
		}
		floorAll, err := timeExec(ctx, e, `return vim.json.encode(vim.diagnostic.get())`, nil, 10)
		if err != nil {
			return sec, err
		}
		floorOne, err := timeExec(ctx, e, `return vim.json.encode(vim.diagnostic.get(vim.fn.bufnr(...)))`, paths[7], 50)
		if err != nil {
			return sec, err
		}
		sec.add(row{order: 6, num: "6", scenario: fmt.Sprintf("%d loaded buffers × %d diagnostics", nBuffers, diagsPerFile),
			figure: "`getDiagnostics {}` p50", result: fmt.Sprintf("%s (%d KiB answer)", fmtMS(all.median()), len(first.Content[0].Text)>>10),
			spread: fmt.Sprintf("p25–p75 %s, p99 %s, n=%d", fmtRange(all.quantile(0.25), all.quantile(0.75)), fmtMS(all.quantile(0.99)), len(all)),
			target: "≤ 20 ms", verdict: verdict(all.median() <= 20), ref: "124 ms"})
		sec.add(row{order: 6.1, num: "6", scenario: "same", figure: "`getDiagnostics {uri}` p50",
			result: fmtMS(one.median()),
			spread: fmt.Sprintf("p25–p75 %s, p99 %s, n=%d", fmtRange(one.quantile(0.25), one.quantile(0.75)), fmtMS(one.quantile(0.99)), len(one)),
			target: "≤ 0.5 ms", verdict: verdict(one.median() <= 0.5), ref: "1.8 ms"})
		sec.printf("| call | n | p50 | p25–p75 | p99 | floor: computed in Neovim, fetched over msgpack-RPC (p50) |\n|---|---|---|---|---|---|\n")
		sec.printf("| getDiagnostics {} (%d KiB) | %d | %s | %s | %s | %s (`vim.json.encode(vim.diagnostic.get())`) |\n",
			len(first.Content[0].Text)>>10, len(all), fmtMS(all.median()), fmtRange(all.quantile(0.25), all.quantile(0.75)), fmtMS(all.quantile(0.99)), fmtMS(floorAll.median()))
		sec.printf("| getDiagnostics {uri} | %d | %s | %s | %s | %s (`vim.diagnostic.get(buf)`) |\n",
			len(one), fmtMS(one.median()), fmtRange(one.quantile(0.25), one.quantile(0.75)), fmtMS(one.quantile(0.99)), fmtMS(floorOne.median()))
	}

	// 7: getOpenEditors
	if !tools["getOpenEditors"] {
		sec.add(row{order: 7, num: "7", scenario: "getOpenEditors", figure: "—", result: "—", spread: "—", target: "—",
			verdict: notAvailable("the host has no getOpenEditors tool"), ref: "—"})
	} else {
		noArgs := func(int) any { return map[string]any{} }
		if _, _, err := timeTool(ctx, c, "getOpenEditors", noArgs, 5); err != nil {
			return sec, err
		}
		eds, first, err := timeTool(ctx, c, "getOpenEditors", noArgs, nEd)
		if err != nil {
			return sec, err
		}
		var got struct {
			Tabs []json.RawMessage `json:"tabs"`
		}
		if len(first.Content) == 0 || json.Unmarshal([]byte(first.Content[0].Text), &got) != nil {
			return sec, errors.New("getOpenEditors: the answer is not {tabs:[…]}")
		}
		if len(got.Tabs) < nBuffers {
			return sec, fmt.Errorf("getOpenEditors listed %d tabs, want at least %d", len(got.Tabs), nBuffers)
		}
		floor, err := timeExec(ctx, e, `
			local out = {}
			for _, b in ipairs(vim.api.nvim_list_bufs()) do
			  if vim.bo[b].buflisted then
			    out[#out + 1] = { name = vim.api.nvim_buf_get_name(b), ft = vim.bo[b].filetype, mod = vim.bo[b].modified }
			  end
			end
			return vim.json.encode(out)`, nil, 50)
		if err != nil {
			return sec, err
		}
		sec.add(row{order: 7, num: "7", scenario: fmt.Sprintf("%d loaded buffers", nBuffers), figure: "`getOpenEditors` p50",
			result: fmt.Sprintf("%s (%d tabs)", fmtMS(eds.median()), len(got.Tabs)),
			spread: fmt.Sprintf("p25–p75 %s, p99 %s, n=%d", fmtRange(eds.quantile(0.25), eds.quantile(0.75)), fmtMS(eds.quantile(0.99)), len(eds)),
			target: "≤ 5 ms", verdict: verdict(eds.median() <= 5), ref: "10 ms"})
		sec.printf("| getOpenEditors (%d tabs) | %d | %s | %s | %s | %s (listed buffers' name, filetype, modified as JSON) |\n",
			len(got.Tabs), len(eds), fmtMS(eds.median()), fmtRange(eds.quantile(0.25), eds.quantile(0.75)), fmtMS(eds.quantile(0.99)), fmtMS(floor.median()))
	}
	// Profiles of the missed ones.
	for _, x := range sec.rows {
		if x.verdict != verdictMissed {
			continue
		}
		name, args, n := "getDiagnostics", func(int) any { return map[string]any{} }, 40
		if x.order == 7 {
			name, n = "getOpenEditors", 200
		} else if x.order != 6 {
			continue
		}
		what := fmt.Sprintf("Neovim and the host during %d × `%s {}`", n, name)
		if why, ok := r.perfUsable(); !ok {
			sec.printf("\nNo profile of %s: %s.\n", name, why)
			continue
		}
		prof, err := r.startProfile(what, e.pid, e.hostPID())
		if err != nil {
			sec.printf("\nNo profile of %s: %v.\n", name, err)
			continue
		}
		n0, _ := cpuClock(e.pid)
		h0, _ := cpuClock(e.hostPID())
		_, _, err = timeTool(ctx, c, name, args, n)
		n1, _ := cpuClock(e.pid)
		h1, _ := cpuClock(e.hostPID())
		sec.printf("\n**%s**: per call %s of Neovim CPU and %s of host CPU.\n\n%s", name,
			fmtMS((n1-n0).Seconds()*1000/float64(n)), fmtMS((h1-h0).Seconds()*1000/float64(n)), prof.stop(ctx))
		if err != nil {
			return sec, err
		}
	}
	ping := sample{}
	for i := 0; i < 200; i++ {
		t := time.Now()
		if _, err := c.call(ctx, "ping", nil); err != nil {
			return sec, err
		}
		ping = append(ping, time.Since(t).Seconds()*1000)
	}
	sec.printf("\nFor comparison, `ping` (the host alone, no Neovim) on the same connection: p50 %s, p25–p75 %s, p99 %s (n=%d).\n",
		fmtMS(ping.median()), fmtRange(ping.quantile(0.25), ping.quantile(0.75)), fmtMS(ping.quantile(0.99)), len(ping))
	return sec, nil
}

// timeExec times n nvim_exec_lua calls returning a string (ms).
func timeExec(ctx context.Context, e *editor, code string, arg any, n int) (sample, error) {
	var out sample
	var args []any
	if arg != nil {
		args = []any{arg}
	}
	for i := 0; i < n; i++ {
		var s string
		t := time.Now()
		if err := e.exec(ctx, code, &s, args...); err != nil {
			return out, err
		}
		out = append(out, time.Since(t).Seconds()*1000)
	}
	return out, nil
}

// countDiagnostics counts the files and diagnostics of a getDiagnostics
// answer.
func countDiagnostics(res toolResult) (files, diags int, err error) {
	if len(res.Content) == 0 {
		return 0, 0, errors.New("getDiagnostics: empty answer")
	}
	var v []struct {
		URI         string            `json:"uri"`
		Diagnostics []json.RawMessage `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &v); err != nil {
		return 0, 0, fmt.Errorf("getDiagnostics: the answer is not a JSON array: %w", err)
	}
	for _, f := range v {
		if len(f.Diagnostics) > 0 {
			files++
			diags += len(f.Diagnostics)
		}
	}
	return files, diags, nil
}
