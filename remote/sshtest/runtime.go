package sshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Runtime is a stand-in for docker or podman, for tests on machines
// without a container daemon: its `exec [-i] [-t] [-w dir] [-e K=V]… [--user
// u] -- name argv…` (the command line remote.Target builds, and the only
// one it understands) runs argv in a mount namespace of its own in which
// Far shows Local (a bind mount), as a container with the project mounted
// would — on this machine's network, as a container with host networking.
type Runtime struct {
	Bin   string // the stand-in's path: remote.Target.Bin
	Name  string // the one container it knows
	Far   string
	Local string
	Log   string // each call's arguments, one line each
}

// StartRuntime makes the stand-in for t. far must not exist yet (it is
// created as an empty mount point). It needs root (unshare -m).
func StartRuntime(t testing.TB, local, far string) *Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshtest: the stand-in runtime needs root (unshare -m)")
	}
	for _, p := range []string{"unshare", "bash", "mount"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("sshtest: no %s", p)
		}
	}
	if err := os.MkdirAll(far, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &Runtime{Bin: filepath.Join(dir, "docker"), Name: "app-1", Far: far, Local: local, Log: filepath.Join(dir, "calls")}
	script := `#!/bin/bash
printf '%s\n' "$*" >> ` + shq(r.Log) + `
[ "$1" = exec ] || { echo "stand-in runtime: only exec" >&2; exit 125; }
shift
dir=/; envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -i|-t) shift;;
    -w) dir=$2; shift 2;;
    -e) envs+=("$2"); shift 2;;
    --user) shift 2;;
    --) shift; break;;
    *) echo "stand-in runtime: unknown option $1" >&2; exit 125;;
  esac
done
[ "$1" = ` + shq(r.Name) + ` ] || { echo "Error response from daemon: No such container: $1" >&2; exit 1; }
shift
exec unshare -m --propagation private bash -c 'mount --bind "$1" "$2" && cd "$3" && shift 3 && exec env "$@"' enter ` +
		shq(local) + " " + shq(far) + ` "$dir" "${envs[@]}" "$@"
`
	if err := os.WriteFile(r.Bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// Calls are the stand-in's calls so far, one line of arguments each.
func (r *Runtime) Calls(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(r.Log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
