//go:build unix

package e2e

import (
	"context"
	"crypto/sha256"
	"debug/elf"
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

	"github.com/nvim-claude/nvim-claude/internal/testhome"
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

// signer is a throwaway release key: the tests sign their fake releases
// with it and point the install at its allowed_signers file through the
// test-only NVIM_CLAUDE_TEST_RELEASE_KEY (honoured only for a loopback URL
// with NVIM_CLAUDE_TEST_LOOPBACK=1). The project's key is not used: its
// private half is not here.
type signer struct {
	dir     string
	key     string // the private key file
	signers string // its allowed_signers file
}

// Principal and namespace of a release signature (lua/claude/install.lua).
const (
	releaseSigner    = "release@nvim-claude"
	releaseNamespace = "nvim-claude-release"
)

func newSigner(t *testing.T) *signer {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen: the install checks signatures with it")
	}
	s := &signer{dir: t.TempDir()}
	s.key = filepath.Join(s.dir, "key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", s.key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(s.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	s.signers = filepath.Join(s.dir, "allowed_signers")
	line := fmt.Sprintf("%s namespaces=%q %s", releaseSigner, releaseNamespace, pub)
	if err := os.WriteFile(s.signers, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// sign is the SHA256SUMS.sig of body, as the release workflow makes it
// (namespace: the release's, unless another is given).
func (s *signer) sign(t *testing.T, body []byte, namespace ...string) []byte {
	t.Helper()
	ns := releaseNamespace
	if len(namespace) > 0 {
		ns = namespace[0]
	}
	f, err := os.CreateTemp(s.dir, "sums")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-q", "-f", s.key, "-n", ns, f.Name()).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	sig, err := os.ReadFile(f.Name() + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// signed is a release of the given files whose SHA256SUMS (sums) is
// signed by s.
func (s *signer) signed(t *testing.T, sums string, files release) release {
	t.Helper()
	rel := release{"SHA256SUMS": []byte(sums), "SHA256SUMS.sig": s.sign(t, []byte(sums))}
	for k, v := range files {
		rel[k] = v
	}
	return rel
}

// env is what lets the install download from a loopback test server and
// check against s's key.
func (s *signer) env() []string {
	return []string{"NVIM_CLAUDE_TEST_LOOPBACK=1", "NVIM_CLAUDE_TEST_RELEASE_KEY=" + s.signers}
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
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root)
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

// TestInstallWithoutGo is the prebuilt path: with no usable Go, the install
// downloads the asset of the plugin's version from the release (here a
// local server), installs it only when the release's SHA256SUMS carries a
// good signature by the release key, the asset's SHA-256 matches it and it
// runs as this version, and otherwise installs nothing, leaves nothing
// behind and says why. The attacks on the origin — a server that serves
// its own SHA256SUMS, unsigned, signed by another key, with a signature of
// something else, over plain http — each install nothing.
func TestInstallWithoutGo(t *testing.T) {
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	version := pluginVersion(t)
	asset := assetName(version)
	other := []byte("#!/bin/sh\necho 'nvim-claude 9.9.9'\n")
	key, stranger := newSigner(t), newSigner(t)
	good := sumsLine("nvim-claude_"+version+"_windows_amd64.exe", []byte("x")) + sumsLine(asset, host)
	base := serveReleases(t, map[string]release{
		"v" + version: key.signed(t, good, release{asset: host}),
		"tampered":    key.signed(t, sumsLine(asset, append([]byte("x"), host...)), release{asset: host}),
		"no-asset":    key.signed(t, sumsLine(asset, host), nil),
		"not-listed":  key.signed(t, sumsLine("something_else", host), release{asset: host}),
		"other":       key.signed(t, sumsLine(asset, other), release{asset: other}),
		"two-sums":    key.signed(t, sumsLine(asset, []byte("x"))+sumsLine(asset, host), release{asset: host}),
		// the attacks on the origin: each serves the right binary with a
		// SHA256SUMS that matches it
		"unsigned":     {asset: host, "SHA256SUMS": []byte(good)},
		"stranger":     stranger.signed(t, good, release{asset: host}),
		"other-file":   {asset: host, "SHA256SUMS": []byte(good), "SHA256SUMS.sig": key.sign(t, []byte(sumsLine(asset, other)))},
		"other-use":    {asset: host, "SHA256SUMS": []byte(good), "SHA256SUMS.sig": key.sign(t, []byte(good), "git")},
		"garbage-sig":  {asset: host, "SHA256SUMS": []byte(good), "SHA256SUMS.sig": []byte("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")},
		"tampered-sum": {asset: host, "SHA256SUMS": []byte(good + "\n"), "SHA256SUMS.sig": key.sign(t, []byte(good))},
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
	notSigned := "does not verify against the release key in"
	localhost := strings.Replace(base, "127.0.0.1", "localhost", 1)

	tests := []struct {
		name      string
		url       string
		goEnv     string
		env       []string // instead of key.env()
		installed bool
		want      []string
	}{
		{"good asset and no Go", base + "/v{version}", noGo, nil, true,
			[]string{"no Go on PATH", "downloaded " + asset, "SHA256SUMS signed by the release key", "SHA-256 " + hex.EncodeToString(sum(host)) + " matches SHA256SUMS", "installed"}},
		{"good asset and Go too old", base + "/v" + version, "GO=" + oldGo, nil, true,
			[]string{"is Go 1.19.8, older than the 1.25", "downloaded " + asset, "matches SHA256SUMS"}},
		{"localhost", localhost + "/v" + version, noGo, nil, true, []string{"downloaded " + asset}},
		{"wrong checksum", base + "/tampered", noGo, nil, false,
			[]string{"refused " + base + "/tampered/" + asset, "its SHA-256 is " + hex.EncodeToString(sum(host)), "Nothing was installed"}},
		{"missing asset", base + "/no-asset", noGo, nil, false,
			[]string{"answered HTTP 404", "no release asset " + asset, "Two ways out", "https://go.dev/dl/", "bin/nvim-claude"}},
		{"no such release", base + "/v0.0.0-none", noGo, nil, false,
			[]string{"SHA256SUMS answered HTTP 404", "no release of version " + version, "Two ways out"}},
		{"asset not in SHA256SUMS", base + "/not-listed", noGo, nil, false,
			[]string{"lists no checksum for " + asset, "was not downloaded"}},
		{"asset of another version", base + "/other", noGo, nil, false,
			[]string{"refused", "it is version 9.9.9, not " + version, "Nothing was installed"}},
		{"two checksums for the asset", base + "/two-sums", noGo, nil, false,
			[]string{"lists two different checksums for " + asset, "nothing was downloaded"}},
		{"no network", closed, noGo, nil, false,
			[]string{"could not download " + closed + "/SHA256SUMS", "Two ways out", "install Go 1.25 or newer", "run `make` in", "download " + asset + ", SHA256SUMS and SHA256SUMS.sig from " + closed}},
		{"unsigned list", base + "/unsigned", noGo, nil, false,
			[]string{"refused the release at " + base + "/unsigned", "SHA256SUMS is not signed", "SHA256SUMS.sig answered HTTP 404", "Nothing was installed"}},
		{"signed by another key", base + "/stranger", noGo, nil, false, []string{"refused the release", notSigned, "Nothing was installed"}},
		{"signature of another list", base + "/other-file", noGo, nil, false, []string{"refused the release", notSigned}},
		{"signature made for another use", base + "/other-use", noGo, nil, false, []string{"refused the release", notSigned}},
		{"not a signature", base + "/garbage-sig", noGo, nil, false, []string{"refused the release", notSigned}},
		{"list changed after signing", base + "/tampered-sum", noGo, nil, false, []string{"refused the release", notSigned}},
		{"test server against the project's key", base + "/v" + version, noGo, []string{"NVIM_CLAUDE_TEST_LOOPBACK=1"}, false,
			[]string{"refused the release", notSigned, "keys/release.allowed_signers"}},
		{"http without the test switch", base + "/v" + version, noGo, []string{"NVIM_CLAUDE_TEST_RELEASE_KEY=" + key.signers}, false,
			[]string{"refused to download from " + base + "/v" + version, "downloads are https only", "Nothing was installed"}},
		{"http elsewhere", "http://example.invalid/v" + version, noGo, nil, false,
			[]string{"refused to download from http://example.invalid/", "https only"}},
		{"loopback in the user part", "http://127.0.0.1@example.invalid/v" + version, noGo, nil, false, []string{"https only"}},
		{"ftp", "ftp://127.0.0.1/v" + version, noGo, nil, false, []string{"https only"}},
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
			env := key.env()
			if tt.env != nil {
				env = tt.env
			}
			out, err := installRun(t, root, "auto", append(env, tt.goEnv, "NVIM_CLAUDE_RELEASE_URL="+tt.url)...)
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
	key, stranger := newSigner(t), newSigner(t)
	sums := sumsLine(asset, host)
	base := serveReleases(t, map[string]release{
		"v" + version: key.signed(t, sums, release{asset: host}),
		"stranger":    stranger.signed(t, sums, release{asset: host}),
		"unsigned":    {asset: host, "SHA256SUMS": []byte(sums)},
	})
	noGo := "GO=" + filepath.Join(t.TempDir(), "no-such-go")

	makeBuild := func(t *testing.T, root, url string) (string, error) {
		t.Helper()
		cmd := exec.Command("make", "-C", root, "build")
		cmd.Env = append(os.Environ(), noGo, "NVIM_CLAUDE_NVIM="+nvimtest.Bin(t), "NVIM=/tmp/some-neovim-socket", "NVIM_CLAUDE_RELEASE_URL="+url, "MAKEFLAGS=")
		cmd.Env = append(cmd.Env, key.env()...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tt := range []struct{ name, url, want string }{
		{"signed by another key", base + "/stranger", "does not verify against the release key"},
		{"unsigned", base + "/unsigned", "SHA256SUMS is not signed"},
		{"plain http elsewhere", "http://example.invalid/v{version}", "https only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := pluginCopy(t)
			out, err := makeBuild(t, root, tt.url)
			if err == nil || !strings.Contains(out, tt.want) || !strings.Contains(out, "Nothing was installed") {
				t.Errorf("make: %v, want a failure saying %q and that nothing was installed:\n%s", err, tt.want, out)
			}
			if got := binFiles(t, root); len(got) != 0 {
				t.Errorf("bin/ holds %v after a refused download", got)
			}
		})
	}

	root := pluginCopy(t)
	out, err := makeBuild(t, root, base+"/v{version}")
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	for _, w := range []string{"Go 1.25 or newer is needed", "downloading the prebuilt host instead", "signed by the release key", "SHA-256", "installed"} {
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
	key := newSigner(t)
	sums := sumsLine(asset, host)
	base := serveReleases(t, map[string]release{
		"r":        key.signed(t, sums, release{asset: host}),
		"unsigned": {asset: host, "SHA256SUMS": []byte(sums)},
	})
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
		// then from a release whose list is not signed: refused, the host
		// installed above stays
		"-c", `lua vim.wait(60000, function() return #_G.notes >= 4 end, 20) vim.env.NVIM_CLAUDE_RELEASE_URL = vim.env.UNSIGNED_URL vim.cmd("ClaudeInstall download")`,
		"-c", `lua vim.wait(60000, function() return #_G.notes >= 6 end, 20) io.stdout:write(vim.json.encode({ returned = _G.returned, notes = _G.notes }))`,
		"-c", "qa!")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_RELEASE_URL="+base+"/r", "NVIM_CLAUDE_ROOT="+root, "UNSIGNED_URL="+base+"/unsigned")
	cmd.Env = append(cmd.Env, key.env()...)
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
	// installing…, installing…, "already running" (at once), then the
	// outcome; then installing… and the refusal
	if res.Returned != 1 || len(res.Notes) != 6 {
		t.Fatalf("want the command to return after its 'installing' note, a second to be refused, one outcome: %+v", res)
	}
	if n := res.Notes[2]; n.Level != 4 || !strings.Contains(n.Msg, "already running") {
		t.Errorf("a second install while one runs: %+v", n)
	}
	if n := res.Notes[3]; n.Level != 2 || !strings.Contains(n.Msg, "signed by the release key") || !strings.Contains(n.Msg, "SHA-256") || !strings.Contains(n.Msg, "elsewhere/nvim-claude") {
		t.Errorf("outcome: %+v", n)
	}
	if n := res.Notes[5]; n.Level != 4 || !strings.Contains(n.Msg, "SHA256SUMS is not signed") || !strings.Contains(n.Msg, "Nothing was installed") {
		t.Errorf("an unsigned release: %+v", n)
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
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root, "GO="+tt.goPath)
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
			if tt.ok {
				// static, as the released hosts: no dynamic loader at each start
				if f, err := elf.Open(dest); err == nil {
					for _, p := range f.Progs {
						if p.Type == elf.PT_INTERP {
							t.Errorf("the built host is dynamically linked (built with cgo)")
						}
					}
					f.Close()
				}
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

// TestReleaseURLRules pins who may be downloaded from and which key a
// release is checked against: https always; http only on 127.0.0.1 or
// localhost and only with the test switch; the test key only for such a
// URL, never for an https one, whatever the environment says.
func TestReleaseURLRules(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	for _, tt := range []struct {
		url    string
		test   bool
		ok     bool
		signer string // "test" or "repo"
	}{
		{"https://github.com/nvim-claude/nvim-claude/releases/download/v1", false, true, "repo"},
		{"https://github.com/x", true, true, "repo"},
		{"http://127.0.0.1:8080/r", true, true, "test"},
		{"http://localhost/r", true, true, "test"},
		{"http://127.0.0.1:8080/r", false, false, "repo"},
		{"http://example.com/r", true, false, "repo"},
		{"http://127.0.0.1.example.com/r", true, false, "repo"},
		{"http://127.0.0.1@example.com/r", true, false, "repo"},
		{"http://localhost:80@example.com/r", true, false, "repo"},
		{"file:///tmp/r", true, false, "repo"},
		{"https:///r", true, false, "repo"},
	} {
		var got struct {
			Refused string `json:"refused"`
			Signers string `json:"signers"`
		}
		n.Eval(t, fmt.Sprintf(`
			vim.env.NVIM_CLAUDE_TEST_LOOPBACK = %q
			vim.env.NVIM_CLAUDE_TEST_RELEASE_KEY = "/test/allowed_signers"
			local i = require("claude.install")
			return { refused = i.url_refused(%q) or "", signers = i.signers("/repo", %q) }`,
			map[bool]string{true: "1", false: ""}[tt.test], tt.url, tt.url), &got)
		if (got.Refused == "") != tt.ok {
			t.Errorf("%s (test switch %v): refused %q, want allowed %v", tt.url, tt.test, got.Refused, tt.ok)
		}
		want := map[string]string{"test": "/test/allowed_signers", "repo": "/repo/keys/release.allowed_signers"}[tt.signer]
		if got.Signers != want {
			t.Errorf("%s (test switch %v): checked against %s, want %s", tt.url, tt.test, got.Signers, want)
		}
	}
}

// oldGo is Go 1.22.12 (Ubuntu 24.04's Go), fetched from the module proxy
// into the module cache the way any Go 1.21+ fetches a toolchain. The test
// skips, saying so, when the proxy cannot be reached.
func oldGo(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	modcache, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("no go to find the module cache with: %v", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(modcache)), "golang.org",
		fmt.Sprintf("toolchain@v0.0.1-go1.22.12.%s-%s", runtime.GOOS, runtime.GOARCH), "bin", "go")
	if _, err := os.Stat(bin); err != nil {
		cmd := exec.CommandContext(ctx, "go", "version")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=go1.22.12")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("cannot fetch Go 1.22.12 from the module proxy to test with (%v): %s", err, out)
		}
	}
	return bin
}

// lazyBuild runs root's build.lua the way lazy.nvim 11 does — in a task
// coroutine, with lazy.async able to tell it is one — and returns what it
// yielded (lazy shows each as the build's progress) and its error. setup
// names the host path, so nothing is written into root's bin/.
func lazyBuild(t *testing.T, root, bin string, env ...string) (yields []string, errMsg string) {
	t.Helper()
	driver := filepath.Join(t.TempDir(), "driver.lua")
	src := `
require("claude").setup({ bin = vim.env.TEST_BIN })
local co
package.loaded["lazy.async"] = {
  running = function() return coroutine.running() == co and {} or nil end,
  sleep = function() coroutine.yield() end,
}
local yields, err = {}, nil
co = coroutine.create(assert(loadfile(vim.env.NVIM_CLAUDE_ROOT .. "/build.lua"))) -- as lazy.nvim does
while coroutine.status(co) ~= "dead" do
  local ok, v = coroutine.resume(co)
  if not ok then err = tostring(v) break end
  if v ~= nil then table.insert(yields, v) end
  vim.wait(20)
end
io.stdout:write("\n@@", vim.json.encode({ yields = yields, err = err or "" }), "\n")
vim.cmd("qa!")
`
	if err := os.WriteFile(driver, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", rtpPrepend, "-c", "luafile "+driver)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root, "TEST_BIN="+bin)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	i := strings.LastIndex(string(out), "\n@@")
	if err != nil || i < 0 {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	var res struct {
		Yields []string `json:"yields"`
		Err    string   `json:"err"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out[i+3:]))), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res.Yields, res.Err
}

// TestBuildLuaFetchesToolchain: lazy.nvim's build with only Go 1.22 on
// hand and GOTOOLCHAIN=local in the environment builds the host by having
// Go fetch the toolchain go.mod names, and says each step as it goes (lazy
// shows what build.lua yields: `:Lazy build` is not silent for a minute).
func TestBuildLuaFetchesToolchain(t *testing.T) {
	goBin := oldGo(t)
	root := nvimtest.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "nvim-claude")
	yields, errMsg := lazyBuild(t, root, bin, "GO="+goBin, "GOTOOLCHAIN=local")
	if errMsg != "" {
		t.Fatalf("build.lua failed: %s\nprogress: %q", errMsg, yields)
	}
	all := strings.Join(yields, "\n")
	for _, w := range []string{
		"is Go 1.22.12, older than the 1.25 the host needs; it fetches Go 1.25 itself through the module proxy",
		"GOTOOLCHAIN=auto for this build instead of GOTOOLCHAIN=local from your environment",
		"fetched Go 1.25",
		"building the host with Go 1.25",
		"built ", "fetched by Go 1.22.12, GOTOOLCHAIN=auto",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("build.lua's progress lacks %q:\n%s", w, all)
		}
	}
	if len(yields) < 4 {
		t.Errorf("want a line per step, got %q", yields)
	}
	if v, err := exec.Command(bin, "-version").CombinedOutput(); err != nil || !strings.Contains(string(v), pluginVersion(t)) {
		t.Errorf("the host build.lua built: -version: %v %s", err, v)
	}
}

// TestBuildLuaProgress: the download path says each step to lazy.nvim too,
// and run outside lazy (:luafile build.lua) prints them.
func TestBuildLuaProgress(t *testing.T) {
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	version := pluginVersion(t)
	asset := assetName(version)
	key := newSigner(t)
	base := serveReleases(t, map[string]release{"r": key.signed(t, sumsLine(asset, host), release{asset: host})})
	root := pluginCopy(t)
	env := append(key.env(), "GO="+filepath.Join(t.TempDir(), "no-such-go"), "NVIM_CLAUDE_RELEASE_URL="+base+"/r")
	bin := filepath.Join(t.TempDir(), "nvim-claude")
	yields, errMsg := lazyBuild(t, root, bin, env...)
	if errMsg != "" {
		t.Fatalf("build.lua failed: %s\nprogress: %q", errMsg, yields)
	}
	want := []string{"downloading " + base + "/r/SHA256SUMS and its signature", "SHA256SUMS is signed by the release key", "downloading " + base + "/r/" + asset, "installed"}
	if len(yields) != len(want) {
		t.Errorf("yields %q, want %d lines", yields, len(want))
	}
	for i, w := range want {
		if i < len(yields) && !strings.Contains(yields[i], w) {
			t.Errorf("yield %d: %q, want it to say %q", i, yields[i], w)
		}
	}

	// outside lazy.nvim: printed, in the same order
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", rtpPrepend, "-c", "luafile "+filepath.Join(root, "build.lua"), "-c", "qa!")
	cmd.Env = append(os.Environ(), append(env, "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	last := 0
	for _, w := range want {
		i := strings.Index(string(out)[last:], w)
		if i < 0 {
			t.Errorf("printed output lacks %q after offset %d:\n%s", w, last, out)
			break
		}
		last += i
	}
}

// TestMissingHostSaysInstall: a plugin whose host was never built (a
// lazy.nvim `dir =` spec runs no build) answers the first command with the
// one command that installs it.
func TestMissingHostSaysInstall(t *testing.T) {
	root := pluginCopy(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", rtpPrepend, "-c", "runtime plugin/claude.lua",
		"-c", `lua _G.notes = {} vim.notify = function(m, l) table.insert(_G.notes, { msg = m, level = l }) end`,
		"-c", `lua require("claude").setup({})`,
		"-c", "silent! ClaudeStart",
		"-c", `lua vim.wait(5000, function() return #_G.notes > 0 end, 20) io.stdout:write(vim.json.encode(_G.notes))`,
		"-c", "qa!")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "[")
	if i < 0 {
		t.Fatalf("no notes: %s", out)
	}
	var notes []note
	if err := json.Unmarshal(out[i:], &notes); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(notes) == 0 || !strings.Contains(notes[0].Msg, "not installed yet") || !strings.Contains(notes[0].Msg, "Run :ClaudeInstall") {
		t.Errorf("the first command without a host: %+v", notes)
	}
}

// TestInstallUncreatableDest: an install into a directory that cannot be
// made (the `bin` option under a file, or where the user may not write)
// ends with a clear error through its callback, and the next install is not
// refused as "already running".
func TestInstallUncreatableDest(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(file, "bin", "nvim-claude")
	var got [][]any
	n.Eval(t, fmt.Sprintf(`
		local i, res = require("claude.install"), {}
		for _ = 1, 2 do
			local ok, e = pcall(i.run, { mode = "download", dest = %q }, function(o, m) table.insert(res, { o, m }) end)
			if not ok then table.insert(res, { false, "threw: " .. tostring(e) }) end
		end
		vim.wait(2000, function() return #res == 2 end)
		return res`, dest), &got)
	if len(got) != 2 {
		t.Fatalf("want two outcomes, got %v", got)
	}
	for _, r := range got {
		msg, _ := r[1].(string)
		if r[0] != false || !strings.Contains(msg, "cannot create "+filepath.Join(file, "bin")) {
			t.Errorf("install into %s: %v, want a failure naming the directory", dest, r)
		}
	}
}

// foreignWork is a go.work that leaves this module out, named by $GOWORK
// as a go.work above the plugin's directory would be found: a build that
// consulted it would fail (or, had it used the plugin and replaced a
// dependency, build someone else's code).
func foreignWork(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"go.work":      "go 1.21\n\nuse ./other\n",
		"other/go.mod": "module other\n\ngo 1.21\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "go.work")
}

// TestInstallBuildIgnoresGoWork: the install builds the module as go.mod
// and go.sum pin it, whatever go.work is around.
func TestInstallBuildIgnoresGoWork(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	root := nvimtest.RepoRoot(t)
	dest := filepath.Join(t.TempDir(), "nvim-claude")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", rtpPrepend,
		"-c", fmt.Sprintf(`lua local ok, msg = require("claude.install").run_sync({ mode = "build", root = %q, dest = %q }) io.stdout:write(tostring(ok), " ", msg) vim.cmd("qa!")`, root, dest))
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root, "GOWORK="+foreignWork(t))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "true") {
		t.Fatalf("build with a foreign go.work: %v\n%s", err, out)
	}
}

// TestInstallReadsTheVerifiedSums: the checksums the asset is held to are
// the bytes whose signature was checked, not the file read again after the
// check. (An ssh-keygen that rewrites the downloaded SHA256SUMS once it has
// verified it stands for anything that changes that file in between; the
// served asset has a byte appended, which the signed list does not allow.)
func TestInstallReadsTheVerifiedSums(t *testing.T) {
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	version := pluginVersion(t)
	asset := assetName(version)
	tampered := append(append([]byte{}, host...), 0)
	key := newSigner(t)
	base := serveReleases(t, map[string]release{"r": key.signed(t, sumsLine(asset, host), release{asset: tampered})})
	root := pluginCopy(t)
	tools := t.TempDir()
	swap := fmt.Sprintf("#!/bin/sh\n%q \"$@\"\nrc=$?\nfor f in %q/bin/.nvim-claude.part.*.sums; do printf '%%s\\n' %q >\"$f\"; done\nexit $rc\n",
		mustLook(t, "ssh-keygen"), root, strings.TrimSpace(sumsLine(asset, tampered)))
	if err := os.WriteFile(filepath.Join(tools, "ssh-keygen"), []byte(swap), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := installRun(t, root, "download", append(key.env(), "NVIM_CLAUDE_RELEASE_URL="+base+"/r",
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	if err == nil || !strings.Contains(out, "refused "+base+"/r/"+asset) {
		t.Errorf("the asset the signed list does not allow: %v\n%s", err, out)
	}
	if got := binFiles(t, root); len(got) != 0 {
		t.Errorf("bin/ holds %v, want nothing", got)
	}
}

// TestClaudeInstallShowsOutputSafely: what a failed build printed (here a
// terminal escape sequence and two lines) reaches :ClaudeInstall's
// notification displayable, line by line.
func TestClaudeInstallShowsOutputSafely(t *testing.T) {
	goStub := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\ncase \"$1\" in env) echo go1.99.0 ;; *) printf '\\033]52;c;eA==\\007first\\nsecond\\n' >&2; exit 1 ;; esac\n"
	if err := os.WriteFile(goStub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	root := pluginCopy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvimtest.Bin(t), "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", rtpPrepend, "-c", "runtime plugin/claude.lua",
		"-c", `lua _G.notes = {} vim.notify = function(m, l) table.insert(_G.notes, m) end`,
		"-c", fmt.Sprintf(`lua require("claude").setup({ bin = %q })`, filepath.Join(t.TempDir(), "nvim-claude")),
		"-c", "ClaudeInstall build",
		"-c", `lua vim.wait(60000, function() return #_G.notes >= 2 end, 20) io.stdout:write("\n@@", vim.json.encode(_G.notes))`,
		"-c", "qa!")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+testhome.ConfigHome(t), "XDG_DATA_HOME="+t.TempDir(), "NVIM_CLAUDE_ROOT="+root, "GO="+goStub)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	var notes []string
	i := strings.LastIndex(string(out), "\n@@")
	if i < 0 {
		t.Fatalf("no notes: %s", out)
	}
	if err := json.Unmarshal(out[i+3:], &notes); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(notes) != 2 {
		t.Fatalf("want 'installing' and the outcome: %q", notes)
	}
	msg := notes[1]
	if strings.ContainsAny(msg, "\x1b\x07") || !strings.Contains(msg, "^[]52;c;eA==^Gfirst\nsecond") {
		t.Errorf("the outcome shows the build's output raw or not at all: %q", msg)
	}
}

// TestInstallLoopbackRedirect: the test switch allows http on a loopback
// URL and nothing more: a redirect from there to another http address
// (which the test key would then vouch for) is not followed.
func TestInstallLoopbackRedirect(t *testing.T) {
	host, err := os.ReadFile(hostBin)
	if err != nil {
		t.Fatal(err)
	}
	asset := assetName(pluginVersion(t))
	key := newSigner(t)
	elsewhere := serveReleases(t, map[string]release{"r": key.signed(t, sumsLine(asset, host), release{asset: host})})
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	root := pluginCopy(t)
	out, err := installRun(t, root, "download", append(key.env(), "NVIM_CLAUDE_RELEASE_URL="+redirect.URL+"/r")...)
	if err == nil || !strings.Contains(out, "could not download "+redirect.URL+"/r/SHA256SUMS") {
		t.Errorf("followed an http redirect: %v\n%s", err, out)
	}
	if got := binFiles(t, root); len(got) != 0 {
		t.Errorf("bin/ holds %v, want nothing", got)
	}
}
