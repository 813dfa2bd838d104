// Package testhome gives tests the config directories they hand to the
// programs they start (Neovim, make, go) such that nothing the test did not
// start writes into them after it ends. It knows Go's config layout, never
// the plugin; it starts no Neovim, so tests that only need it stay in the
// suite's once-run packages.
package testhome

import (
	"os"
	"path/filepath"
	"testing"
)

// ConfigHome is a fresh directory for XDG_CONFIG_HOME whose Go telemetry
// is off (QuietGo). Use it wherever a test's Neovim or make may run go.
func ConfigHome(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	QuietGo(t, dir)
	return dir
}

// QuietGo turns Go's telemetry off for the config directory dir (what
// `go telemetry off` writes there). Left on, its default, any go command
// run with dir as its config directory — `go env` asked by the install,
// `go build` run by make — writes counters under dir and starts a detached
// child that goes on writing there after go, and the test, have returned:
// the test's TempDir cleanup then races it and fails with "directory not
// empty".
func QuietGo(t testing.TB, dir string) {
	t.Helper()
	tel := filepath.Join(dir, "go", "telemetry")
	if err := os.MkdirAll(tel, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tel, "mode"), []byte("off"), 0o644); err != nil {
		t.Fatal(err)
	}
}
