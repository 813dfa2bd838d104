-- Installs the Go host, bin/nvim-claude: built with Go when a Go new enough
-- for go.mod is on PATH, else downloaded as the prebuilt release asset of
-- this plugin's version and installed only once the release's SHA256SUMS
-- carries a good signature by the release key committed in this repository
-- (keys/release.allowed_signers, checked with OpenSSH's ssh-keygen -Y
-- verify) and the asset's SHA-256 matches it. Downloads are https only. One
-- implementation for every way in: `make` (when it finds no Go), build.lua
-- (lazy.nvim runs it), :ClaudeInstall, and :checkhealth's advice. Knows
-- nothing of the host's protocol.
--
-- Never blocks Neovim while it works (jobs and callbacks); main() and
-- run_sync() wait for it, for build steps that have nothing else to do.
local util = require("claude.util")

local M = {}

local uv = vim.uv or vim.loop

-- The release that assets are downloaded from, by default; an option
-- (install.base_url) or $NVIM_CLAUDE_RELEASE_URL replaces it ("{version}"
-- in either becomes the plugin's version).
M.DEFAULT_BASE_URL = "https://github.com/nvim-claude/nvim-claude/releases/download/v{version}"

local function root()
  -- this file is <root>/lua/claude/install.lua
  local src = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

-- Who signs a release and for what: ssh-keygen -Y verify checks the
-- signature's principal and namespace against the allowed_signers file, so
-- a signature the same key made for anything else (a git commit, a file of
-- another project) does not pass.
M.SIGNER = "release@nvim-claude"
M.NAMESPACE = "nvim-claude-release"

-- Tests serve releases on 127.0.0.1 over http and sign them with a key of
-- their own. These two variables let them, and nothing else does: with
-- NVIM_CLAUDE_TEST_LOOPBACK=1 an http URL on 127.0.0.1 or localhost is
-- allowed, and only for such a URL NVIM_CLAUDE_TEST_RELEASE_KEY replaces the
-- committed key. Test-only: a real download is https and checked against
-- the committed key whatever they say.
local function loopback(url)
  local host = url:match("^http://([^/?#]+)")
  if not host or vim.env.NVIM_CLAUDE_TEST_LOOPBACK ~= "1" then
    return false
  end
  host = host:gsub(":%d+$", "")
  return host == "127.0.0.1" or host == "localhost"
end

--- Why url may not be downloaded from, or nil when it may.
function M.url_refused(url)
  if url:match("^https://[^/?#]") or loopback(url) then
    return nil
  end
  return "downloads are https only"
end

--- The allowed_signers file a release from base is checked against.
function M.signers(r, base)
  local test = vim.env.NVIM_CLAUDE_TEST_RELEASE_KEY
  if test and test ~= "" and base and loopback(base) then
    return test
  end
  return (r or root()) .. "/keys/release.allowed_signers"
end

local function is_windows()
  return uv.os_uname().sysname:find("Windows") ~= nil
end

--- The plugin's version (lua/claude/version.lua), which the host must have.
function M.version()
  return require("claude.version")
end

--- Where the host goes: <root>/bin/nvim-claude (.exe on Windows).
function M.target(r)
  return (r or root()) .. "/bin/nvim-claude" .. (is_windows() and ".exe" or "")
end

-- dest is where this install writes: the `bin` option when setup() set one
-- (the host the plugin will run), else the plugin's bin/.
local function dest_of(r)
  local ok, config = pcall(require, "claude.config")
  local bin = ok and config.options and config.options.bin
  if type(bin) == "string" and bin ~= "" then
    return vim.fn.fnamemodify(vim.fn.expand(bin), ":p")
  end
  return M.target(r)
end

--- The Go version go.mod needs ("1.25"), or nil.
function M.go_needed(r)
  local f = io.open((r or root()) .. "/go.mod", "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text:match("\ngo (%d+%.%d+[%.%d]*)")
end

-- older(a, b): dotted version a < b.
local function older(a, b)
  local x, y = vim.split(a, ".", { plain = true }), vim.split(b, ".", { plain = true })
  for i = 1, math.max(#x, #y) do
    local p, q = tonumber(x[i]) or 0, tonumber(y[i]) or 0
    if p ~= q then
      return p < q
    end
  end
  return false
end

--- What Go on PATH can do: {path, version ("1.26.8"), need ("1.25"), ok,
--- fetch} (ok: it can build the host; fetch: it is older, but 1.21 or
--- newer, so it can fetch the toolchain go.mod names through the module
--- proxy and build with that). $GO names another go.
function M.go(r)
  local need = M.go_needed(r) or "1.22"
  local path = vim.fn.exepath(vim.env.GO ~= nil and vim.env.GO ~= "" and vim.env.GO or "go")
  local res = { need = need, ok = false }
  if path == "" then
    return res
  end
  res.path = path
  -- the Go on PATH itself (GOTOOLCHAIN=local: never fetch a toolchain
  -- while Neovim waits), asked in the plugin's directory, within 5 s
  local out = {}
  local ok, job = pcall(vim.fn.jobstart, { path, "env", "GOVERSION" }, {
    cwd = r or root(),
    env = { GOTOOLCHAIN = "local" },
    stdout_buffered = true,
    on_stdout = function(_, d)
      out = d
    end,
  })
  local code = ok and job > 0 and vim.fn.jobwait({ job }, 5000)[1] or -1
  if code == -1 and ok and job > 0 then
    pcall(vim.fn.jobstop, job)
  end
  res.version = code == 0 and table.concat(out, "\n"):match("go(%d+%.%d+[%.%d]*)") or nil
  res.ok = res.version ~= nil and not older(res.version, need)
  res.fetch = res.version ~= nil and not res.ok and not older(res.version, "1.21")
  return res
end

--- The release asset for this platform: "nvim-claude_0.1.0_linux_amd64",
--- or nil and why there is none.
function M.asset(version, uname)
  uname = uname or uv.os_uname()
  local oses = { Linux = "linux", Darwin = "darwin", Windows_NT = "windows" }
  local arches = { x86_64 = "amd64", amd64 = "amd64", AMD64 = "amd64", aarch64 = "arm64", arm64 = "arm64" }
  local os_name, arch = oses[uname.sysname], arches[uname.machine]
  if os_name == "windows" and arch ~= "amd64" then
    arch = nil
  end
  if not os_name or not arch then
    return nil, string.format("there is no prebuilt host for %s/%s", uname.sysname, uname.machine)
  end
  return string.format("nvim-claude_%s_%s_%s%s", version, os_name, arch, os_name == "windows" and ".exe" or "")
end

--- The base URL assets come from: opts.base_url, else
--- $NVIM_CLAUDE_RELEASE_URL, else the option install.base_url, else the
--- project's GitHub release of this version.
function M.base_url(opts)
  local url = opts and opts.base_url
  if url == nil or url == "" then
    url = vim.env.NVIM_CLAUDE_RELEASE_URL
  end
  if url == nil or url == "" then
    local ok, config = pcall(require, "claude.config")
    url = ok and config.options and config.options.install and config.options.install.base_url or nil
  end
  if url == nil or url == "" then
    url = M.DEFAULT_BASE_URL
  end
  return (url:gsub("{version}", M.version()):gsub("/+$", ""))
end

-- run(argv, cb): a job; cb(code, stdout, stderr) with the output as one
-- string each. A program that cannot start is code -1. opts.on_line(line)
-- hears each line of stderr as it comes (go's progress), opts.stdin is
-- written to its stdin.
local function run(argv, opts, cb)
  local out, err = {}, {}
  local partial = ""
  local ok, job = pcall(vim.fn.jobstart, argv, {
    cwd = opts.cwd,
    env = opts.env,
    stdout_buffered = true,
    on_stdout = function(_, d)
      out = d
    end,
    on_stderr = function(_, d)
      -- d is a list of lines; its first continues the last partial line
      d[1] = partial .. d[1]
      partial = table.remove(d)
      for _, line in ipairs(d) do
        table.insert(err, line)
        if opts.on_line and line ~= "" then
          opts.on_line(line)
        end
      end
    end,
    on_exit = function(_, code)
      if partial ~= "" then
        table.insert(err, partial)
        if opts.on_line then
          opts.on_line(partial)
        end
        partial = ""
      end
      vim.schedule(function()
        cb(code, vim.trim(table.concat(out, "\n")), vim.trim(table.concat(err, "\n")))
      end)
    end,
  })
  if not ok or job <= 0 then
    vim.schedule(function()
      cb(-1, "", string.format("cannot run %s: %s", argv[1], ok and job or tostring(job)))
    end)
    return
  end
  if opts.stdin then
    vim.fn.chansend(job, opts.stdin)
  end
  vim.fn.chanclose(job, "stdin")
end

-- The temporary names install writes beside the target: one per process,
-- renamed into place or removed; sweep() removes those of processes that
-- are gone (a build step killed half way).
local TMP_PREFIX = ".nvim-claude.part."

local seq = 0

-- tmp_name is unique per call; on Windows it ends in .exe so that the
-- downloaded host can be run to check its version.
local function tmp_name(dir, what)
  seq = seq + 1
  return string.format("%s/%s%d.%d.%s%s", dir, TMP_PREFIX, vim.fn.getpid(), seq, what, is_windows() and ".exe" or "")
end

local function pid_alive(pid)
  local ret, _, name = uv.kill(pid, 0)
  return ret == 0 or name == "EPERM"
end

local function sweep(dir)
  local h = uv.fs_scandir(dir)
  while h do
    local name = uv.fs_scandir_next(h)
    if not name then
      break
    end
    local pid = name:sub(1, #TMP_PREFIX) == TMP_PREFIX and tonumber(name:sub(#TMP_PREFIX + 1):match("^(%d+)%.")) or nil
    -- (this process's own are its running install's: one at a time)
    if pid and pid ~= vim.fn.getpid() and not pid_alive(pid) then
      os.remove(dir .. "/" .. name)
    end
  end
end

-- The SHA-256 of a file with the first tool found: sha256sum (GNU),
-- shasum (macOS), openssl, certutil (Windows). cb(hex) or cb(nil, why).
local function sha256(path, cb)
  local tools = {
    { "sha256sum", "--", path },
    { "shasum", "-a", "256", path },
    { "openssl", "dgst", "-sha256", "-r", path },
    { "certutil", "-hashfile", path, "SHA256" },
  }
  for _, argv in ipairs(tools) do
    if vim.fn.executable(argv[1]) == 1 then
      return run(argv, {}, function(code, out, err)
        local hex
        for run_ in (code == 0 and out or ""):gmatch("%x+") do
          if #run_ == 64 then
            hex = run_
            break
          end
        end
        if hex then
          cb(hex:lower())
        else
          cb(nil, string.format("%s failed: %s", argv[1], err ~= "" and err or out))
        end
      end)
    end
  end
  cb(nil, "no SHA-256 tool found (sha256sum, shasum, openssl or certutil)")
end

-- fetch(url, dest, cb): cb(nil) once url's body is in dest; else
-- cb({ status = 404 }) or cb({ network = "curl: (7) …" }). https only, for
-- redirects too (a loopback URL of the tests aside, not its redirects:
-- M.url_refused).
local function fetch(url, dest, cb)
  if vim.fn.executable("curl") ~= 1 then
    return cb({ network = "curl is not installed" })
  end
  -- (a loopback test URL may be http, but not what it redirects to: the
  -- test key would vouch for another host's release)
  return run({
    "curl",
    "-sS",
    "-L",
    "--proto",
    loopback(url) and "=http" or "=https",
    "--proto-redir",
    "=https",
    "--connect-timeout",
    "15",
    "--max-time",
    "600",
    "--retry",
    "1",
    "-o",
    dest,
    "-w",
    "%{http_code}",
    url,
  }, {}, function(code, out, err)
    local status = tonumber(out)
    if code == 23 then
      cb({ write = err ~= "" and err or ("cannot write " .. dest) })
    elseif code ~= 0 then
      cb({ network = err ~= "" and err or ("curl exited " .. code) })
    elseif status ~= 200 then
      cb({ status = status or 0 })
    else
      cb(nil)
    end
  end)
end

-- verify(sums, sig, signers, cb): cb(nil, data) when sig is a good
-- signature of the file sums (whose content is data: what was checked is
-- what is read, whatever happens to the file afterwards) by M.SIGNER for
-- M.NAMESPACE under the keys in signers; else cb(why).
local function verify(sums, sig, signers, cb)
  if vim.fn.executable("ssh-keygen") ~= 1 then
    return cb("ssh-keygen (OpenSSH 8.1 or newer, installed with git almost everywhere) is not on PATH to check it with")
  end
  local f = io.open(sums, "rb")
  local data = f and f:read("*a")
  if f then
    f:close()
  end
  if not data then
    return cb("cannot read " .. sums)
  end
  run(
    { "ssh-keygen", "-Y", "verify", "-f", signers, "-I", M.SIGNER, "-n", M.NAMESPACE, "-s", sig },
    { stdin = data },
    function(code, out, err)
      if code == 0 then
        return cb(nil, data)
      end
      local why = (err ~= "" and err or out):gsub("%s*\n%s*", "; ")
      cb(why ~= "" and why or ("ssh-keygen exited " .. code))
    end
  )
end

-- The two ways out, for a message about a download that did not work.
local function ways_out(r, go, asset, base)
  return string.format(
    "Two ways out: install Go %s or newer (https://go.dev/dl/; on Debian 12, golang from bookworm-backports) and run `make` in %s (or :ClaudeInstall build); or, on a machine with network, download %s, SHA256SUMS and SHA256SUMS.sig from %s, check the signature (ssh-keygen -Y verify, see keys/release.allowed_signers) and the checksum, and put the file at %s.",
    go.need,
    r,
    asset or "the asset for your platform",
    base,
    M.target(r)
  )
end

-- check_version(path, want, cb): the binary runs here and is version want.
local function check_version(path, want, cb)
  run({ path, "-version" }, {}, function(code, out, err)
    local got = out:match("nvim%-claude%s+(%S+)")
    if code ~= 0 or not got then
      cb(string.format("it does not run here: %s", err ~= "" and err or out))
    elseif got ~= want then
      cb(string.format("it is version %s, not %s", got, want))
    else
      cb(nil)
    end
  end)
end

-- install_file(tmp, dest): tmp becomes dest in one rename (an old host a
-- running Neovim still uses keeps its file until it exits).
local function install_file(tmp, dest)
  uv.fs_chmod(tmp, tonumber("755", 8))
  local old
  if is_windows() and uv.fs_stat(dest) then
    -- rename does not replace there, and a running host cannot be removed,
    -- but it can be renamed aside (removed now if it can be, else swept)
    old = tmp_name(vim.fn.fnamemodify(dest, ":h"), "old")
    local moved, merr = os.rename(dest, old)
    if not moved then
      os.remove(tmp)
      return merr
    end
  end
  local ok, err = os.rename(tmp, dest)
  if not ok then
    os.remove(tmp)
    if old then
      os.rename(old, dest)
    end
    return err
  end
  if old then
    os.remove(old)
  end
end

local function short(path)
  return vim.fn.fnamemodify(path, ":~")
end

-- make_dir(dir): nil once dir exists, else why not (vim.fn.mkdir throws,
-- which would end the install without its callback and leave the next one
-- refused as "already running").
local function make_dir(dir)
  local ok, err = pcall(vim.fn.mkdir, dir, "p")
  if not ok then
    return string.format("nvim-claude: cannot create %s: %s", dir, (tostring(err):gsub("^Vim:", "")))
  end
end

--- Builds the host with Go: go build -trimpath into a temporary name, then
--- renamed into place. A Go older than go.mod's but 1.21 or newer
--- (go.fetch) first fetches the toolchain go.mod names through the module
--- proxy: the build runs with GOTOOLCHAIN=auto, which replaces whatever the
--- environment says (GOTOOLCHAIN=local would refuse), and says so.
--- opts.progress(line) hears each step and go's own progress lines.
--- cb(ok, message).
function M.build(opts, cb)
  local r = opts.root or root()
  local go = opts.go or M.go(r)
  local say = opts.progress or function() end
  local dest = opts.dest or dest_of(r)
  local dir = vim.fn.fnamemodify(dest, ":h")
  local merr = make_dir(dir)
  if merr then
    return cb(false, merr)
  end
  sweep(dir)
  local tmp = tmp_name(dir, "build")
  -- the host is this module as go.mod and go.sum pin it: a go.work above
  -- the plugin (or $GOWORK) could otherwise pick the toolchain and replace
  -- its dependencies. CGO_ENABLED=0 as for the released hosts: a static
  -- binary starts about 5 ms sooner (no dynamic loader), on every start of
  -- the host and of every hook process.
  local env, via = { GOWORK = "off", CGO_ENABLED = "0" }, ""
  local function build(version)
    say(string.format("nvim-claude: building the host with Go %s (the first build takes a minute or two)…", version))
    run(
      { go.path, "build", "-trimpath", "-o", tmp, "./cmd/nvim-claude" },
      { cwd = r, env = env, on_line = say },
      function(code, out, err)
        if code ~= 0 then
          os.remove(tmp)
          return cb(
            false,
            string.format(
              "nvim-claude: `go build` failed in %s (or run :ClaudeInstall download for the prebuilt host):\n%s",
              r,
              err ~= "" and err or out
            )
          )
        end
        check_version(tmp, M.version(), function(verr)
          if verr then
            os.remove(tmp)
            return cb(false, string.format("nvim-claude: the host built in %s is not usable: %s", r, verr))
          end
          local e = install_file(tmp, dest)
          if e then
            return cb(false, string.format("nvim-claude: could not install %s: %s", dest, e))
          end
          cb(true, string.format("nvim-claude: built %s %s with Go %s (%s%s)", short(dest), M.version(), version, go.path, via))
        end)
      end
    )
  end
  if go.ok or not go.fetch then
    return build(go.version or "?")
  end
  env = { GOTOOLCHAIN = "auto", GOWORK = "off", CGO_ENABLED = "0" }
  local set = vim.env.GOTOOLCHAIN
  say(
    string.format(
      "nvim-claude: %s is Go %s, older than the %s the host needs; it fetches Go %s itself through the module proxy (about 65 MB to download, 215 MB in Go's module cache, once)%s…",
      go.path,
      go.version,
      go.need,
      go.need,
      (set and set ~= "" and set ~= "auto")
          and string.format(", with GOTOOLCHAIN=auto for this build instead of GOTOOLCHAIN=%s from your environment", set)
        or ", with GOTOOLCHAIN=auto for this build"
    )
  )
  -- `go version` in the plugin's directory fetches the toolchain go.mod
  -- names (printing "go: downloading go1.25.0 …") and names it
  run({ go.path, "version" }, { cwd = r, env = env, on_line = say }, function(code, out, err)
    local version = code == 0 and out:match("go version go(%d+%.%d+[%.%d]*)") or nil
    if not version then
      os.remove(tmp)
      return cb(
        false,
        string.format(
          "nvim-claude: %s (Go %s) could not fetch Go %s: %s. Install Go %s or newer (https://go.dev/dl/), or run :ClaudeInstall download for the prebuilt host.",
          go.path,
          go.version,
          go.need,
          err ~= "" and err or out,
          go.need
        )
      )
    end
    say(string.format("nvim-claude: fetched Go %s", version))
    via = string.format(", fetched by Go %s, GOTOOLCHAIN=auto", go.version)
    build(version)
  end)
end

--- Downloads the release asset of this plugin's version for this platform
--- and installs it only when all of these hold, in this order: the URL is
--- https; the release's SHA256SUMS carries a good signature
--- (SHA256SUMS.sig) by the key in keys/release.allowed_signers; the
--- asset's SHA-256 is the one SHA256SUMS lists; it runs and is this
--- version. Nothing is made executable before the signature is checked.
--- cb(ok, message); on every failure nothing is installed and nothing is
--- left behind. opts.progress(line), when given, hears each step.
function M.download(opts, cb)
  local r = opts.root or root()
  local go = opts.go or M.go(r)
  local say = opts.progress or function() end
  local version = M.version()
  local base = M.base_url(opts)
  local asset, why = M.asset(version, opts.uname)
  if not asset then
    return cb(false, string.format("nvim-claude: %s. Install Go %s or newer and run `make` in %s.", why, go.need, r))
  end
  local signers = M.signers(r, base)
  local dest = opts.dest or dest_of(r)
  local dir = vim.fn.fnamemodify(dest, ":h")
  local merr = make_dir(dir)
  if merr then
    return cb(false, merr)
  end
  sweep(dir)
  local refused = M.url_refused(base)
  if refused then
    return cb(
      false,
      string.format(
        "nvim-claude: refused to download from %s: %s (use the https URL of the release or of your mirror). Nothing was installed.",
        base,
        refused
      )
    )
  end
  local sums_tmp, sig_tmp, asset_tmp = tmp_name(dir, "sums"), tmp_name(dir, "sig"), tmp_name(dir, "asset")
  local function fail(msg)
    os.remove(sums_tmp)
    os.remove(sig_tmp)
    os.remove(asset_tmp)
    cb(false, msg)
  end
  local function fetch_failed(url, e)
    if e.write then
      return fail(string.format("nvim-claude: could not save %s into %s: %s. Nothing was installed.", url, dir, e.write))
    end
    if e.network then
      return fail(string.format("nvim-claude: could not download %s: %s. %s", url, e.network, ways_out(r, go, asset, base)))
    end
    local what
    if url:sub(-#"SHA256SUMS.sig") == "SHA256SUMS.sig" then
      return fail(
        string.format(
          "nvim-claude: refused the release at %s: its SHA256SUMS is not signed (%s answered HTTP %d), so nothing proves where it comes from. Nothing was installed. %s",
          base,
          url,
          e.status,
          ways_out(r, go, asset, base)
        )
      )
    elseif url:sub(-#"SHA256SUMS") == "SHA256SUMS" then
      what = "no release of version " .. version
    else
      what = "no release asset " .. asset .. " of version " .. version
    end
    return fail(
      string.format("nvim-claude: %s answered HTTP %d: %s there. %s", url, e.status, what, ways_out(r, go, asset, base))
    )
  end
  local sums_url = base .. "/SHA256SUMS"
  say("nvim-claude: downloading " .. sums_url .. " and its signature")
  fetch(sums_url, sums_tmp, function(e)
    if e then
      return fetch_failed(sums_url, e)
    end
    fetch(sums_url .. ".sig", sig_tmp, function(es)
      if es then
        return fetch_failed(sums_url .. ".sig", es)
      end
      verify(sums_tmp, sig_tmp, signers, function(verr, sums)
        if verr then
          return fail(
            string.format(
              "nvim-claude: refused the release at %s: the signature of its SHA256SUMS does not verify against the release key in %s (%s). Nothing was installed. %s",
              base,
              short(signers),
              verr,
              ways_out(r, go, asset, base)
            )
          )
        end
        say("nvim-claude: SHA256SUMS is signed by the release key (" .. short(signers) .. ")")
        local want, conflict
        for line in sums:gmatch("[^\r\n]+") do
          if #line <= 512 then
            local hex, name = line:match("^(%x+)%s+%*?(%S+)%s*$")
            if name == asset and #hex == 64 then
              if want and want ~= hex:lower() then
                conflict = true
              end
              want = hex:lower()
            end
          end
        end
        if conflict then
          return fail(
            string.format("nvim-claude: %s lists two different checksums for %s; nothing was downloaded.", sums_url, asset)
          )
        end
        if not want then
          return fail(
            string.format(
              "nvim-claude: %s lists no checksum for %s, so it was not downloaded. %s",
              sums_url,
              asset,
              ways_out(r, go, asset, base)
            )
          )
        end
        local url = base .. "/" .. asset
        say("nvim-claude: downloading " .. url .. " (about 10 MB)")
        fetch(url, asset_tmp, function(e2)
          if e2 then
            return fetch_failed(url, e2)
          end
          sha256(asset_tmp, function(got, serr)
            if not got then
              return fail(
                "nvim-claude: could not check the download's SHA-256: "
                  .. serr
                  .. "; nothing was installed. "
                  .. ways_out(r, go, asset, base)
              )
            end
            if got ~= want then
              return fail(
                string.format(
                  "nvim-claude: refused %s: its SHA-256 is %s but SHA256SUMS says %s. Nothing was installed (a damaged or tampered download; try again, or build with Go %s+).",
                  url,
                  got,
                  want,
                  go.need
                )
              )
            end
            uv.fs_chmod(asset_tmp, tonumber("755", 8))
            check_version(asset_tmp, version, function(cverr)
              if cverr then
                return fail(
                  string.format(
                    "nvim-claude: refused %s: %s. Nothing was installed. %s",
                    url,
                    cverr,
                    ways_out(r, go, asset, base)
                  )
                )
              end
              os.remove(sums_tmp)
              os.remove(sig_tmp)
              local ierr = install_file(asset_tmp, dest)
              if ierr then
                return fail(string.format("nvim-claude: could not install %s: %s", dest, ierr))
              end
              cb(
                true,
                string.format(
                  "nvim-claude: downloaded %s from %s, SHA256SUMS signed by the release key (%s), SHA-256 %s matches SHA256SUMS, installed %s (version %s)",
                  asset,
                  base,
                  short(signers),
                  got,
                  short(dest),
                  version
                )
              )
            end)
          end)
        end)
      end)
    end)
  end)
end

--- Installs the host: mode "build" (Go), "download", or "auto" (the
--- default: build when Go can, else download, and say why). cb(ok, message).
---@param opts {mode?: "auto"|"build"|"download", base_url?: string, root?: string}
---@param cb fun(ok: boolean, msg: string)
local running = false

function M.run(opts, cb)
  opts = opts or {}
  local r = opts.root or root()
  if running then
    return cb(false, "nvim-claude: an install is already running; its message comes when it ends")
  end
  running = true
  local done = cb
  cb = function(ok, msg)
    running = false
    if ok then
      -- :help nvim-claude works from a plain package too
      pcall(vim.cmd, "silent! helptags " .. vim.fn.fnameescape(r .. "/doc"))
    end
    done(ok, msg)
  end
  local go = M.go(r)
  local mode = opts.mode or "auto"
  local o = vim.tbl_extend("force", opts, { root = r, go = go })
  if mode == "build" or (mode == "auto" and (go.ok or go.fetch)) then
    if not go.ok and not go.fetch then
      return cb(
        false,
        go.path
            and string.format(
              "nvim-claude: %s is Go %s; the host needs Go %s or newer, and Go older than 1.21 cannot fetch it by itself (https://go.dev/dl/, or your distribution's newer golang: Debian 12 bookworm-backports), or run :ClaudeInstall download.",
              go.path,
              go.version or "of unknown version",
              go.need
            )
          or string.format(
            "nvim-claude: there is no `go` on PATH; the host needs Go %s or newer (https://go.dev/dl/), or run :ClaudeInstall download.",
            go.need
          )
      )
    end
    return M.build(o, cb)
  end
  if mode ~= "auto" and mode ~= "download" then
    return cb(false, string.format("nvim-claude: unknown install mode %q: use auto, build or download", mode))
  end
  local reason = ""
  if mode == "auto" then
    reason = go.path
        and string.format(
          "%s is Go %s, older than the %s the host needs and too old to fetch it (1.21+ can); ",
          go.path,
          go.version or "?",
          go.need
        )
      or string.format("no Go on PATH (the host needs Go %s to build); ", go.need)
  end
  M.download(o, function(ok, msg)
    if ok and reason ~= "" then
      local repl = ("nvim-claude: " .. reason):gsub("%%", "%%%%")
      msg = msg:gsub("^nvim%-claude: ", repl)
    end
    cb(ok, msg)
  end)
end

--- run(), waiting for it (build steps: lazy.nvim's build.lua, make).
--- Returns ok, message.
function M.run_sync(opts)
  local done, res_ok, res_msg = false, false, nil
  M.run(opts, function(ok, msg)
    done, res_ok, res_msg = true, ok, msg
  end)
  vim.wait(15 * 60 * 1000, function()
    return done
  end, 50)
  if not done then
    return false, "nvim-claude: the install did not finish within 15 minutes"
  end
  return res_ok, res_msg
end

--- For `nvim --headless … -c "lua require('claude.install').main()"`
--- (make): runs, prints the outcome, and quits Neovim with status 0 or 1.
---@param mode? "auto"|"build"|"download"
---@param dest? string where to install (default: the plugin's bin/)
function M.main(mode, dest)
  local ok, msg = M.run_sync({
    mode = mode,
    dest = dest ~= "" and dest or nil,
    progress = function(line)
      io.stdout:write(line, "\n")
      io.stdout:flush()
    end,
  })
  io.stdout:write(msg, "\n")
  io.stdout:flush()
  vim.cmd(ok and "qall!" or "cquit 1")
end

--- :ClaudeInstall [auto|build|download]: installs in the background and
--- says what it did; a running host goes on until :ClaudeStop.
function M.command(arg)
  local mode = arg ~= "" and arg or "auto"
  util.notify_now("nvim-claude: installing the host (" .. mode .. ")…", vim.log.levels.INFO)
  M.run({
    mode = mode,
    -- each step on the command line, replaced by the next (not one
    -- notification each); the outcome is a notification
    progress = function(line)
      pcall(vim.api.nvim_echo, { { require("claude.util").display(line, 200) } }, false, {})
    end,
  }, function(ok, msg)
    local server = package.loaded["claude.server"]
    if ok and server and server.state().chan then
      msg = msg .. ". The running host goes on until :ClaudeStop; the next start uses the new one."
    end
    -- it carries what go, curl and ssh-keygen printed: each line made
    -- displayable, the lines kept
    local lines = vim.split(msg, "\n", { plain = true })
    for i, line in ipairs(lines) do
      lines[i] = require("claude.util").display(line)
    end
    msg = table.concat(lines, "\n")
    util.notify_now(msg, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  end)
end

return M
