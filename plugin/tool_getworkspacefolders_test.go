package plugin

import (
	"path/filepath"
	"testing"

	"github.com/nvim-claude/nvim-claude/mcp"
)

func TestToolGetWorkspaceFolders(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n"})
	folder := func(p string) obj { return obj{"name", filepath.Base(p), "uri", "file://" + p, "path", p} }
	tr := sendCall(1, "getWorkspaceFolders", obj{}) +
		wantJSONText(1, obj{"success", true, "folders", []obj{folder(h.dir)}, "rootPath", h.dir}) + `
# language servers' folders follow the cwd; one inside the cwd adds nothing
lua: ` + luaCall(fakeLSPClients, []string{h.out, h.path("sub")}) + `
` + sendCall(2, "getWorkspaceFolders", obj{}) +
		wantJSONText(2, obj{"success", true, "folders", []obj{folder(h.dir), folder(h.out)}, "rootPath", h.dir})
	h.run(t, tr)
	// The same list is in the lock file (on Neovim 0.7 this call is what
	// puts a language server's folder there).
	l, err := mcp.ReadLockFile(h.app.server().LockPath())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSONString(l.WorkspaceFolders), mustJSONString([]string{h.dir, h.out}); got != want {
		t.Fatalf("lock workspaceFolders = %s, want %s", got, want)
	}
}
