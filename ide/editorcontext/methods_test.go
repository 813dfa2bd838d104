package editorcontext

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
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
	ans := func(path, content string, unsaved bool) testkit.Obj {
		return testkit.Obj{"path", path, "content", content, "unsaved", unsaved}
	}
	tr := testkit.SendMethod(1, "readFile", testkit.Obj{"path", "a.txt"}) +
		testkit.WantResult(1, ans("a.txt", "a\n", false)) +
		testkit.SendMethod(2, "readFile", testkit.Obj{"path", h.path("sub/b.txt")}) +
		testkit.WantResult(2, ans("sub/b.txt", "b é😀\n", false)) +
		testkit.SendMethod(3, "readFile", testkit.Obj{"path", "in.txt"}) +
		testkit.WantResult(3, ans("in.txt", "a\n", false)) + `
# a buffer with unsaved changes: its text
lua: vim.cmd("edit mod.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "in the buffer" })
` + testkit.SendMethod(4, "readFile", testkit.Obj{"path", "mod.txt"}) +
		testkit.WantResult(4, ans("mod.txt", "in the buffer\n", true)) + `
# confined to the workspace
` + testkit.SendMethod(5, "readFile", testkit.Obj{"path", "../x.txt"}) +
		testkit.WantError(5, -32602, `Invalid params: "../x.txt": paths with ".." are not allowed`) +
		testkit.SendMethod(6, "readFile", testkit.Obj{"path", "sub/../a.txt"}) +
		testkit.WantError(6, -32602, `Invalid params: "sub/../a.txt": paths with ".." are not allowed`) +
		testkit.SendMethod(7, "readFile", testkit.Obj{"path", filepath.Join(h.out, "o.txt")}) +
		testkit.WantError(7, -32602, `Invalid params: "`+filepath.Join(h.out, "o.txt")+`" is outside the workspace folders (`+h.dir+`)`) +
		testkit.SendMethod(8, "readFile", testkit.Obj{"path", "out.txt"}) +
		testkit.WantError(8, -32602, `Invalid params: "out.txt" resolves to `+filepath.Join(h.out, "o.txt")+`, outside the workspace folders (a symlink leads out)`) +
		testkit.SendMethod(9, "readFile", testkit.Obj{"path", "outdir/o.txt"}) +
		testkit.WantError(9, -32602, `Invalid params: "outdir/o.txt" resolves to `+filepath.Join(h.out, "o.txt")+`, outside the workspace folders (a symlink leads out)`) + `
# the deny-list, and files that are not text
` + testkit.SendMethod(10, "readFile", testkit.Obj{"path", ".env"}) +
		testkit.WantError(10, -32602, `Invalid params: .env matches the deny-list (security.deny): its contents never leave Neovim`) +
		testkit.SendMethod(11, "readFile", testkit.Obj{"path", "bin.dat"}) +
		testkit.WantError(11, -32602, `Invalid params: bin.dat: not a text file (binary, or not UTF-8)`) +
		testkit.SendMethod(12, "readFile", testkit.Obj{"path", "none.txt"}) +
		testkit.WantError(12, -32602, `Invalid params: none.txt: no such file`) +
		testkit.SendMethod(13, "readFile", testkit.Obj{"path", "sub"}) +
		testkit.WantError(13, -32602, `Invalid params: sub: is a directory`) +
		testkit.SendMethod(14, "readFile", testkit.Obj{}) +
		testkit.WantError(14, -32602, `Invalid params: path is required`) +
		testkit.SendMethod(15, "readFile", testkit.Obj{"path", 1}) +
		testkit.WantError(15, -32602, `Invalid params: path must be a string`)
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
	ok := func(path string, buffer bool) testkit.Obj {
		return testkit.Obj{"success", true, "path", path, "throughBuffer", buffer}
	}
	tr := `# files not open: written atomically, the mode kept, missing directories made
` + testkit.SendMethod(1, "writeFile", testkit.Obj{"path", "a.txt", "content", "new a\n"}) +
		testkit.WantResult(1, ok("a.txt", false)) +
		testkit.SendMethod(2, "writeFile", testkit.Obj{"path", "private.txt", "content", "secret"}) +
		testkit.WantResult(2, ok("private.txt", false)) +
		testkit.SendMethod(3, "writeFile", testkit.Obj{"path", "deep/er/n.txt", "content", ""}) +
		testkit.WantResult(3, ok("deep/er/n.txt", false)) + `
# a symlink inside the workspace: the file it leads to is written, the link stays
` + testkit.SendMethod(4, "writeFile", testkit.Obj{"path", "link.txt", "content", "via link\n"}) +
		testkit.WantResult(4, ok("link.txt", false)) + `
# an open file: through its buffer (one undo step), then :write
lua: vim.cmd("edit open.txt")
` + testkit.SendMethod(5, "writeFile", testkit.Obj{"path", "open.txt", "content", "one\nTWO\nthree\n"}) +
		testkit.WantResult(5, ok("open.txt", true)) + `
check: table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "|") == "one|TWO|three" and not vim.bo.modified
lua: vim.cmd("undo")
check: table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "|") == "one|two"
# refused
` + testkit.SendMethod(6, "writeFile", testkit.Obj{"path", "dangling.txt", "content", "x"}) +
		testkit.WantError(6, -32602, `Invalid params: "dangling.txt" resolves to `+filepath.Join(h.out, "new.txt")+`, outside the workspace folders (a symlink leads out)`) +
		testkit.SendMethod(7, "writeFile", testkit.Obj{"path", "/etc/passwd", "content", "x"}) +
		testkit.WantError(7, -32602, `Invalid params: "/etc/passwd" is outside the workspace folders (`+h.dir+`)`) +
		testkit.SendMethod(8, "writeFile", testkit.Obj{"path", "a.txt"}) +
		testkit.WantError(8, -32602, `Invalid params: content is required`) +
		testkit.SendMethod(9, "writeFile", testkit.Obj{"path", "deep", "content", "x"}) +
		testkit.WantError(9, -32602, `Invalid params: deep is not a regular file`)
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
		tr := testkit.SendMethod(1, "listFiles", testkit.Obj{}) +
			testkit.WantResult(1, testkit.Obj{"files", []string{".hidden/e.txt", "a.go", "b.txt", "build/out.bin", "sub/c.go", "sub/deep/d.go"}, "truncated", false}) +
			testkit.SendMethod(2, "listFiles", testkit.Obj{"pattern", "*.go"}) +
			testkit.WantResult(2, testkit.Obj{"files", []string{"a.go", "sub/c.go", "sub/deep/d.go"}, "truncated", false}) +
			testkit.SendMethod(3, "listFiles", testkit.Obj{"pattern", "sub/**"}) +
			testkit.WantResult(3, testkit.Obj{"files", []string{"sub/c.go", "sub/deep/d.go"}, "truncated", false}) +
			testkit.SendMethod(4, "listFiles", testkit.Obj{"pattern", "sub/*.go"}) +
			testkit.WantResult(4, testkit.Obj{"files", []string{"sub/c.go"}, "truncated", false}) +
			testkit.SendMethod(5, "listFiles", testkit.Obj{"pattern", "*.{txt,bin}"}) +
			testkit.WantResult(5, testkit.Obj{"files", []string{".hidden/e.txt", "b.txt", "build/out.bin"}, "truncated", false}) +
			testkit.SendMethod(6, "listFiles", testkit.Obj{"pattern", "[ab].*"}) +
			testkit.WantResult(6, testkit.Obj{"files", []string{"a.go", "b.txt"}, "truncated", false}) +
			testkit.SendMethod(7, "listFiles", testkit.Obj{"pattern", "[oops"}) +
			testkit.WantError(7, -32602, `Invalid params: pattern: unclosed [ in "[oops"`)
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
		tr := testkit.SendMethod(1, "listFiles", testkit.Obj{}) +
			testkit.WantResult(1, testkit.Obj{"files", []string{".gitignore", ".hidden/e.txt", "a.go", "b.txt", "node_modules/m/index.js", "sub/c.go", "sub/deep/d.go"}, "truncated", false})
		h.run(t, tr)
	})
}

