local remote = require("claude.remote")
local config = require("claude.config")

return {
  split_args_takes_the_far_flags = function()
    for _, c in ipairs({
      { { "--ssh", "me@box:/w/app", "--model", "x" }, { ssh = "me@box", dir = "/w/app" }, { "--model", "x" } },
      { { "--ssh=box" }, { ssh = "box" }, {} },
      { { "--container", "app-1", "--runtime", "podman" }, { container = "app-1", runtime = "podman" }, {} },
      { { "--devcontainer", "hello" }, { devcontainer = true }, { "hello" } },
      { { "--local" }, { ["local"] = true }, {} },
      { { "--model", "x" }, nil, { "--model", "x" } },
    }) do
      local want, rest, err = remote.split_args(c[1])
      t.eq(nil, err, vim.inspect(c[1]) .. " error")
      t.eq(c[2], want, vim.inspect(c[1]) .. " target")
      t.eq(c[3], rest, vim.inspect(c[1]) .. " rest")
    end
  end,
  split_args_refuses_what_it_cannot_read = function()
    for _, c in ipairs({
      { { "--ssh" }, "--ssh needs a value" },
      { { "--ssh", "--model" }, "--ssh needs a value" },
      { { "--container=" }, "--container needs a value" },
      { { "--runtime", "lxc" }, "--runtime must be docker or podman" },
    }) do
      local _, _, err = remote.split_args(c[1])
      t.eq(c[2], err, vim.inspect(c[1]))
    end
  end,
  resolve_merges_the_option_and_the_command = function()
    config.apply({ remote = { ssh = "me@box", dir = "/w", map = { remote = "/w", ["local"] = "/src" }, options = { "-p", "2222" } } })
    local r = remote.resolve(nil)
    t.eq("ssh", r.kind, "kind from the option")
    t.eq({ "-p", "2222" }, r.options, "options")
    -- a command's far dir replaces the option's mapping; its options stay
    r = remote.resolve({ ssh = "other", dir = "/x" })
    t.eq({ "other", "/x", nil, { "-p", "2222" } }, { r.ssh, r.dir, r.map, r.options }, "override")
    r = remote.resolve({ container = "c" })
    t.eq({ "docker", "c", nil }, { r.kind, r.container, r.ssh }, "a container replaces ssh")
    t.eq(nil, (remote.resolve({ ["local"] = true })), "--local")
    local p = remote.params(remote.resolve(nil), { "--model", "x" })
    t.eq({ "ssh", "me@box", "/w", "/w", "/src", { "--model", "x" } }, { p.kind, p.dest, p.dir, p.map_remote, p.map_local, p.args }, "params")
    config.apply({ remote = { ssh = "a", container = "b" } })
    local _, err = remote.resolve(nil)
    t.eq("remote: set one of ssh, container and devcontainer", err, "two kinds")
    config.apply({})
    t.eq(nil, (remote.resolve(nil)), "no option: here")
  end,
  the_option_is_checked = function()
    for _, c in ipairs({
      { { remote = { ssh = "-oProxyCommand=x" } }, "remote.ssh" },
      { { remote = { runtime = "lxc" } }, "remote.runtime" },
      { { remote = { dir = "rel" } }, "remote.dir" },
      { { remote = { map = { remote = "C:\\x" } } }, "remote.map.remote" },
      { { remote = { options = { 1 } } }, "remote.options" },
    }) do
      local p = config.apply(c[1])
      t.eq(1, #p, vim.inspect(c[1]))
      assert(p[1]:find(c[2], 1, true), p[1])
    end
    config.apply({})
  end,
}
