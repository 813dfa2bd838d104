// Package archtest checks the shape of the module's package graph: which
// package may import which (the rules of doc/nvim-claude.txt's
// "nvim-claude-layout" and README's Development section). It reads the
// graph with `go list -deps -json` and knows package paths only, never
// what a package does.
package archtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
)

// Module is the module's import path.
const Module = "github.com/nvim-claude/nvim-claude"

// Features are the feature packages (module-relative): each does one job
// and gets a host.Host and the interfaces it declares from app.
var Features = []string{"ide/selection", "ide/editorcontext", "diff", "review", "kernel", "edtools", "chatpanel", "sessions", "remote"}

// Graph maps a module-relative package to the module-relative packages it
// imports directly (test files excluded).
type Graph map[string][]string

// Load reads the module's graph with `go list` run in dir.
func Load(ctx context.Context, dir string) (Graph, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json", "./...")
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, errb.String())
	}
	g := Graph{}
	dec := json.NewDecoder(&out)
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		var imps []string
		for _, imp := range p.Imports {
			if r, ok := relative(imp); ok {
				imps = append(imps, r)
			}
		}
		g[rel] = imps
	}
	return g, nil
}

func relative(path string) (string, bool) {
	if path == Module {
		return ".", true
	}
	if r, ok := strings.CutPrefix(path, Module+"/"); ok {
		return r, true
	}
	return "", false
}

// feature names the feature package p belongs to ("" for none): a feature
// is its package and the packages below it (edtools/discovery).
func feature(p string) string {
	for _, f := range Features {
		if p == f || strings.HasPrefix(p, f+"/") {
			return f
		}
	}
	return ""
}

// leaf names the leaf package p belongs to ("" for none).
func leaf(p string) string {
	for _, l := range Leaves {
		if under(p, l) {
			return l
		}
	}
	return ""
}

// under reports whether p is pkg or below it.
func under(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }

// Leaves are the shared vocabularies: packages any feature may import
// that import nothing of the module themselves.
var Leaves = []string{"mcp", "chat", "workspace", "display", "verdict"}

// Check returns the graph's violations of the rules, sorted:
//   - a feature imports nothing under app/ and no other feature;
//   - host and app/core import no feature; host imports nothing under
//     app/ and no feature's vocabulary (only mcp and workspace);
//   - nvimbridge imports no feature, nothing under app/ and not host;
//   - the leaves (mcp, chat, workspace, display, verdict) import nothing of
//     the module;
//   - cmd imports app and the relay's socket discovery (edtools/discovery)
//     only.
func Check(g Graph) []string {
	var bad []string
	add := func(from, to, why string) { bad = append(bad, fmt.Sprintf("%s imports %s: %s", from, to, why)) }
	for from, imps := range g {
		ff := feature(from)
		for _, to := range imps {
			tf := feature(to)
			switch {
			case ff != "" && under(to, "app"):
				add(from, to, "a feature never imports app; app gives it what it needs")
			case ff != "" && tf != "" && tf != ff:
				add(from, to, "a feature never imports another feature; declare an interface and let app wire it")
			case (under(from, "host") || under(from, "app/core")) && tf != "":
				add(from, to, "the host and the lifecycle know no feature")
			case under(from, "host") && !under(to, "mcp") && !under(to, "workspace"):
				add(from, to, "host imports mcp and workspace only: no wiring, no feature's vocabulary")
			case under(from, "nvimbridge") && (tf != "" || under(to, "app") || under(to, "host")):
				add(from, to, "nvimbridge never imports a feature, app or host")
			case leaf(from) != "" && !under(to, leaf(from)):
				add(from, to, "mcp, chat, workspace, display and verdict import nothing of the module")
			case under(from, "cmd") && to != "app" && to != "edtools/discovery":
				add(from, to, "cmd imports app and the relay's edtools/discovery only")
			}
		}
	}
	sort.Strings(bad)
	return bad
}