func TestMethodWorkspaceInfoAndFiles(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.go": "package a\n", "b.txt": "one\nhé😀x\n", "{{out}}/o.txt": "o\n"})
	tr := testkit.SendMethod(1, "getWorkspaceInfo", testkit.Obj{}) +
		testkit.LikeText(testkit.WantResult(1, testkit.Obj{"name", filepath.Base(h.dir), "path", h.dir, "folders", []testkit.Obj{{"name", filepath.Base(h.dir), "uri", "file://" + h.dir, "path", h.dir}},
			"editor", "Neovim", "editorVersion", "(*)", "pluginVersion", "test"})) +
		testkit.SendMethod(2, "getCurrentFile", testkit.Obj{}) +
		testkit.WantResult(2, testkit.Obj{"path", nil, "message", "No file is open in an editor window"}) +
		testkit.SendMethod(3, "getOpenFiles", testkit.Obj{}) +
		testkit.WantResult(3, testkit.Obj{"files", []testkit.Obj{}}) + `
lua: vim.cmd("edit a.go | edit ` + filepath.Join(h.out, "o.txt") + ` | edit b.txt") vim.api.nvim_win_set_cursor(0, { 2, 7 }) vim.cmd("normal! ix")
` + testkit.SendMethod(4, "getCurrentFile", testkit.Obj{}) +
		testkit.WantResult(4, testkit.Obj{"path", "b.txt", "absolutePath", h.path("b.txt"), "uri", "file://" + h.path("b.txt"), "languageId", "plaintext",
			"isDirty", true, "lineCount", 2, "cursor", testkit.Obj{"line", 1, "character", 4}}) +
		testkit.SendMethod(5, "getOpenFiles", testkit.Obj{}) +
		testkit.WantResult(5, testkit.Obj{"files", []testkit.Obj{
			{"path", "a.go", "absolutePath", h.path("a.go"), "uri", "file://" + h.path("a.go"), "languageId", "go", "isActive", false, "isDirty", false},
			{"path", filepath.Join(h.out, "o.txt"), "absolutePath", filepath.Join(h.out, "o.txt"), "uri", "file://" + filepath.Join(h.out, "o.txt"), "languageId", "plaintext", "isActive", false, "isDirty", false},
			{"path", "b.txt", "absolutePath", h.path("b.txt"), "uri", "file://" + h.path("b.txt"), "languageId", "plaintext", "isActive", true, "isDirty", true},
		}})
	h.run(t, tr)
}
