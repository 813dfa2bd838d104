//go:build unix

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// The release asset this machine downloads (the tests run on Linux/macOS
// amd64/arm64; lua/claude/install.lua names them the same way).
func assetName(version string) string {
	return fmt.Sprintf("nvim-claude_%s_%s_%s", version, runtime.GOOS, runtime.GOARCH)
}

// pluginCopy is the plugin as a fresh clone has it (no bin/, no doc/tags),
// in a directory of its own, so installing into it touches nothing of the
// checkout's.
func pluginCopy(t *testing.T) string {
	t.Helper()
	root := nvimtest.RepoRoot(t)
	dst := filepath.Join(t.TempDir(), "nvim-claude")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"doc", "lua", "plugin", "scripts", "go.mod", "go.sum", "Makefile", "build.lua"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(root, p), filepath.Join(dst, p)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", p, err, out)
		}
	}
	_ = os.Remove(filepath.Join(dst, "doc", "tags"))
	return dst
}

// release is a fake release: files by name under one URL path.
type release map[string][]byte

// serveReleases serves each release under /<name>/ and returns the base URL.
func serveReleases(t *testing.T, rels map[string]release) string {
	t.Helper()
	mux := http.NewServeMux()
	for name, files := range rels {
		for file, body := range files {
			body := body
			mux.HandleFunc("/"+name+"/"+file, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
		}
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func sumsLine(name string, body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:]) + "  " + name + "\n"
}

// rtpPrepend puts $NVIM_CLAUDE_ROOT first in 'runtimepath' whatever
// characters its path has (a test's temporary directory can hold a comma).
const rtpPrepend = `lua vim.opt.runtimepath:prepend((vim.env.NVIM_CLAUDE_ROOT:gsub(",", "\\,")))`

// installRun runs require("claude.install").main(mode) in a headless Neovim
// on the plugin copy at root: what `make` does without Go.
func installRun(t *testing.T, root, mode string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", rtpPrepend,
		"-c", fmt.Sprintf("lua local ok, e = pcall(function() require('claude.install').main(%q) end) if not ok then io.stdout:write(tostring(e)) vim.cmd('cquit 2') end", mode))
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// binFiles lists bin/ of root (nil when there is none).
func binFiles(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "bin"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestInstallWithoutGo is issue 17's prebuilt path: with no usable Go, the
// install downloads the asset of the plugin's version from the release
// (here a local server), installs it only when its SHA-256 matches
// SHA256SUMS and it runs as this version, and otherwise installs nothing,
// leaves nothing behind and names both ways out.
func TestInstallWithoutGo(t *testing.T) {
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	version := pluginVersion(t)
	asset := assetName(version)
	other := []byte("#!/bin/sh\necho 'nvim-claude 9.9.9'\n")
	base := serveReleases(t, map[string]release{
		"v" + version: {asset: host, "SHA256SUMS": []byte(sumsLine("nvim-claude_"+version+"_windows_amd64.exe", []byte("x")) + sumsLine(asset, host))},
		"tampered":    {asset: host, "SHA256SUMS": []byte(sumsLine(asset, append([]byte("x"), host...)))},
		"no-asset":    {"SHA256SUMS": []byte(sumsLine(asset, host))},
		"not-listed":  {asset: host, "SHA256SUMS": []byte(sumsLine("something_else", host))},
		"other":       {asset: other, "SHA256SUMS": []byte(sumsLine(asset, other))},
		"two-sums":    {asset: host, "SHA256SUMS": []byte(sumsLine(asset, []byte("x")) + sumsLine(asset, host))},
	})
	// A port nothing listens on: no network.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/v" + version
	_ = l.Close()

	oldGo := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(oldGo, []byte("#!/bin/sh\n[ \"$1 $2\" = 'env GOVERSION' ] && echo go1.19.8\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noGo := "GO=" + filepath.Join(t.TempDir(), "no-such-go")

	tests := []struct {
		name      string
		url       string
		goEnv     string
		installed bool
		want      []string
	}{
		{"good asset and no Go", base + "/v{version}", noGo, true,
			[]string{"no Go on PATH", "downloaded " + asset, "SHA-256 " + hex.EncodeToString(sum(host)) + " matches SHA256SUMS", "installed"}},
		{"good asset and Go too old", base + "/v" + version, "GO=" + oldGo, true,
			[]string{"is Go 1.19.8, older than the 1.25", "downloaded " + asset, "matches SHA256SUMS"}},
		{"wrong checksum", base + "/tampered", noGo, false,
			[]string{"refused " + base + "/tampered/" + asset, "its SHA-256 is " + hex.EncodeToString(sum(host)), "Nothing was installed"}},
		{"missing asset", base + "/no-asset", noGo, false,
			[]string{"answered HTTP 404", "no release asset " + asset, "Two ways out", "https://go.dev/dl/", "bin/nvim-claude"}},
		{"no such release", base + "/v0.0.0-none", noGo, false,
			[]string{"SHA256SUMS answered HTTP 404", "no release of version " + version, "Two ways out"}},
		{"asset not in SHA256SUMS", base + "/not-listed", noGo, false,
			[]string{"lists no checksum for " + asset, "was not downloaded"}},
		{"asset of another version", base + "/other", noGo, false,
			[]string{"refused", "it is version 9.9.9, not " + version, "Nothing was installed"}},
		{"two checksums for the asset", base + "/two-sums", noGo, false,
			[]string{"lists two different checksums for " + asset, "nothing was downloaded"}},
		{"no network", closed, noGo, false,
			[]string{"could not download " + closed + "/SHA256SUMS", "Two ways out", "install Go 1.25 or newer", "run `make` in", "download " + asset + " and SHA256SUMS from " + closed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := pluginCopy(t)
			bin := filepath.Join(root, "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			// A part file of an install that was killed (a pid that is not
			// alive) is swept; a host already there stays unless replaced.
			stale := filepath.Join(bin, ".nvim-claude.part.2147480000.asset")
			if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
			old := []byte("#!/bin/sh\necho 'nvim-claude 0.0.1'\n")
			if err := os.WriteFile(filepath.Join(bin, "nvim-claude"), old, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := installRun(t, root, "auto", tt.goEnv, "NVIM_CLAUDE_RELEASE_URL="+tt.url)
			if (err == nil) != tt.installed {
				t.Errorf("exit: %v, want success %v; output:\n%s", err, tt.installed, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if got := binFiles(t, root); len(got) != 1 || got[0] != "nvim-claude" {
				t.Errorf("bin/ holds %v, want only nvim-claude (no part files left)", got)
			}
			got, _ := os.ReadFile(filepath.Join(bin, "nvim-claude"))
			if tt.installed {
				if string(got) != string(host) {
					t.Errorf("bin/nvim-claude is not the asset (%d bytes)", len(got))
				}
				v, err := exec.Command(filepath.Join(bin, "nvim-claude"), "-version").CombinedOutput()
				if err != nil || !strings.Contains(string(v), version) {
					t.Errorf("installed host -version: %v %s", err, v)
				}
			} else if string(got) != string(old) {
				t.Errorf("a failed install changed the host that was there")
			}
		})
	}
}

// TestMakeWithoutGoDownloads: `make` in a fresh clone on a machine without
// Go says so in one line, downloads the prebuilt host with Neovim, and
// writes doc/tags; with no Neovim either, it says what to install.
func TestMakeWithoutGoDownloads(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	version := pluginVersion(t)
	asset := assetName(version)
	base := serveReleases(t, map[string]release{"v" + version: {asset: host, "SHA256SUMS": []byte(sumsLine(asset, host))}})
	noGo := "GO=" + filepath.Join(t.TempDir(), "no-such-go")

	root := pluginCopy(t)
	cmd := exec.Command("make", "-C", root, "build")
	cmd.Env = append(os.Environ(), noGo, "NVIM_CLAUDE_NVIM="+nvimtest.Bin(t), "NVIM=/tmp/some-neovim-socket", "NVIM_CLAUDE_RELEASE_URL="+base+"/v{version}", "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	for _, w := range []string{"Go 1.25 or newer is needed", "downloading the prebuilt host instead", "SHA-256", "installed"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("make's output lacks %q:\n%s", w, out)
		}
	}
	for _, f := range []string{"bin/nvim-claude", "doc/tags"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("after make: %v", err)
		}
	}

	t.Run("no Go and no Neovim", func(t *testing.T) {
		for _, d := range []string{"/bin", "/usr/bin"} {
			if _, err := os.Stat(filepath.Join(d, "nvim")); err == nil {
				t.Skipf("%s/nvim exists: no PATH without Neovim to try", d)
			}
		}
		root := pluginCopy(t)
		cmd := exec.Command("make", "-C", root, "build")
		cmd.Env = append(os.Environ(), noGo, "NVIM_CLAUDE_NVIM=", "PATH="+filepath.Dir(mustLook(t, "make"))+":/usr/bin:/bin", "MAKEFLAGS=")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no Neovim on PATH either") {
			t.Errorf("make without Go or Neovim: %v\n%s", err, out)
		}
	})
}

// TestClaudeInstallCommand: :ClaudeInstall in a running Neovim installs in
// the background (Neovim goes on) and says what it did.
func TestClaudeInstallCommand(t *testing.T) {
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	version := pluginVersion(t)
	asset := assetName(version)
	base := serveReleases(t, map[string]release{"r": {asset: host, "SHA256SUMS": []byte(sumsLine(asset, host))}})
	root := pluginCopy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", rtpPrepend, "-c", "runtime plugin/claude.lua",
		"-c", `lua _G.notes = {} vim.notify = function(m, l) table.insert(_G.notes, { msg = m, level = l }) end`,
		"-c", fmt.Sprintf(`lua require("claude").setup({ bin = %q })`, filepath.Join(root, "elsewhere", "nvim-claude")),
		"-c", "ClaudeInstall download",
		"-c", `lua _G.returned = #_G.notes`,
		"-c", "ClaudeInstall download",
		"-c", `lua vim.wait(60000, function() return #_G.notes >= 4 end, 20) io.stdout:write(vim.json.encode({ returned = _G.returned, notes = _G.notes }))`,
		"-c", "qa!")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_RELEASE_URL="+base+"/r", "NVIM_CLAUDE_ROOT="+root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	var res struct {
		Returned int    `json:"returned"`
		Notes    []note `json:"notes"`
	}
	if err := json.Unmarshal(out[strings.IndexByte(string(out), '{'):], &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// installing…, installing…, "already running" (at once), then the outcome
	if res.Returned != 1 || len(res.Notes) != 4 {
		t.Fatalf("want the command to return after its 'installing' note, a second to be refused, one outcome: %+v", res)
	}
	if n := res.Notes[2]; n.Level != 4 || !strings.Contains(n.Msg, "already running") {
		t.Errorf("a second install while one runs: %+v", n)
	}
	if n := res.Notes[3]; n.Level != 2 || !strings.Contains(n.Msg, "SHA-256") || !strings.Contains(n.Msg, "elsewhere/nvim-claude") {
		t.Errorf("outcome: %+v", n)
	}
	// where the bin option points, the host the plugin runs; and :help works
	for _, f := range []string{"elsewhere/nvim-claude", "doc/tags"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "nvim-claude")); err == nil {
		t.Error("installed into bin/ although the bin option names another path")
	}
}

// TestAssetNames pins the asset names for each platform the release builds
// (scripts/release-build names them the same way) and the ones it does not.
func TestAssetNames(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	tests := []struct{ sys, machine, want string }{
		{"Linux", "x86_64", "nvim-claude_1.2.3_linux_amd64"},
		{"Linux", "aarch64", "nvim-claude_1.2.3_linux_arm64"},
		{"Darwin", "arm64", "nvim-claude_1.2.3_darwin_arm64"},
		{"Darwin", "x86_64", "nvim-claude_1.2.3_darwin_amd64"},
		{"Windows_NT", "x86_64", "nvim-claude_1.2.3_windows_amd64.exe"},
		{"Linux", "riscv64", "there is no prebuilt host for Linux/riscv64"},
		{"Windows_NT", "aarch64", "there is no prebuilt host for Windows_NT/aarch64"},
		{"FreeBSD", "amd64", "there is no prebuilt host for FreeBSD/amd64"},
	}
	for _, tt := range tests {
		var got string
		n.Eval(t, fmt.Sprintf(`local a, why = require("claude.install").asset("1.2.3", { sysname = %q, machine = %q }) return a or why`, tt.sys, tt.machine), &got)
		if got != tt.want {
			t.Errorf("%s/%s: %q, want %q", tt.sys, tt.machine, got, tt.want)
		}
	}
}

func sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustLook(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pluginVersion is lua/claude/version.lua's version.
func pluginVersion(t *testing.T) string {
	t.Helper()
	src := readFile(t, filepath.Join(nvimtest.RepoRoot(t), "lua", "claude", "version.lua"))
	i := strings.Index(src, "return \"")
	if i < 0 {
		t.Fatalf("version.lua: no `return \"…\"`:\n%s", src)
	}
	v, _, _ := strings.Cut(src[i+len("return \""):], "\"")
	return v
}

// TestInstallBuildsWithGo: with a Go new enough on PATH the install builds
// the host (here into a scratch path, not the checkout's bin/) and checks
// it runs as this version; with a Go too old, `build` says what to do.
func TestInstallBuildsWithGo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	root := nvimtest.RepoRoot(t)
	oldGo := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(oldGo, []byte("#!/bin/sh\n[ \"$1 $2\" = 'env GOVERSION' ] && echo go1.19.8\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, goPath string
		ok           bool
		want         []string
	}{
		{"Go on PATH", goBin, true, []string{"nvim-claude: built ", "with Go "}},
		{"Go too old", oldGo, false, []string{"is Go 1.19.8; the host needs Go 1.25 or newer", "bookworm-backports", ":ClaudeInstall download"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "nvim-claude")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", rtpPrepend,
				"-c", fmt.Sprintf(`lua local ok, msg = require("claude.install").run_sync({ mode = "build", root = %q, dest = %q }) io.stdout:write(tostring(ok), " ", msg) vim.cmd("qa!")`, root, dest))
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root, "GO="+tt.goPath)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("nvim: %v\n%s", err, out)
			}
			if strings.HasPrefix(string(out), "true") != tt.ok {
				t.Errorf("ok = %v, want %v: %s", !tt.ok, tt.ok, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q: %s", w, out)
				}
			}
			v, err := exec.Command(dest, "-version").CombinedOutput()
			if tt.ok && (err != nil || !strings.Contains(string(v), pluginVersion(t))) {
				t.Errorf("built host -version: %v %s", err, v)
			}
			if !tt.ok && err == nil {
				t.Errorf("a host was installed by a failed build")
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".nvim-claude.part.*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
