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

local made = {} -- path → { name, branch, path, root, base, from }

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

-- commit_all commits everything in the worktree at path (git add -A, then
-- commit with message); when a step fails it says which, and that
-- `nothing` happened. cb(ok).
local function commit_all(path, message, nothing, cb)
  run({ "add", "-A", "--", "." }, path, function(c, _, e)
    if c ~= 0 then
      fail("git add in the worktree failed: " .. util.display(e, 300) .. "; " .. nothing)
      return cb(false)
    end
    run({ "commit", "-q", "-m", message }, path, function(c2, _, e2)
      if c2 ~= 0 then
        fail("git commit in the worktree failed: " .. util.display(e2, 300) .. "; " .. nothing)
        return cb(false)
      end
      cb(true)
    end)
  end)
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
  run({ "rev-parse", "--show-toplevel", "HEAD", "--abbrev-ref", "HEAD" }, cwd, function(code, out, err)
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
    -- the branch it is made from (nil: a detached HEAD); finishing says
    -- so when the main tree is on another one by then
    local from = out[3] ~= "HEAD" and out[3] or nil
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
      local w = { name = name, branch = branch, path = path, root = root, base = base, from = from }
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
          M._forget_review(w.path)
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

-- Finishing a worktree ---------------------------------------------------
--
-- Two steps, both from :ClaudeWorktree finish (or F in :ClaudeSessions):
-- the first reviews the branch against where it left the main line (the
-- merge base) in the review queue's own panel, where gr / gR drop a hunk
-- or a file in the worktree's copy and :w keeps the drop; the second
-- brings in what is left — the worktree's files as they are — by the
-- strategy of worktree.finish, then asks whether to remove the worktree
-- and its branch. git runs as jobs throughout.

local strategies = { merge = true, squash = true, ["cherry-pick"] = true }

-- reviewing: worktree path → { base, tip, branch, files = { rel = true } }
-- the branch review finish opened (its files: every file the branch
-- changed, dropped ones too).
local reviewing = {}

local function strategy()
  local s = opts().finish
  return strategies[s] and s or "squash"
end

--- The git commands that bring the reviewed commit tip (the branch with
--- its drops) into the main tree, in order, for a strategy: p is
--- { name, branch, base, tip }. The commits are named by id, never by a
--- name from outside; messages are argv, never a shell.
function M.finish_plan(strat, p)
  local what = "worktree " .. p.name .. (p.branch and (" (branch " .. p.branch .. ")") or "")
  if strat == "merge" then
    return { { "merge", "--no-ff", "--no-edit", "-m", "Merge " .. what, p.tip } }
  elseif strat == "cherry-pick" then
    return { { "cherry-pick", "--keep-redundant-commits", p.base .. ".." .. p.tip } }
  end
  return {
    { "merge", "--squash", p.tip },
    { "commit", "-q", "--no-edit", "-m", "Bring in " .. what .. ", reviewed" },
  }
end

--- How to take back a conflicted bring-in of a strategy (for the notice).
function M.abort_hint(strat)
  if strat == "merge" then
    return "git merge --abort"
  elseif strat == "cherry-pick" then
    return "git cherry-pick --abort"
  end
  return "git reset --merge"
end

--- The paths of `git status --porcelain` lines (renames: the new path).
function M.status_paths(lines)
  local out = {}
  for _, l in ipairs(lines or {}) do
    local p = l:sub(4)
    local arrow = p:find(" -> ", 1, true)
    if arrow then
      p = p:sub(arrow + 4)
    end
    if p:sub(1, 1) == '"' then
      p = p:sub(2, -2)
    end
    if p ~= "" then
      table.insert(out, p)
    end
  end
  return out
end

--- The quickfix items of a conflicted file's lines: one at each
--- "<<<<<<<" marker (the region's start), or one at line 1 when the file
--- has none (a delete/modify or binary conflict). Texts are displayable.
function M.conflict_items(file, lines, label)
  local items = {}
  local i = 1
  while i <= #lines do
    if lines[i]:sub(1, 8) == "<<<<<<< " or lines[i] == "<<<<<<<" then
      local j = i + 1
      while j <= #lines and not (lines[j]:sub(1, 8) == ">>>>>>> " or lines[j] == ">>>>>>>") do
        j = j + 1
      end
      table.insert(items, {
        filename = file,
        lnum = i,
        end_lnum = math.min(j, #lines),
        col = 1,
        type = "E",
        text = string.format("conflict (%s), lines %d-%d", util.display(label, 60), i, math.min(j, #lines)),
      })
      i = j + 1
    else
      i = i + 1
    end
  end
  if #items == 0 then
    table.insert(items, { filename = file, lnum = 1, col = 1, type = "E", text = "conflict (" .. util.display(label, 60) .. "): no markers (deleted on one side, or binary)" })
  end
  return items
end

-- names: at most n display-safe paths of list, one a line, indented.
local function names(list, n)
  local out = {}
  for i = 1, math.min(#list, n or 20) do
    table.insert(out, "  " .. util.display(list[i], 160))
  end
  if #list > (n or 20) then
    table.insert(out, string.format("  … and %d more", #list - (n or 20)))
  end
  return table.concat(out, "\n")
end

-- stop_sessions stops every live session that runs in the worktree at
-- path (before it is removed).
local function stop_sessions(path)
  local ok, list = pcall(function()
    return require("claude").sessions()
  end)
  for _, s in ipairs(ok and list or {}) do
    local d = s.dir
    if type(d) == "string" and (d == path or d:sub(1, #path + 1) == path .. "/") and s.state ~= "exited" then
      pcall(require("claude.sessions").stop, s)
    end
  end
end
M._stop_sessions = stop_sessions

-- modified_under: the modified buffers of files under dir.
local function modified_under(dir)
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified and vim.bo[b].buftype == "" then
      local n = vim.api.nvim_buf_get_name(b)
      if n:sub(1, #dir + 1) == dir .. "/" then
        table.insert(out, n)
      end
    end
  end
  table.sort(out)
  return out
end

-- After a bring-in: the question whether to remove worktree and branch.
local function offer_removal(w, branch, done)
  local prompt = string.format(
    "Worktree %s is brought in. Remove it (%s)%s?",
    util.display(w.name, 64),
    util.display(vim.fn.fnamemodify(w.path, ":~"), 160),
    branch and (" and delete its branch " .. util.display(branch, 80)) or ""
  )
  vim.ui.select({ "Keep", "Remove" }, { prompt = prompt }, function(choice)
    if choice ~= "Remove" then
      util.notify("nvim-claude: worktree " .. util.display(w.name, 64) .. " kept")
      return done({ brought_in = true, removed = false })
    end
    stop_sessions(w.path)
    run({ "worktree", "remove", w.path }, w.root, function(c, _, e)
      if c ~= 0 then
        fail("git worktree remove failed: " .. util.display(e, 300) .. "; the worktree stays")
        return done({ brought_in = true, removed = false })
      end
      made[w.path] = nil
      if not branch then
        return done({ brought_in = true, removed = true })
      end
      run({ "branch", "-D", branch }, w.root, function(c2, _, e2)
        if c2 ~= 0 then
          fail("the worktree is gone, but deleting its branch failed: " .. util.display(e2, 300))
          return done({ brought_in = true, removed = true })
        end
        util.notify("nvim-claude: worktree " .. util.display(w.name, 64) .. " and its branch " .. util.display(branch, 80) .. " removed")
        done({ brought_in = true, removed = true })
      end)
    end)
  end)
end

-- conflicted: the bring-in stopped on a conflict: the conflicted files'
-- buffers show the markers, the quickfix list the regions.
local function conflicted(w, strat, files)
  local items = {}
  local label = "worktree " .. w.name
  for _, rel in ipairs(files) do
    local abs = w.root .. "/" .. rel
    local readable = vim.fn.filereadable(abs) == 1
    local ok, lines = pcall(vim.fn.readfile, abs)
    vim.list_extend(items, M.conflict_items(abs, (readable and ok) and lines or {}, label))
    if readable then
      -- its buffer shows the markers (a file deleted on one side has none)
      local b = vim.fn.bufadd(abs)
      pcall(vim.fn.bufload, b)
      if not vim.bo[b].modified then
        util.checktime(b)
      end
    end
  end
  vim.fn.setqflist({}, " ", { title = "Claude worktree " .. util.display(w.name, 64) .. ": conflicts", items = items })
  pcall(vim.cmd, "botright copen")
  fail(string.format(
    "bringing in worktree %s (%s) stopped on conflicts in %d file%s (the quickfix list has them):\n%s\nResolve, then commit; or take it all back with `%s` in %s",
    util.display(w.name, 64),
    strat,
    #files,
    #files == 1 and "" or "s",
    names(files),
    M.abort_hint(strat),
    util.display(vim.fn.fnamemodify(w.root, ":~"), 160)
  ))
end

-- reload: the main tree's loaded, unmodified buffers follow the files.
local function reload(root)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified and vim.bo[b].buftype == "" then
      local n = vim.api.nvim_buf_get_name(b)
      if n:sub(1, #root + 1) == root .. "/" then
        util.checktime(b)
      end
    end
  end
end

-- rev: the commit id of r in dir, to cb (nil when git cannot say).
local function rev(dir, r, cb)
  run({ "rev-parse", "--verify", "-q", r .. "^{commit}" }, dir, function(code, out)
    cb(code == 0 and out[1] or nil)
  end)
end

--- The command that takes back what a strategy began when its step i
--- failed without a conflict (nil: nothing can have begun).
function M.undo_of(strat, i)
  if strat == "cherry-pick" then
    return { "cherry-pick", "--abort" }
  elseif strat == "merge" then
    return { "merge", "--abort" } -- (a hook refusing the merge commit)
  elseif i > 1 then
    return { "reset", "-q", "--merge" } -- the squash's commit failed
  end
end

-- apply runs the plan's commands in the main tree one after another;
-- on a failure it tells a conflict (markers, quickfix) from a refusal.
-- A refusal takes back what git began and says whether the main tree is
-- as it was (its HEAD and its tracked files): nothing is half-applied,
-- and if git could not take it back, the notice says so.
local function apply(w, strat, plan, done)
  local i = 0
  local before
  local function step()
    i = i + 1
    if i > #plan then
      reload(w.root)
      return done(true)
    end
    run(plan[i], w.root, function(code, _, err)
      if code == 0 then
        return step()
      end
      run({ "-c", "core.quotepath=off", "diff", "--name-only", "--diff-filter=U" }, w.root, function(_, unmerged)
        if #unmerged > 0 then
          reload(w.root)
          conflicted(w, strat, unmerged)
          return done(false, "conflict")
        end
        local msg = "bringing in worktree "
          .. util.display(w.name, 64)
          .. " failed: "
          .. util.display(err ~= "" and err or ("git exit " .. code), 400)
        local function settle()
          rev(w.root, "HEAD", function(now)
            run({ "-c", "core.quotepath=off", "status", "--porcelain", "--untracked-files=no" }, w.root, function(_, st)
              reload(w.root)
              if now == before and #st == 0 then
                fail(msg .. "; the main tree is as it was")
              else
                fail(msg .. "; the main tree is not as it was, see git status:\n" .. names(M.status_paths(st)))
              end
              done(false, "refused")
            end)
          end)
        end
        local undo = M.undo_of(strat, i)
        if not undo then
          return settle()
        end
        run(undo, w.root, settle)
      end)
    end)
  end
  rev(w.root, "HEAD", function(h)
    before = h
    step()
  end)
end

-- review_branch opens the branch's review in the queue's panel.
local function review_branch(w, branch, done)
  run({ "rev-parse", "HEAD", "--abbrev-ref", "HEAD" }, w.root, function(mc, mout)
    local main = mc == 0 and mout[1] or nil
    local main_branch = mc == 0 and mout[2] or nil
    rev(w.path, "HEAD", function(tip)
      if not (main and tip) then
        fail("cannot read the commits of " .. util.display(w.name, 64) .. " and the main tree; nothing done")
        return done({})
      end
      run({ "merge-base", main, tip }, w.root, function(code, out, err)
        local base = out[1]
        if code ~= 0 or not base then
          fail("the branch of " .. util.display(w.name, 64) .. " has no common commit with the main tree: " .. util.display(err, 200))
          return done({})
        end
        if base == tip then
          util.notify("nvim-claude: the branch of worktree " .. util.display(w.name, 64) .. " has nothing the main tree lacks; nothing to bring in")
          return done({ nothing = true })
        end
        require("claude.server").request_async(
          "review_branch",
          { dir = w.path, base = base, tip = tip, label = "branch " .. (branch or w.name) },
          function(res, rerr)
            if not res then
              fail(util.display(rerr or "the review queue did not answer", 300))
              return done({})
            end
            local files = {}
            for _, it in ipairs(res.items or {}) do
              local p = it.path
              if p:sub(1, #w.path + 1) == w.path .. "/" then
                files[p:sub(#w.path + 2)] = true
              end
            end
            -- One branch review at a time, as the queue keeps one.
            for k in pairs(reviewing) do
              reviewing[k] = nil
            end
            reviewing[w.path] = { base = base, tip = tip, branch = branch, files = files }
            require("claude.review").show_branch(res)
            local into = ""
            if w.from and main_branch and main_branch ~= w.from then
              into = string.format(
                " The main tree is on %s now, not on %s, which the worktree was made from: it would come into %s.",
                util.display(main_branch, 80),
                util.display(w.from, 80),
                util.display(main_branch, 80)
              )
            end
            util.notify(
              "nvim-claude: reviewing the branch of worktree "
                .. util.display(w.name, 64)
                .. " against where it left the main tree. <CR> opens a file's diff; gr drops the hunk under the cursor, gR the file (:w keeps a drop); "
                .. ":ClaudeWorktree finish (F in :ClaudeSessions) again brings in what is kept ("
                .. strategy()
                .. ")."
                .. into
            )
            done({ reviewing = true })
          end
        )
      end)
    end)
  end)
end

-- bring_in: the second step, after the review.
local function bring_in(w, rec, strat, done)
  local unsaved = modified_under(w.path)
  vim.list_extend(unsaved, modified_under(w.root))
  if #unsaved > 0 then
    fail("buffers with unsaved changes (write them — :w keeps a drop — or undo them):\n" .. names(unsaved) .. "\nNothing brought in")
    return done({})
  end
  run({ "var", "GIT_COMMITTER_IDENT" }, w.root, function(idc, _, iderr)
    if idc ~= 0 then
      fail("git has no identity to commit with: " .. util.display(iderr, 300) .. "; nothing brought in")
      return done({})
    end
    run({ "-c", "core.quotepath=off", "status", "--porcelain", "--untracked-files=no" }, w.root, function(c1, dirty, e1)
      if c1 ~= 0 then
        fail("git status in the main tree failed: " .. util.display(e1, 300) .. "; nothing brought in")
        return done({})
      end
      if #dirty > 0 then
        fail("the main tree has uncommitted changes; commit or stash them first. Nothing brought in:\n" .. names(M.status_paths(dirty)))
        return done({ refused = "dirty" })
      end
      rev(w.path, "HEAD", function(tip)
        if tip ~= rec.tip then
          reviewing[w.path] = nil
          fail("the branch of worktree " .. util.display(w.name, 64) .. " has new commits since its review: review it again (:ClaudeWorktree finish). Nothing brought in")
          return done({})
        end
        run({ "-c", "core.quotepath=off", "status", "--porcelain", "--untracked-files=all" }, w.path, function(c2, changes, e2)
          if c2 ~= 0 then
            fail("git status in the worktree failed: " .. util.display(e2, 300) .. "; nothing brought in")
            return done({})
          end
          local others = {}
          for _, p in ipairs(M.status_paths(changes)) do
            if not rec.files[p] then
              table.insert(others, p)
            end
          end
          if #others > 0 then
            fail("files changed in the worktree that its review did not show (commit them and finish again, to review them):\n" .. names(others) .. "\nNothing brought in")
            return done({})
          end
          local function go(tip2)
            local plan = M.finish_plan(strat, { name = w.name, branch = rec.branch, base = rec.base, tip = tip2 })
            apply(w, strat, plan, function(ok, why)
              if not ok then
                return done({ conflict = why == "conflict", refused = why })
              end
              reviewing[w.path] = nil
              require("claude.review").end_branch()
              util.notify("nvim-claude: worktree " .. util.display(w.name, 64) .. " brought in (" .. strat .. ")")
              offer_removal(w, rec.branch, done)
            end)
          end
          if #changes == 0 then
            return go(tip)
          end
          -- The drops of the review: one commit on the branch, so that what
          -- comes in is exactly what was kept.
          commit_all(w.path, "Drop what the review of worktree " .. w.name .. " did not keep", "nothing brought in", function(ok)
            if not ok then
              return done({})
            end
            rev(w.path, "HEAD", function(tip2)
              go(tip2)
            end)
          end)
        end)
      end)
    end)
  end)
end

M._bring_in = bring_in

--- Forgets the branch review of the worktree at path, if one is open (it
--- was discarded or removed).
function M._forget_review(path)
  if reviewing[path] then
    reviewing[path] = nil
    require("claude.review").end_branch()
  end
end
M._reviewing = reviewing

--- Finishes the worktree that holds path: the first call reviews its
--- branch (after committing its uncommitted changes, if the user says so),
--- the next brings in what the review kept and asks whether to remove the
--- worktree and branch. done(result) runs on the main loop with
--- { reviewing | nothing | brought_in, removed | conflict | refused }.
function M.finish(path, done)
  done = done or function() end
  local w = M.of_dir(path)
  if not w then
    fail(util.display(path, 160) .. " is in no session worktree; nothing finished")
    return done({})
  end
  local cwd = vim.fn.getcwd(-1, -1)
  if cwd == w.path or cwd:sub(1, #w.path + 1) == w.path .. "/" then
    fail("Neovim's directory is inside the worktree " .. util.display(w.name, 64) .. "; :cd out of it first. Nothing finished")
    return done({})
  end
  local strat = strategy()
  run({ "rev-parse", "--abbrev-ref", "HEAD" }, w.path, function(hc, head, herr)
    if hc ~= 0 then
      fail("git in " .. util.display(w.path, 160) .. " failed: " .. util.display(herr, 300) .. "; nothing finished")
      return done({})
    end
    local branch = head[1]
    if branch == nil or branch == "HEAD" or branch == "" then
      branch = nil
    end
    local rec = reviewing[w.path]
    if rec then
      return bring_in(w, rec, strat, done)
    end
    run({ "-c", "core.quotepath=off", "status", "--porcelain", "--untracked-files=all" }, w.path, function(code, changes, err)
      if code ~= 0 then
        fail("git status in " .. util.display(w.path, 160) .. " failed: " .. util.display(err, 300) .. "; nothing finished")
        return done({})
      end
      if #changes == 0 then
        return review_branch(w, branch, done)
      end
      local paths = M.status_paths(changes)
      local prompt = string.format(
        "Worktree %s has %d uncommitted change%s. Commit %s on %s to review and bring in, or cancel?\n%s",
        util.display(w.name, 64),
        #paths,
        #paths == 1 and "" or "s",
        #paths == 1 and "it" or "them",
        util.display(branch or "its HEAD", 80),
        names(paths)
      )
      vim.ui.select({ "Cancel", "Commit" }, { prompt = prompt }, function(choice)
        if choice ~= "Commit" then
          fail("worktree " .. util.display(w.name, 64) .. " has uncommitted changes; nothing finished:\n" .. names(paths))
          return done({ refused = "uncommitted" })
        end
        commit_all(w.path, "Work of the Claude session in worktree " .. w.name, "nothing finished", function(ok)
          if not ok then
            return done({})
          end
          review_branch(w, branch, done)
        end)
      end)
    end)
  end)
end

--- Whether the worktree at path has a branch review waiting for its
--- bring-in.
function M.reviewing(path)
  local w = M.of_dir(path)
  return w ~= nil and reviewing[w.path] ~= nil
end

-- The worktrees of the repository holding cwd, to cb as
-- { {name, path}, ... } (not the main one): git worktree list, a job.
local function worktrees(cwd, cb)
  run({ "worktree", "list", "--porcelain" }, cwd, function(code, out)
    local list, first = {}, true
    for _, l in ipairs(code == 0 and out or {}) do
      local p = l:match("^worktree (.+)$")
      if p then
        if not first then
          table.insert(list, { name = vim.fn.fnamemodify(p, ":t"), path = p })
        end
        first = false
      end
    end
    cb(list)
  end)
end

--- The worktree named name (nil: the one holding the current buffer's
--- file, else the only one) among the repository's, to cb(path) — nil
--- after saying why.
function M.resolve(name, cb)
  local cwd = vim.fn.getcwd(-1, -1)
  worktrees(cwd, function(list)
    for _, w in pairs(made) do
      local seen = false
      for _, x in ipairs(list) do
        seen = seen or x.path == w.path
      end
      if not seen and vim.fn.isdirectory(w.path) == 1 then
        table.insert(list, { name = w.name, path = w.path })
      end
    end
    if name and name ~= "" then
      for _, x in ipairs(list) do
        if x.name == name or x.path == name then
          return cb(x.path)
        end
      end
      fail("no worktree named " .. util.display(name, 64) .. " in this repository")
      return cb(nil)
    end
    local file = vim.api.nvim_buf_get_name(0)
    for _, x in ipairs(list) do
      if file:sub(1, #x.path + 1) == x.path .. "/" then
        return cb(x.path)
      end
    end
    if #list == 1 then
      return cb(list[1].path)
    end
    local ns = {}
    for _, x in ipairs(list) do
      table.insert(ns, util.display(x.name, 64))
    end
    fail(#list == 0 and "this repository has no worktree besides the main one" or ("which worktree? " .. table.concat(ns, ", ")))
    cb(nil)
  end)
end

--- :ClaudeWorktree finish|discard [name].
function M.command(args)
  local verb, name = args[1], args[2]
  if verb ~= "finish" and verb ~= "discard" then
    fail(":ClaudeWorktree takes `finish [name]` or `discard [name]`, not " .. util.display(tostring(verb or ""), 40))
    return
  end
  M.resolve(name, function(path)
    if not path then
      return
    end
    if verb == "finish" then
      M.finish(path)
    else
      M.discard(path, nil, function()
        stop_sessions(path)
      end)
    end
  end)
end

--- Completion of :ClaudeWorktree: the verbs, then the worktrees' names.
function M.complete(lead, line)
  local words = vim.split(line, "%s+")
  if #words <= 2 then
    return vim.tbl_filter(function(v)
      return v:sub(1, #lead) == lead
    end, { "finish", "discard" })
  end
  local out = {}
  for _, w in pairs(made) do
    out[w.name] = true
  end
  local root = vim.fn.getcwd(-1, -1)
  for _, d in ipairs(vim.fn.glob(root .. "/.claude/worktrees/*", false, true)) do
    out[vim.fn.fnamemodify(d, ":t")] = true
  end
  local list = vim.tbl_filter(function(n)
    return n:sub(1, #lead) == lead
  end, vim.tbl_keys(out))
  table.sort(list)
  return list
end

return M
