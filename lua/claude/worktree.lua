-- A session in its own git worktree: `:ClaudeStart --worktree [name]`,
-- `:ClaudeChat --worktree [name]` and the sessions panel's `w` create a
-- worktree on a new branch from the current HEAD and start the session in
-- it. The layout is the CLI's own (`claude -w`): <repository>/.claude/
-- worktrees/<name> on the branch worktree-<name>, so a worktree made here
-- and one the CLI made are the same kind of thing, both sit inside the
-- project (the lock's workspace folder covers them), and one rule
-- (of_dir) recognises both. worktree.dir moves them elsewhere; the
-- folders then go into the lock through folders().
--
-- git runs as a job: nothing here waits for it on the main loop.
local config = require("claude.config")
local util = require("claude.util")

local M = {}

local made = {} -- path → { name, branch, path, root, base }

local function opts()
  return config.options.worktree or {}
end

--- Whether s is a name git and the file system both take as is: letters,
--- digits, ".", "_", "-"; not starting with "." or "-"; at most 64.
function M.valid_name(s)
  return type(s) == "string"
    and #s > 0
    and #s <= 64
    and s:find("^[%w_][%w._-]*$") ~= nil
    and not s:find("%.%.")
    and not s:find("%.lock$")
end

--- Takes the worktree flag out of a command's arguments, as the CLI reads
--- it: `--worktree [name]`, `--worktree=name`, `-w [name]` (the name is the
--- next argument unless it starts with "-"). Returns want (nil: no flag;
--- else { name = string|nil }) and the other arguments.
function M.split_args(args)
  local rest, want = {}, nil
  local i = 1
  args = args or {}
  while i <= #args do
    local a = args[i]
    if a == "--worktree" or a == "-w" then
      want = { name = nil }
      local n = args[i + 1]
      if n and n:sub(1, 1) ~= "-" then
        want.name = n
        i = i + 1
      end
    elseif a:find("^%-%-worktree=") then
      want = { name = a:sub(#"--worktree=" + 1) }
      if want.name == "" then
        want.name = nil
      end
    else
      table.insert(rest, a)
    end
    i = i + 1
  end
  return want, rest
end

--- A fresh name: the CLI's are random words; ours say when.
function M.new_name()
  return "nvim-" .. os.date("%m%d-%H%M%S")
end

--- Where the worktree named name of the repository root goes.
function M.path_of(root, name)
  local dir = opts().dir
  if type(dir) ~= "string" or dir == "" then
    dir = root .. "/.claude/worktrees"
  elseif dir:sub(1, 1) == "~" then
    dir = vim.fn.expand(dir)
  elseif dir:sub(1, 1) ~= "/" then
    dir = root .. "/" .. dir
  end
  return (dir:gsub("/+$", "")) .. "/" .. name
end

--- The branch of the worktree named name (the CLI's: worktree-<name>).
function M.branch_of(name)
  local prefix = opts().branch_prefix
  if type(prefix) ~= "string" then
    prefix = "worktree-"
  end
  return prefix .. name
end

--- The worktree dir is in, or nil: one made here, or one in the CLI's
--- layout (a `claude -w` session's cwd). Returns { name, path, branch?,
--- root? }.
function M.of_dir(dir)
  if type(dir) ~= "string" or dir == "" then
    return nil
  end
  for path, w in pairs(made) do
    if dir == path or dir:sub(1, #path + 1) == path .. "/" then
      return w
    end
  end
  local root, name = dir:match("^(.-)/%.claude/worktrees/([^/]+)")
  if root and name then
    return { name = name, path = root .. "/.claude/worktrees/" .. name, root = root, branch = nil }
  end
end

--- A short label for dir's worktree ("wt:name"), "" outside one; displayable.
function M.label(dir)
  local w = M.of_dir(dir)
  return w and ("wt:" .. util.display(w.name, 24)) or ""
end

--- The worktrees made here that are outside cwd: the lock's workspace
--- folders must cover them for the CLI and the host's path rule.
function M.folders(cwd)
  local out = {}
  for path, w in pairs(made) do
    if not (path:sub(1, #cwd + 1) == cwd .. "/") and vim.fn.isdirectory(path) == 1 then
      table.insert(out, w.path)
    end
  end
  table.sort(out)
  return out
end

--- Every worktree made here: { {name, branch, path, root, base}, ... }.
function M.list()
  local out = {}
  for _, w in pairs(made) do
    table.insert(out, vim.deepcopy(w))
  end
  table.sort(out, function(a, b)
    return a.path < b.path
  end)
  return out
end

-- run starts git with args in cwd as a job; done(code, stdout lines,
-- stderr text) runs on the main loop. No credential is ever on the line:
-- these are local commands only.
local function run(args, cwd, done)
  local out, err = {}, {}
  local function keep(into)
    return function(_, data)
      for _, l in ipairs(data or {}) do
        if l ~= "" then
          table.insert(into, l)
        end
      end
    end
  end
  local cmd = { "git" }
  vim.list_extend(cmd, args)
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    cwd = cwd,
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = keep(out),
    on_stderr = keep(err),
    on_exit = function(_, code)
      vim.schedule(function()
        done(code, out, table.concat(err, "\n"))
      end)
    end,
  })
  if not ok or job <= 0 then
    vim.schedule(function()
      done(-1, {}, "git is not executable")
    end)
  end
end
M._run = run

local function fail(msg)
  util.notify("nvim-claude: " .. msg, vim.log.levels.ERROR)
end

--- Creates a worktree named name (nil: a fresh name) on a new branch from
--- the current HEAD of the repository holding cwd (default: Neovim's), and
--- calls done(w) with { name, branch, path, root, base } on the main loop.
--- Outside a git repository, or when git refuses, it says why and done is
--- not called: nothing is started.
function M.create(name, done, cwd)
  cwd = cwd or vim.fn.getcwd(-1, -1)
  name = name or M.new_name()
  if not M.valid_name(name) then
    fail(
      "worktree name "
        .. util.display(name, 70)
        .. " is not usable: letters, digits, '.', '_' and '-' only, not starting with '.' or '-'; nothing started"
    )
    return
  end
  run({ "rev-parse", "--show-toplevel", "HEAD" }, cwd, function(code, out, err)
    if code ~= 0 or #out < 2 then
      if err:find("not a git repository", 1, true) or code ~= 0 and #out == 0 then
        fail(
          "not in a git repository ("
            .. util.display(vim.fn.fnamemodify(cwd, ":~"), 120)
            .. "): a session in its own worktree needs one; nothing started"
        )
      else
        fail("the repository has no commit yet (no HEAD to branch from); nothing started")
      end
      return
    end
    local root, base = out[1], out[2]
    local path, branch = M.path_of(root, name), M.branch_of(name)
    if vim.loop.fs_stat(path) then
      fail("worktree " .. util.display(path, 160) .. " already exists; choose another name. Nothing started")
      return
    end
    run({ "worktree", "add", "-b", branch, path, base }, root, function(c2, _, err2)
      if c2 ~= 0 then
        fail(
          "git worktree add failed for "
            .. util.display(branch, 80)
            .. ": "
            .. util.display(err2 ~= "" and err2 or ("exit " .. c2), 300)
            .. "; nothing started"
        )
        return
      end
      local w = { name = name, branch = branch, path = path, root = root, base = base }
      made[path] = w
      local diag = package.loaded["claude.diagnostics"]
      if diag and diag.refresh_folders then
        diag.refresh_folders()
      end
      util.emit("ClaudeWorktreeCreated", vim.deepcopy(w))
      done(vim.deepcopy(w))
    end)
  end)
end

-- question is what discard asks: the worktree, its branch, and every
-- uncommitted change that would be lost (the first 20 named).
local function question(w, branch, changes)
  local lines = {
    string.format(
      "Discard the worktree %s (%s)%s?",
      util.display(w.name, 64),
      util.display(vim.fn.fnamemodify(w.path, ":~"), 160),
      branch and (" and delete its branch " .. util.display(branch, 80)) or ""
    ),
  }
  if #changes == 0 then
    table.insert(lines, "It has no uncommitted change.")
  else
    table.insert(lines, string.format("Its %d uncommitted change%s will be lost:", #changes, #changes == 1 and "" or "s"))
    for i = 1, math.min(#changes, 20) do
      table.insert(lines, "  " .. util.display(changes[i], 160))
    end
    if #changes > 20 then
      table.insert(lines, string.format("  … and %d more", #changes - 20))
    end
  end
  return table.concat(lines, "\n")
end

--- Discards the worktree that holds path (one made here or by the CLI's
--- own -w): asks first — naming its branch and every uncommitted change
--- that would be lost — and only on "Discard" runs before() (stop its
--- session), then `git worktree remove --force` and `git branch -D`.
--- Nothing is deleted without that answer. done(removed) runs on the
--- main loop. git runs as jobs.
function M.discard(path, done, before)
  done = done or function() end
  local w = M.of_dir(path)
  if not w then
    fail(util.display(path, 160) .. " is in no session worktree; nothing discarded")
    return done(false)
  end
  local cwd = vim.fn.getcwd(-1, -1)
  if cwd == w.path or cwd:sub(1, #w.path + 1) == w.path .. "/" then
    fail("Neovim's directory is inside the worktree " .. util.display(w.name, 64) .. "; :cd out of it first. Nothing discarded")
    return done(false)
  end
  run({ "status", "--porcelain" }, w.path, function(code, changes, err)
    if code ~= 0 then
      fail("git status in " .. util.display(w.path, 160) .. " failed: " .. util.display(err, 300) .. "; nothing discarded")
      return done(false)
    end
    run({ "rev-parse", "--abbrev-ref", "HEAD" }, w.path, function(_, head)
      local branch = head[1]
      if branch == nil or branch == "HEAD" or branch == "" then
        branch = nil -- detached: no branch of its own to delete
      end
      local root = w.root
      vim.ui.select({ "Keep", "Discard" }, { prompt = question(w, branch, changes) }, function(choice)
        if choice ~= "Discard" then
          util.notify("nvim-claude: worktree " .. util.display(w.name, 64) .. " kept")
          return done(false)
        end
        if before then
          before()
        end
        run({ "worktree", "remove", "--force", w.path }, root, function(c2, _, e2)
          if c2 ~= 0 then
            fail("git worktree remove failed: " .. util.display(e2, 300))
            return done(false)
          end
          made[w.path] = nil
          if not branch then
            return done(true)
          end
          run({ "branch", "-D", branch }, root, function(c3, _, e3)
            if c3 ~= 0 then
              fail("the worktree is gone, but deleting its branch failed: " .. util.display(e3, 300))
              return done(false)
            end
            util.notify("nvim-claude: worktree " .. util.display(w.name, 64) .. " and its branch " .. util.display(branch, 80) .. " discarded")
            done(true)
          end)
        end)
      end)
    end)
  end)
end

--- Forgets the worktree at path (after it was removed).
function M._forget(path)
  made[path] = nil
end

return M
