package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app"
)

// script is scripts/release-build, from this package's directory.
const script = "../../scripts/release-build"

// platforms are the assets a release has, by GOOS/GOARCH.
var platforms = []struct {
	goos, goarch string
	format       string // "elf", "macho", "pe"
	machine      string // as debug/elf, debug/macho or debug/pe prints it
}{
	{"darwin", "amd64", "macho", macho.CpuAmd64.String()},
	{"darwin", "arm64", "macho", macho.CpuArm64.String()},
	{"linux", "amd64", "elf", elf.EM_X86_64.String()},
	{"linux", "arm64", "elf", elf.EM_AARCH64.String()},
	{"windows", "amd64", "pe", fmt.Sprint(pe.IMAGE_FILE_MACHINE_AMD64)},
}

// assetName is the name release-build gives the asset of goos/goarch.
func assetName(version, goos, goarch string) string {
	name := "nvim-claude_" + version + "_" + goos + "_" + goarch
	if goos == "windows" {
		name += ".exe"
	}
	return name
}

// testKey is a throwaway signing key and its allowed_signers file, which
// the script is pointed at with the test-only NVIM_CLAUDE_TEST_RELEASE_KEY
// (the release key's private half is not here).
type testKey struct{ key, signers string }

func newTestKey(t *testing.T) testKey {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen to sign with")
	}
	dir := t.TempDir()
	k := testKey{key: filepath.Join(dir, "key"), signers: filepath.Join(dir, "allowed_signers")}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", k.key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(k.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k.signers, []byte(`release@nvim-claude namespaces="nvim-claude-release" `+string(pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// env signs with k and checks against trusted's allowed_signers.
func (k testKey) env(trusted testKey) []string {
	return []string{"NVIM_CLAUDE_SIGNING_KEY=" + k.key, "NVIM_CLAUDE_TEST_RELEASE_KEY=" + trusted.signers}
}

// runScript runs release-build with args and returns its exit code and
// stderr; env is added to the environment.
func runScript(t *testing.T, ctx context.Context, env []string, args ...string) (int, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("release-build is a POSIX sh script")
	}
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	default:
		t.Fatalf("run %s: %v", script, err)
		return 0, ""
	}
}

// TestReleaseBuild builds the five assets once with the real version and
// checks each is the platform's static, stripped binary built with only
// -trimpath, and that SHA256SUMS lists exactly them, sorted, with their
// hashes.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("the five cross builds take a while; -short skips them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := t.TempDir()
	key := newTestKey(t)
	start := time.Now()
	if code, stderr := runScript(t, ctx, key.env(key), app.Version, out); code != 0 {
		t.Fatalf("release-build %s exited %d:\n%s", app.Version, code, stderr)
	}
	t.Logf("release-build took %s", time.Since(start).Round(time.Millisecond))

	var want []string
	for _, p := range platforms {
		want = append(want, assetName(app.Version, p.goos, p.goarch))
	}
	slices.Sort(want)
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if wantAll := append(slices.Clone(want), "SHA256SUMS", "SHA256SUMS.sig"); !slices.Equal(got, slices.Sorted(slices.Values(wantAll))) {
		t.Errorf("OUTDIR holds %q, want %q", got, wantAll)
	}

	// SHA256SUMS: "<hex>  <name>" a line, as sha256sum prints it, sorted by
	// name, exactly the assets.
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || strings.ContainsAny(name, " *") {
			t.Errorf("SHA256SUMS line %q is not sha256sum's <hex>  <name>", line)
			continue
		}
		listed = append(listed, name)
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Errorf("SHA256SUMS lists %s: %v", name, err)
			continue
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS says %s of %s; its SHA-256 is %x", sum, name, h)
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("SHA256SUMS lists %q, want %q in this order", listed, want)
	}

	// SHA256SUMS.sig: what the plugin checks before it installs anything.
	verify := exec.Command("ssh-keygen", "-Y", "verify", "-f", key.signers, "-I", "release@nvim-claude", "-n", "nvim-claude-release", "-s", filepath.Join(out, "SHA256SUMS.sig"))
	verify.Stdin = bytes.NewReader(sums)
	if b, err := verify.CombinedOutput(); err != nil {
		t.Errorf("SHA256SUMS.sig does not verify: %v\n%s", err, b)
	}

	// Signed with a key that is not the release key: refused, and no list
	// is left (the build cache makes this second run quick).
	t.Run("not the release key", func(t *testing.T) {
		out := t.TempDir()
		code, stderr := runScript(t, ctx, newTestKey(t).env(key), app.Version, out)
		if code != 1 || !strings.Contains(stderr, "does not verify") {
			t.Errorf("exit %d, want 1 and a line saying the signature does not verify:\n%s", code, stderr)
		}
		for _, f := range []string{"SHA256SUMS", "SHA256SUMS.sig", ".SHA256SUMS.tmp", ".SHA256SUMS.tmp.sig"} {
			if _, err := os.Stat(filepath.Join(out, f)); err == nil {
				t.Errorf("%s left in OUTDIR", f)
			}
		}
	})

	for _, p := range platforms {
		name := assetName(app.Version, p.goos, p.goarch)
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(out, name)
			format, machine, symbols, dwarf, err := inspect(path)
			if err != nil {
				t.Fatal(err)
			}
			if format != p.format || machine != p.machine {
				t.Errorf("a %s binary for %s, want %s for %s", format, machine, p.format, p.machine)
			}
			if symbols || dwarf {
				t.Errorf("not stripped: symbol table %v, DWARF %v (want -ldflags \"-s -w\")", symbols, dwarf)
			}
			// With -trimpath the build info leaves out -ldflags; the flags
			// it records are the ones that must be exactly these.
			info, err := buildinfo.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			var flags []string
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
				if strings.HasPrefix(s.Key, "-") {
					flags = append(flags, s.Key+"="+s.Value)
				}
			}
			if want := []string{"-buildmode=exe", "-compiler=gc", "-trimpath=true"}; !slices.Equal(flags, want) {
				t.Errorf("built with %q, want %q", flags, want)
			}
			for k, v := range map[string]string{"CGO_ENABLED": "0", "GOOS": p.goos, "GOARCH": p.goarch} {
				if settings[k] != v {
					t.Errorf("%s=%q, want %q", k, settings[k], v)
				}
			}
		})
	}
}

