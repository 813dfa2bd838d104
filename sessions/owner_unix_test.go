//go:build unix

package sessions

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestHostAliveZombie: a host killed with its Neovim and not yet reaped is
// a zombie: gone, for the sweep.
func TestHostAliveZombie(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run true:", err)
	}
	defer func() { _ = cmd.Wait() }()
	if !hostAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	for deadline := time.Now().Add(10 * time.Second); hostAlive(cmd.Process.Pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child is still alive")
		}
	}
}
