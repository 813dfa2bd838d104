//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

// TestDenyTableThroughThePlugin runs the deny-list table the host's judge
// is tested against (workspace/testdata/deny_table.json) through what the
// plugin shares: each file is entered and selected in visual mode, then
// mentioned with :ClaudeAdd, then getOpenEditors is asked. Nothing of a
// denied file — its text or its name — may reach the CLI, whichever of the
// globs, a symlink or another hard link (a ~/.ssh key linked into the
// project) makes it denied; every allowed file is shared as before.
func TestDenyTableThroughThePlugin(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tb := testkit.LoadDenyTable(t, "../../workspace/testdata/deny_table.json", home)
	project := filepath.Join(home, "proj")
	var sentinel strings.Builder
	for i := 1; i <= 2*len(tb.Cases)+2; i++ {
		fmt.Fprintf(&sentinel, "sentinel-%d\n", i)
	}
	bndWrite(t, project, map[string]string{"zz-sentinel.txt": sentinel.String()})
	sentinelPath := filepath.Join(project, "zz-sentinel.txt")
	extra, _ := json.Marshal(tb.DenyExtra)
	r := startBndRig(t, project, home, fmt.Sprintf(`, security = { deny_extra = vim.json.decode(%q) }`, extra))

	// Each selection ends well apart from the last: none is a scripted
	// series whose members are coalesced.
	r.Exec(t, `require("claude.selection")._rapid(0)`)

	// The table's default list is Lua's, the one source of it.
	var globs []string
	r.Eval(t, `return require("claude.config").deny_globs()`, &globs)
	if want := append(append([]string(nil), tb.Deny...), tb.DenyExtra...); strings.Join(globs, " ") != strings.Join(want, " ") {
		t.Fatalf("Lua's deny-list %q is not the table's %q: update the table", globs, want)
	}

	// What must never leave: the denied files' text and names (as asked,
	// cleaned, and with symlinks resolved).
	secretText, secretName := map[string]bool{}, map[string]bool{}
	for _, c := range tb.Cases {
		abs := filepath.Clean(filepath.Join(home, c.Path))
		if !c.Want() {
			continue
		}
		secretText[c.Text] = true
		secretName[abs] = true
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			secretName[real] = true
		}
	}
	// next returns the next frame pred accepts, failing on any frame that
	// carries a denied file's text or name.
	next := func(what string, pred func(m map[string]any, s string) bool) map[string]any {
		t.Helper()
		timeout := time.After(90 * time.Second)
		for {
			select {
			case m, ok := <-r.frames.frames:
				if !ok {
					t.Fatalf("the connection closed: %s", what)
				}
				b, _ := json.Marshal(m)
				s := string(b)
				for text := range secretText {
					if strings.Contains(s, text) {
						t.Fatalf("%s: a denied file's text went out: %s", what, s)
					}
				}
				p, _ := m["params"].(map[string]any)
				if fp, _ := p["filePath"].(string); secretName[fp] {
					t.Fatalf("%s: a denied file's name went out: %s", what, s)
				}
				if pred(m, s) {
					return m
				}
			case <-timeout:
				t.Fatalf("no frame: %s", what)
			}
		}
	}
	selected := func(text string) func(map[string]any, string) bool {
		return func(m map[string]any, _ string) bool {
			p, _ := m["params"].(map[string]any)
			got, _ := p["text"].(string)
			return m["method"] == "selection_changed" && strings.Contains(got, text)
		}
	}
	visual := func(path, keys string) {
		t.Helper()
		r.Exec(t, fmt.Sprintf(`vim.cmd("edit " .. vim.fn.fnameescape(%q))
			vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(%q, true, false, true), "mx", false)`, path, keys))
	}
	line := 0
	mark := func() {
		t.Helper()
		line++
		visual(sentinelPath, fmt.Sprintf("%dGV<Esc>", line))
		next(fmt.Sprintf("sentinel %d", line), selected(fmt.Sprintf("sentinel-%d\n", line)))
	}

	// Another hard link first: Neovim gives a file it already has a buffer
	// for under another name (same device and inode) that buffer, so the
	// link must be opened before the file it is another name of — as when
	// a user opens proj/notes.txt never having opened ~/.ssh/id_ed25519.
	cases := append([]testkit.DenyCase(nil), tb.Cases...)
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].Rule == "identity" && cases[j].Rule != "identity" })
	for _, c := range cases {
		abs := filepath.Join(home, c.Path)
		// Lua's own matcher is built from the same rules: it agrees with
		// the host wherever the globs decide. Another hard link is the
		// host's to judge, and what leaves is checked below.
		if c.Rule == "glob" {
			var got bool
			r.Eval(t, fmt.Sprintf(`return require("claude.selection").denied(%q)`, filepath.Clean(abs)), &got)
			if got != c.Want() {
				t.Errorf("claude.selection.denied(%s) = %v, want %v", c.Path, got, c.Want())
			}
		}
		mark()
		visual(abs, "ggVG<Esc>")
		if !c.Want() {
			next("the selection in "+c.Path, selected(c.Text))
		} else {
			// The CLI is told to forget the sentinel's selection, and told
			// nothing of this file.
			next("the selection in "+c.Path+" withheld", func(m map[string]any, _ string) bool {
				p, _ := m["params"].(map[string]any)
				return m["method"] == "selection_changed" && p["filePath"] == ""
			})
		}
	}
	mark() // every frame up to here was checked

	for _, c := range tb.Cases {
		r.Exec(t, fmt.Sprintf(`pcall(vim.cmd, "ClaudeAdd " .. vim.fn.fnameescape(%q))`, filepath.Join(home, c.Path)))
	}
	r.Exec(t, fmt.Sprintf(`vim.cmd("ClaudeAdd " .. vim.fn.fnameescape(%q))`, sentinelPath))
	mentioned := map[string]bool{}
	next("the sentinel's mention", func(m map[string]any, _ string) bool {
		p, _ := m["params"].(map[string]any)
		fp, _ := p["filePath"].(string)
		if m["method"] == "at_mentioned" {
			mentioned[fp] = true
		}
		return m["method"] == "at_mentioned" && fp == sentinelPath
	})
	if !mentioned[filepath.Join(project, "main.txt")] {
		t.Errorf(":ClaudeAdd of an allowed file was not delivered: %v", mentioned)
	}

	eds := r.ide(t, "tools/call", map[string]any{"name": "getOpenEditors", "arguments": map[string]any{}})
	b, _ := json.Marshal(eds)
	for name := range secretName {
		if strings.Contains(string(b), `file://`+name+`\"`) {
			t.Errorf("getOpenEditors names the denied %s: %s", name, b)
		}
	}
	if !strings.Contains(string(b), filepath.Join(project, "main.txt")) {
		t.Errorf("getOpenEditors lost an allowed file: %s", b)
	}
	if _, err := os.Stat(filepath.Join(project, "notes.txt")); err != nil {
		t.Fatal(err)
	}
}