// inspect reads an executable's format and machine, and whether it has a
// symbol table with main.main in it and DWARF.
func inspect(path string) (format, machine string, symbols, dwarf bool, err error) {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		syms, _ := f.Symbols()
		_, derr := f.DWARF()
		return "elf", f.Machine.String(), slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == "main.main" }), derr == nil, nil
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		has := f.Symtab != nil && slices.ContainsFunc(f.Symtab.Syms, func(s macho.Symbol) bool { return s.Name == "main.main" || s.Name == "_main.main" })
		_, derr := f.DWARF()
		return "macho", f.Cpu.String(), has, derr == nil, nil
	}
	if f, err := pe.Open(path); err == nil {
		defer f.Close()
		has := slices.ContainsFunc(f.Symbols, func(s *pe.Symbol) bool { return s.Name == "main.main" })
		_, derr := f.DWARF()
		return "pe", fmt.Sprint(f.Machine), has, derr == nil, nil
	}
	return "", "", false, false, fmt.Errorf("%s is neither ELF, Mach-O nor PE", path)
}

// TestReleaseBuildRefusesOtherVersions: a VERSION that is not the plugin's
// and the host's is refused in one line, exit 1, and nothing is written:
// OUTDIR is not created, and an existing one stays empty.
func TestReleaseBuildRefusesOtherVersions(t *testing.T) {
	for _, tt := range []struct {
		name      string
		version   string
		outExists bool
	}{
		{"other", "0.0.0-not-this", false},
		{"tag not stripped", "v" + app.Version, false},
		{"longer", app.Version + ".1", true},
		{"outdir exists", "9" + app.Version, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out := filepath.Join(t.TempDir(), "dist")
			if tt.outExists {
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			code, stderr := runScript(t, ctx, nil, tt.version, out)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(stderr, tt.version) || !strings.Contains(stderr, app.Version) {
				t.Errorf("stderr %q: want one line naming %s and %s", stderr, tt.version, app.Version)
			}
			entries, err := os.ReadDir(out)
			switch {
			case !tt.outExists && !errors.Is(err, os.ErrNotExist):
				t.Errorf("OUTDIR was created (%v)", err)
			case tt.outExists && (err != nil || len(entries) != 0):
				t.Errorf("OUTDIR holds %v (%v), want nothing", entries, err)
			}
		})
	}
}

// TestReleaseBuildRefusesUnsigned: without a signing key the script refuses
// in one line before it builds anything: the plugin installs no unsigned
// release, so there is no point making one.
func TestReleaseBuildRefusesUnsigned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, env := range [][]string{{"NVIM_CLAUDE_SIGNING_KEY="}, {"NVIM_CLAUDE_SIGNING_KEY=" + filepath.Join(t.TempDir(), "none")}} {
		out := filepath.Join(t.TempDir(), "dist")
		code, stderr := runScript(t, ctx, env, app.Version, out)
		if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "NVIM_CLAUDE_SIGNING_KEY") {
			t.Errorf("%v: exit %d, want 1 and one line naming NVIM_CLAUDE_SIGNING_KEY: %q", env, code, stderr)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("OUTDIR was created (%v)", err)
		}
	}
}
