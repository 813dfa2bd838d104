package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestMethodReadFile(t *testing.T) {
	h := startCtxHarness(t, map[string]string{
		"a.txt":         "a\n",
		"sub/b.txt":     "b é😀\n",
		"mod.txt":       "on disk\n",
		".env":          "SECRET=1\n",
		"{{out}}/o.txt": "outside\n",
	})
	for link, target := range map[string]string{"in.txt": h.path("a.txt"), "out.txt": filepath.Join(h.out, "o.txt"), "outdir": h.out} {
		if err := os.Symlink(target, h.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(h.path("bin.dat"), []byte{0xff, 0xfe, 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	ans := func(path, content string, unsaved bool) obj {
		return obj{"path", path, "content", content, "unsaved", unsaved}
	}
	tr := sendMethod(1, "readFile", obj{"path", "a.txt"}) +
		wantResult(1, ans("a.txt", "a\n", false)) +
		sendMethod(2, "readFile", obj{"path", h.path("sub/b.txt")}) +
		wantResult(2, ans("sub/b.txt", "b é😀\n", false)) +
		sendMethod(3, "readFile", obj{"path", "in.txt"}) +
		wantResult(3, ans("in.txt", "a\n", false)) + `
# a buffer with unsaved changes: its text
lua: vim.cmd("edit mod.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "in the buffer" })
` + sendMethod(4, "readFile", obj{"path", "mod.txt"}) +
		wantResult(4, ans("mod.txt", "in the buffer\n", true)) + `
# confined to the workspace
` + sendMethod(5, "readFile", obj{"path", "../x.txt"}) +
		wantError(5, -32602, `Invalid params: "../x.txt": paths with ".." are not allowed`) +
		sendMethod(6, "readFile", obj{"path", "sub/../a.txt"}) +
		wantError(6, -32602, `Invalid params: "sub/../a.txt": paths with ".." are not allowed`) +
		sendMethod(7, "readFile", obj{"path", filepath.Join(h.out, "o.txt")}) +
		wantError(7, -32602, `Invalid params: "`+filepath.Join(h.out, "o.txt")+`" is outside the workspace folders (`+h.dir+`)`) +
		sendMethod(8, "readFile", obj{"path", "out.txt"}) +
		wantError(8, -32602, `Invalid params: "out.txt" resolves to `+filepath.Join(h.out, "o.txt")+`, outside the workspace folders (a symlink leads out)`) +
		sendMethod(9, "readFile", obj{"path", "outdir/o.txt"}) +
		wantError(9, -32602, `Invalid params: "outdir/o.txt" resolves to `+filepath.Join(h.out, "o.txt")+`, outside the workspace folders (a symlink leads out)`) + `
# the deny-list, and files that are not text
` + sendMethod(10, "readFile", obj{"path", ".env"}) +
		wantError(10, -32602, `Invalid params: .env matches the deny-list (security.deny): its contents never leave Neovim`) +
		sendMethod(11, "readFile", obj{"path", "bin.dat"}) +
		wantError(11, -32602, `Invalid params: bin.dat: not a text file (binary, or not UTF-8)`) +
		sendMethod(12, "readFile", obj{"path", "none.txt"}) +
		wantError(12, -32602, `Invalid params: none.txt: no such file`) +
		sendMethod(13, "readFile", obj{"path", "sub"}) +
		wantError(13, -32602, `Invalid params: sub: is a directory`) +
		sendMethod(14, "readFile", obj{}) +
		wantError(14, -32602, `Invalid params: path is required`) +
		sendMethod(15, "readFile", obj{"path", 1}) +
		wantError(15, -32602, `Invalid params: path must be a string`)
	h.run(t, tr)
}

func TestMethodWriteFile(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "private.txt": "p\n", "open.txt": "one\ntwo\n", "target.txt": "t\n"})
	if err := os.Chmod(h.path("private.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link.txt": h.path("target.txt"), "dangling.txt": filepath.Join(h.out, "new.txt")} {
		if err := os.Symlink(target, h.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	ok := func(path string, buffer bool) obj { return obj{"success", true, "path", path, "throughBuffer", buffer} }
	tr := `# files not open: written atomically, the mode kept, missing directories made
` + sendMethod(1, "writeFile", obj{"path", "a.txt", "content", "new a\n"}) +
		wantResult(1, ok("a.txt", false)) +
		sendMethod(2, "writeFile", obj{"path", "private.txt", "content", "secret"}) +
		wantResult(2, ok("private.txt", false)) +
		sendMethod(3, "writeFile", obj{"path", "deep/er/n.txt", "content", ""}) +
		wantResult(3, ok("deep/er/n.txt", false)) + `
# a symlink inside the workspace: the file it leads to is written, the link stays
` + sendMethod(4, "writeFile", obj{"path", "link.txt", "content", "via link\n"}) +
		wantResult(4, ok("link.txt", false)) + `
# an open file: through its buffer (one undo step), then :write
lua: vim.cmd("edit open.txt")
` + sendMethod(5, "writeFile", obj{"path", "open.txt", "content", "one\nTWO\nthree\n"}) +
		wantResult(5, ok("open.txt", true)) + `
check: table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "|") == "one|TWO|three" and not vim.bo.modified
lua: vim.cmd("undo")
check: table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "|") == "one|two"
# refused
` + sendMethod(6, "writeFile", obj{"path", "dangling.txt", "content", "x"}) +
		wantError(6, -32602, `Invalid params: "dangling.txt" resolves to `+filepath.Join(h.out, "new.txt")+`, outside the workspace folders (a symlink leads out)`) +
		sendMethod(7, "writeFile", obj{"path", "/etc/passwd", "content", "x"}) +
		wantError(7, -32602, `Invalid params: "/etc/passwd" is outside the workspace folders (`+h.dir+`)`) +
		sendMethod(8, "writeFile", obj{"path", "a.txt"}) +
		wantError(8, -32602, `Invalid params: content is required`) +
		sendMethod(9, "writeFile", obj{"path", "deep", "content", "x"}) +
		wantError(9, -32602, `Invalid params: deep is not a regular file`)
	h.run(t, tr)
	files := map[string]string{"a.txt": "new a\n", "private.txt": "secret", "deep/er/n.txt": "", "target.txt": "via link\n", "open.txt": "one\nTWO\nthree\n"}
	for name, want := range files {
		if b, err := os.ReadFile(h.path(name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	for name, want := range map[string]os.FileMode{"a.txt": 0o644, "private.txt": 0o600, "deep/er/n.txt": 0o644} {
		if fi, err := os.Stat(h.path(name)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	if fi, err := os.Lstat(h.path("link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.out, "new.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	// No temporary files left behind.
	entries, _ := os.ReadDir(h.dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".txt" && e.Name() != "deep" {
			t.Errorf("left in the workspace: %s", e.Name())
		}
	}
}

func TestMethodListFiles(t *testing.T) {
	files := map[string]string{
		"a.go": "", "b.txt": "", "sub/c.go": "", "sub/deep/d.go": "", ".hidden/e.txt": "",
		"node_modules/m/index.js": "", ".git/config": "", "build/out.bin": "",
	}
	t.Run("walk", func(t *testing.T) {
		h := startCtxHarness(t, files)
		tr := sendMethod(1, "listFiles", obj{}) +
			wantResult(1, obj{"files", []string{".hidden/e.txt", "a.go", "b.txt", "build/out.bin", "sub/c.go", "sub/deep/d.go"}, "truncated", false}) +
			sendMethod(2, "listFiles", obj{"pattern", "*.go"}) +
			wantResult(2, obj{"files", []string{"a.go", "sub/c.go", "sub/deep/d.go"}, "truncated", false}) +
			sendMethod(3, "listFiles", obj{"pattern", "sub/**"}) +
			wantResult(3, obj{"files", []string{"sub/c.go", "sub/deep/d.go"}, "truncated", false}) +
			sendMethod(4, "listFiles", obj{"pattern", "sub/*.go"}) +
			wantResult(4, obj{"files", []string{"sub/c.go"}, "truncated", false}) +
			sendMethod(5, "listFiles", obj{"pattern", "*.{txt,bin}"}) +
			wantResult(5, obj{"files", []string{".hidden/e.txt", "b.txt", "build/out.bin"}, "truncated", false}) +
			sendMethod(6, "listFiles", obj{"pattern", "[ab].*"}) +
			wantResult(6, obj{"files", []string{"a.go", "b.txt"}, "truncated", false}) +
			sendMethod(7, "listFiles", obj{"pattern", "[oops"}) +
			wantError(7, -32602, `Invalid params: pattern: unclosed [ in "[oops"`)
		h.run(t, tr)
	})
	t.Run("git work tree", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		f := map[string]string{".gitignore": "build/\n*.log\n", "x.log": ""}
		for k, v := range files {
			if k != ".git/config" {
				f[k] = v
			}
		}
		h := startCtxHarness(t, f)
		if out, err := exec.Command("git", "-C", h.dir, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		// .gitignore applies; node_modules is listed as git would list it
		tr := sendMethod(1, "listFiles", obj{}) +
			wantResult(1, obj{"files", []string{".gitignore", ".hidden/e.txt", "a.go", "b.txt", "node_modules/m/index.js", "sub/c.go", "sub/deep/d.go"}, "truncated", false})
		h.run(t, tr)
	})
}

func TestMethodWorkspaceInfoAndFiles(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.go": "package a\n", "b.txt": "one\nhé😀x\n", "{{out}}/o.txt": "o\n"})
	tr := sendMethod(1, "getWorkspaceInfo", obj{}) +
		likeText(wantResult(1, obj{"name", filepath.Base(h.dir), "path", h.dir, "folders", []obj{{"name", filepath.Base(h.dir), "uri", "file://" + h.dir, "path", h.dir}},
			"editor", "Neovim", "editorVersion", "(*)", "pluginVersion", Version})) +
		sendMethod(2, "getCurrentFile", obj{}) +
		wantResult(2, obj{"path", nil, "message", "No file is open in an editor window"}) +
		sendMethod(3, "getOpenFiles", obj{}) +
		wantResult(3, obj{"files", []obj{}}) + `
lua: vim.cmd("edit a.go | edit ` + filepath.Join(h.out, "o.txt") + ` | edit b.txt") vim.api.nvim_win_set_cursor(0, { 2, 7 }) vim.cmd("normal! ix")
` + sendMethod(4, "getCurrentFile", obj{}) +
		wantResult(4, obj{"path", "b.txt", "absolutePath", h.path("b.txt"), "uri", "file://" + h.path("b.txt"), "languageId", "plaintext",
			"isDirty", true, "lineCount", 2, "cursor", obj{"line", 1, "character", 4}}) +
		sendMethod(5, "getOpenFiles", obj{}) +
		wantResult(5, obj{"files", []obj{
			{"path", "a.go", "absolutePath", h.path("a.go"), "uri", "file://" + h.path("a.go"), "languageId", "go", "isActive", false, "isDirty", false},
			{"path", filepath.Join(h.out, "o.txt"), "absolutePath", filepath.Join(h.out, "o.txt"), "uri", "file://" + filepath.Join(h.out, "o.txt"), "languageId", "plaintext", "isActive", false, "isDirty", false},
			{"path", "b.txt", "absolutePath", h.path("b.txt"), "uri", "file://" + h.path("b.txt"), "languageId", "plaintext", "isActive", true, "isDirty", true},
		}})
	h.run(t, tr)
}
