local wt = require("claude.worktree")
local config = require("claude.config")

-- git_repo makes a throwaway repository with one commit; returns its path
-- (resolved: git prints the resolved top level) and a cleanup.
local function git_repo()
  local dir = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(dir, "p")
  local function git(...)
    local out = vim.fn.system(vim.list_extend({ "git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t" }, { ... }))
    assert(vim.v.shell_error == 0, "git " .. table.concat({ ... }, " ") .. ": " .. out)
    return out
  end
  git("init", "-q")
  vim.fn.writefile({ "one" }, dir .. "/a.txt")
  git("add", "a.txt")
  git("commit", "-q", "-m", "start")
  return dir, git, function()
    vim.fn.delete(dir, "rf")
  end
end

-- create waits for worktree.create (a job) and returns the worktree, or
-- nil and the notices it gave.
local function create(name, cwd)
  local got, done = nil, false
  local notes = {}
  local orig = vim.notify
  vim.notify = function(msg)
    table.insert(notes, msg)
  end
  wt.create(name, function(w)
    got, done = w, true
  end, cwd)
  vim.wait(10000, function()
    return done or #notes > 0
  end, 20)
  vim.notify = orig
  return got, notes
end

return {
  split_args = function()
    for _, c in ipairs({
      { { "--worktree" }, { name = nil }, {} },
      { { "--worktree", "feat" }, { name = "feat" }, {} },
      { { "-w", "feat", "--model", "x" }, { name = "feat" }, { "--model", "x" } },
      { { "-w", "--model", "x" }, { name = nil }, { "--model", "x" } },
      { { "--worktree=feat", "-c" }, { name = "feat" }, { "-c" } },
      { { "--model", "x" }, nil, { "--model", "x" } },
    }) do
      local want, rest = wt.split_args(c[1])
      t.eq(c[2], want, table.concat(c[1], " "))
      t.eq(c[3], rest, table.concat(c[1], " ") .. " (rest)")
    end
  end,
  valid_name = function()
    for _, c in ipairs({
      { "feat-1", true },
      { "a.b_c", true },
      { "", false },
      { "-x", false },
      { ".x", false },
      { "a/b", false },
      { "a..b", false },
      { "x.lock", false },
      { "a b", false },
      { "a\27b", false },
      { string.rep("a", 65), false },
    }) do
      t.eq(c[2], wt.valid_name(c[1]), vim.inspect(c[1]))
    end
  end,
  layout_is_the_clis = function()
    config.apply({})
    t.eq("/r/.claude/worktrees/x", wt.path_of("/r", "x"), "default path")
    t.eq("worktree-x", wt.branch_of("x"), "default branch")
    config.apply({ worktree = { dir = "../wts", branch_prefix = "s/" } })
    t.eq("/r/../wts/x", wt.path_of("/r", "x"), "relative dir")
    t.eq("s/x", wt.branch_of("x"), "prefix")
    config.apply({ worktree = { dir = "/w/" } })
    t.eq("/w/x", wt.path_of("/r", "x"), "absolute dir")
    config.options = config.defaults()
  end,
  of_dir_recognises_a_cli_worktree = function()
    local w = wt.of_dir("/p/.claude/worktrees/brave-fox/src")
    t.eq("brave-fox", w and w.name, "name")
    t.eq("/p/.claude/worktrees/brave-fox", w and w.path, "path")
    t.eq(nil, wt.of_dir("/p/src"), "main tree")
    t.eq("wt:a^[b", wt.label("/p/.claude/worktrees/a\27b"), "label displayable")
  end,
  create_makes_branch_and_worktree = function()
    config.options = config.defaults()
    local dir, git, cleanup = git_repo()
    local w, notes = create("feat", dir)
    t.eq({}, notes, "notices")
    t.eq(dir .. "/.claude/worktrees/feat", w and w.path, "path")
    t.eq("worktree-feat", w and w.branch, "branch")
    t.eq(1, vim.fn.filereadable(dir .. "/.claude/worktrees/feat/a.txt"), "checked out")
    t.eq("worktree-feat", vim.trim(git("-C", w.path, "rev-parse", "--abbrev-ref", "HEAD")), "on its branch")
    t.eq(vim.trim(git("rev-parse", "HEAD")), w.base, "from HEAD")
    t.eq(vim.trim(git("rev-parse", "--abbrev-ref", "HEAD")), w.from, "made from the main tree's branch")
    t.eq("feat", wt.of_dir(w.path .. "/sub").name, "known")
    -- the same name again: refused, nothing made
    local again, notes2 = create("feat", dir)
    t.eq(nil, again, "second create")
    assert(notes2[1] and notes2[1]:find("already exists", 1, true), vim.inspect(notes2))
    git("worktree", "remove", "--force", w.path)
    wt._forget(w.path)
    cleanup()
  end,
  discard_asks_first_and_names_uncommitted_changes = function()
    config.options = config.defaults()
    local dir, git, cleanup = git_repo()
    local w = create("gone", dir)
    assert(w, "worktree made")
    vim.fn.writefile({ "draft" }, w.path .. "/draft.txt")
    local orig = vim.ui.select
    -- its notices are not the runner's output
    local orig_notify = vim.notify
    vim.notify = function() end
    local function discard(answer)
      local asked, result, ran = nil, nil, false
      vim.ui.select = function(items, o, cb)
        asked = o.prompt
        cb(answer)
      end
      wt.discard(w.path .. "/sub", function(removed)
        result = removed
      end, function()
        ran = true
      end)
      vim.wait(10000, function()
        return result ~= nil
      end, 20)
      return asked, result, ran
    end
    local asked, removed, ran = discard("Keep")
    vim.ui.select = orig
    t.eq(false, removed, "kept")
    t.eq(false, ran, "the session is not stopped when kept")
    assert(asked and asked:find("draft.txt", 1, true) and asked:find("worktree-gone", 1, true), tostring(asked))
    t.eq(1, vim.fn.isdirectory(w.path), "still there")
    asked, removed, ran = discard(nil) -- the question dismissed
    vim.ui.select = orig
    t.eq(false, removed, "dismissed")
    asked, removed, ran = discard("Discard")
    vim.ui.select = orig
    t.eq(true, removed, "discarded")
    t.eq(true, ran, "the session stopped first")
    t.eq(0, vim.fn.isdirectory(w.path), "worktree gone")
    t.eq("", vim.trim(git("branch", "--list", "worktree-gone")), "branch gone")
    t.eq(nil, wt.of_dir(w.path) and wt.of_dir(w.path).branch, "forgotten")
    vim.wait(20) -- the scheduled notices go to the stub
    vim.notify = orig_notify
    cleanup()
  end,
  create_outside_a_repository_starts_nothing = function()
    local dir = vim.fn.tempname()
    vim.fn.mkdir(dir, "p")
    local w, notes = create("x", dir)
    t.eq(nil, w, "worktree")
    assert(notes[1] and notes[1]:find("not in a git repository", 1, true), vim.inspect(notes))
    vim.fn.delete(dir, "rf")
  end,
  create_refuses_a_bad_name = function()
    local w, notes = create("../x", "/")
    t.eq(nil, w, "worktree")
    assert(notes[1] and notes[1]:find("not usable", 1, true), vim.inspect(notes))
  end,
}
