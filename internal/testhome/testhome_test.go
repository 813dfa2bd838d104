package testhome

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestConfigHomeKeepsGoQuiet: a go command run with ConfigHome as its
// config directory writes nothing there. (With a bare directory the same
// command writes telemetry counters and starts a child that goes on
// writing after it: that case is not run here, since that child would
// write into the test's directory after its removal.)
func TestConfigHomeKeepsGoQuiet(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	dir := ConfigHome(t)
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go env: %v\n%s", err, out)
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && p != filepath.Join(dir, "go", "telemetry", "mode") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 0 {
		t.Errorf("go wrote into the config home: %q", files)
	}
}
