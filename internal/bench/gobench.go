//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// goBench is one benchmark's results over -count runs.
type goBench struct {
	name                         string
	nsOp, mbS, bytesOp, allocsOp sample
}

// parseGoBench reads `go test -bench` output (the benchstat format).
func parseGoBench(out string) map[string]*goBench {
	res := map[string]*goBench{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		// drop the -GOMAXPROCS suffix
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		b := res[name]
		if b == nil {
			b = &goBench{name: name}
			res[name] = b
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				b.nsOp = append(b.nsOp, v)
			case "MB/s":
				b.mbS = append(b.mbS, v)
			case "B/op":
				b.bytesOp = append(b.bytesOp, v)
			case "allocs/op":
				b.allocsOp = append(b.allocsOp, v)
			}
		}
	}
	return res
}

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.0f ns", ns)
	}
}

func runGoBench(ctx context.Context, r *runner) (*section, error) {
	sec := &section{}
	count, benchtime := "6", "1s"
	if r.quick {
		count, benchtime = "1", "200ms"
	}
	pkgs := []benchPkg{{"./mcp/", ".", "the JSON-RPC codec (mcp/bench_test.go)"}}
	if _, err := os.Stat(filepath.Join(r.root, "plugin", "selection_bench_test.go")); err == nil {
		pkgs = append(pkgs, benchPkg{"./ide/selection/", "^BenchmarkSel", "the selection coalescer (ide/selection/selection_bench_test.go)"})
	} else {
		sec.printf("The selection coalescer benchmark (ide/selection/selection_bench_test.go) is not in this checkout: not available.\n\n")
	}
	var raw strings.Builder
	all := map[string]*goBench{}
	var cmds []string
	for _, p := range pkgs {
		args := []string{"test", "-run", "^$", "-bench", p.pattern, "-benchmem", "-count", count, "-benchtime", benchtime, p.path}
		cmds = append(cmds, "go "+strings.Join(quoteArgs(args), " "))
		cmd := exec.CommandContext(ctx, r.goBin, args...)
		cmd.Dir = r.root
		cmd.Env = append(os.Environ(), "NVIM_BIN="+r.nvimBin)
		out, err := cmd.CombinedOutput()
		raw.Write(out)
		if err != nil {
			return sec, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for k, v := range parseGoBench(string(out)) {
			all[k] = v
		}
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return sec, fmt.Errorf("no benchmark results in:\n%s", raw.String())
	}
	sec.printf("Micro-benchmarks of the host's hot paths, %s runs each (`-benchtime %s`), in what they cover: %s. "+
		"Commands:\n\n", count, benchtime, describePkgs(pkgs))
	for _, c := range cmds {
		sec.printf("    %s\n", c)
	}
	sec.printf("\nFor a before/after comparison save the raw output of two checkouts and compare them with benchstat: " +
		"`go test -run '^$' -bench . -benchmem -count 10 ./mcp/ > old.txt` … `benchstat old.txt new.txt`.\n\n")
	sec.printf("| benchmark | time/op (median) | min–max | MB/s | B/op | allocs/op |\n|---|---|---|---|---|---|\n")
	for _, n := range names {
		b := all[n]
		mbs := "—"
		if len(b.mbS) > 0 {
			mbs = fmt.Sprintf("%.0f", b.mbS.median())
		}
		sec.printf("| %s | %s | %s–%s | %s | %.0f | %.0f |\n", n, fmtNs(b.nsOp.median()), fmtNs(b.nsOp.min()), fmtNs(b.nsOp.max()),
			mbs, b.bytesOp.median(), b.allocsOp.median())
	}
	sec.printf("\n<details><summary>Raw output (benchstat input)</summary>\n\n```\n%s```\n\n</details>\n", raw.String())
	return sec, nil
}

// benchPkg is a package whose benchmarks the report includes.
type benchPkg struct{ path, pattern, why string }

func describePkgs(pkgs []benchPkg) string {
	var parts []string
	for _, p := range pkgs {
		parts = append(parts, p.why)
	}
	return strings.Join(parts, "; ")
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$* ") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}
