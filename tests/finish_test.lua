-- Finishing a worktree: the git plan of each strategy, the parsing of git's
-- answers, and the bring-in itself against real repositories (git as jobs;
-- the branch review's step needs the host and is tested end to end).
local wt = require("claude.worktree")
local config = require("claude.config")

-- repo makes a throwaway repository (a local identity, so that the
-- plugin's own commits work) with a.txt committed; returns its path and a
-- git runner.
local function repo(text)
  local dir = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(dir, "p")
  local function git(...)
    local out = vim.fn.system(vim.list_extend({ "git", "-C", dir }, { ... }))
    assert(vim.v.shell_error == 0, "git " .. table.concat({ ... }, " ") .. ": " .. out)
    return vim.trim(out)
  end
  git("init", "-q")
  git("config", "user.name", "t")
  git("config", "user.email", "t@t.invalid")
  git("config", "commit.gpgsign", "false")
  vim.fn.writefile(vim.split(text, "\n"), dir .. "/a.txt")
  git("add", "a.txt")
  git("commit", "-q", "-m", "start")
  return dir, git
end

local function read(path)
  return table.concat(vim.fn.readfile(path), "\n")
end

-- quiet runs fn with notices collected and vim.ui.select answering answer;
-- waits until done(res) is called, and returns res and the notices.
local function quiet(answer, fn)
  local notes, asked = {}, {}
  local orig_notify, orig_select = vim.notify, vim.ui.select
  vim.notify = function(msg)
    table.insert(notes, msg)
  end
  vim.ui.select = function(_, o, cb)
    table.insert(asked, o.prompt)
    cb(answer)
  end
  local res
  fn(function(r)
    res = r
  end)
  vim.wait(15000, function()
    return res ~= nil
  end, 20)
  vim.wait(200, function()
    return false
  end, 20) -- the scheduled notices
  vim.notify, vim.ui.select = orig_notify, orig_select
  assert(res, "never done; notices: " .. vim.inspect(notes))
  return res, table.concat(notes, "\n"), asked
end

local base_text = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine"

-- branch makes a worktree whose branch changes two hunks of a.txt (two and
-- eight), committed; returns the worktree, the review record and git.
local function branch(strat)
  config.apply({ worktree = { finish = strat } })
  local dir, git = repo(base_text)
  local w
  wt.create("fin", function(x)
    w = x
  end, dir)
  vim.wait(10000, function()
    return w ~= nil
  end, 20)
  assert(w, "no worktree")
  vim.fn.writefile(vim.split(base_text:gsub("two", "TWO"):gsub("eight", "EIGHT"), "\n"), w.path .. "/a.txt")
  local function wgit(...)
    local out = vim.fn.system(vim.list_extend({ "git", "-C", w.path }, { ... }))
    assert(vim.v.shell_error == 0, out)
    return vim.trim(out)
  end
  wgit("commit", "-q", "-am", "work")
  local tip = wgit("rev-parse", "HEAD")
  local rec = { base = git("rev-parse", "HEAD"), tip = tip, branch = w.branch, files = { ["a.txt"] = true } }
  return dir, git, w, rec, wgit
end

local function drop_eight(w)
  -- what gr on the EIGHT hunk and :w leave in the worktree
  vim.fn.writefile(vim.split(base_text:gsub("two", "TWO"), "\n"), w.path .. "/a.txt")
end

local kept = base_text:gsub("two", "TWO")

return {
  plan_per_strategy = function()
    local p = { name = "x", branch = "worktree-x", base = "b", tip = "t" }
    for _, c in ipairs({
      { "merge", { { "merge", "--no-ff", "--no-edit", "-m", "Merge worktree x (branch worktree-x)", "t" } } },
      { "squash", { { "merge", "--squash", "t" }, { "commit", "-q", "--no-edit", "-m", "Bring in worktree x (branch worktree-x), reviewed" } } },
      { "cherry-pick", { { "cherry-pick", "--keep-redundant-commits", "b..t" } } },
    }) do
      t.eq(c[2], wt.finish_plan(c[1], p), c[1])
    end
    t.eq("git reset --merge", wt.abort_hint("squash"), "squash's way back")
  end,
  -- The review queue's worktree tag comes from a transcript's directory:
  -- made displayable.
  label_is_displayable = function()
    t.eq("wt:feat", wt.label("/r/.claude/worktrees/feat/sub"), "a worktree's label")
    t.eq("", wt.label("/r/src"), "the main tree's")
    local l = wt.label("/r/.claude/worktrees/a\27[31mb\226\128\174c")
    assert(l ~= "" and not l:find("\27", 1, true) and not l:find("\226\128\174", 1, true), vim.inspect(l))
  end,
  status_paths = function()
    for _, c in ipairs({
      { { " M a.txt" }, { "a.txt" } },
      { { "?? sub/new.txt", "D  gone" }, { "sub/new.txt", "gone" } },
      { { "R  old -> new" }, { "new" } },
      { { '?? "a b"' }, { "a b" } },
      { {}, {} },
    }) do
      t.eq(c[2], wt.status_paths(c[1]), vim.inspect(c[1]))
    end
  end,
  conflict_items = function()
    local lines = { "a", "<<<<<<< HEAD", "x", "=======", "y", ">>>>>>> t", "b", "<<<<<<< HEAD", "z", ">>>>>>> t" }
    local items = wt.conflict_items("/r/f", lines, "worktree w")
    t.eq(2, #items, "two regions")
    t.eq({ 2, 6, 8, 10 }, { items[1].lnum, items[1].end_lnum, items[2].lnum, items[2].end_lnum }, "their lines")
    t.eq("conflict (worktree w), lines 2-6", items[1].text, "the text")
    local none = wt.conflict_items("/r/g", { "plain" }, "worktree \27[31mw")
    t.eq(1, #none, "a file without markers")
    assert(not none[1].text:find("\27", 1, true), "the label is displayable: " .. none[1].text)
  end,
  -- Each strategy brings in exactly the kept hunk (the dropped one never
  -- arrives), then asks before removing anything; Remove takes the
  -- worktree and its branch.
  bring_in_keeps_exactly_the_kept_hunks = function()
    for _, strat in ipairs({ "squash", "merge", "cherry-pick" }) do
      local dir, git, w, rec = branch(strat)
      drop_eight(w)
      local res, notes, asked = quiet(strat == "merge" and "Remove" or "Keep", function(done)
        wt._bring_in(w, rec, strat, done)
      end)
      t.eq(true, res.brought_in, strat .. ": brought in (" .. notes .. ")")
      t.eq(kept, read(dir .. "/a.txt"), strat .. ": the main tree's file")
      t.eq("", git("status", "--porcelain", "--untracked-files=no"), strat .. ": a clean main tree")
      assert(asked[1] and asked[1]:find("Remove it", 1, true), strat .. ": no question: " .. vim.inspect(asked))
      if strat == "merge" then
        t.eq(true, res.removed, "removed")
        t.eq(0, vim.fn.isdirectory(w.path), "the worktree is gone")
        t.eq("", git("branch", "--list", w.branch), "the branch is gone")
      else
        t.eq(false, res.removed, strat .. ": kept")
        t.eq(1, vim.fn.isdirectory(w.path), strat .. ": the worktree stays")
      end
      vim.fn.delete(dir, "rf")
    end
  end,
  -- A main tree with uncommitted changes refuses, naming them; nothing
  -- changes there (the file keeps the user's edit, HEAD stays).
  dirty_main_tree_refused = function()
    local dir, git, w, rec = branch("squash")
    local head = git("rev-parse", "HEAD")
    vim.fn.writefile({ "mine" }, dir .. "/a.txt")
    local res, notes = quiet("Keep", function(done)
      wt._bring_in(w, rec, "squash", done)
    end)
    t.eq("dirty", res.refused, "refused")
    assert(notes:find("uncommitted changes", 1, true) and notes:find("a.txt", 1, true), notes)
    t.eq("mine", read(dir .. "/a.txt"), "the user's edit stays")
    t.eq(head, git("rev-parse", "HEAD"), "HEAD stays")
    vim.fn.delete(dir, "rf")
  end,
  -- A conflict ends as git's conflict: markers in the file (and its
  -- buffer), a quickfix item per region; no commit made, nothing removed.
  conflict_lands_as_markers_and_quickfix = function()
    for _, strat in ipairs({ "squash", "merge", "cherry-pick" }) do
      local dir, git, w, rec = branch(strat)
      local head = git("rev-parse", "HEAD")
      vim.fn.writefile(vim.split(base_text:gsub("two", "deux"), "\n"), dir .. "/a.txt")
      git("commit", "-q", "-am", "main moved")
      local moved = git("rev-parse", "HEAD")
      assert(moved ~= head)
      local res, notes, asked = quiet("Remove", function(done)
        wt._bring_in(w, rec, strat, done)
      end)
      t.eq(true, res.conflict, strat .. ": a conflict (" .. notes .. ")")
      t.eq(0, #asked, strat .. ": no removal question")
      assert(read(dir .. "/a.txt"):find("<<<<<<<", 1, true), strat .. ": no markers")
      local qf = vim.fn.getqflist({ title = 0, items = 0 })
      assert(qf.title:find("conflicts", 1, true), qf.title)
      t.eq(1, #qf.items, strat .. ": one region")
      t.eq(dir .. "/a.txt", vim.api.nvim_buf_get_name(qf.items[1].bufnr), strat .. ": its file")
      local b = vim.fn.bufnr(dir .. "/a.txt")
      assert(table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find("<<<<<<<", 1, true), strat .. ": the buffer shows the markers")
      t.eq(moved, git("rev-parse", "HEAD"), strat .. ": no commit")
      assert(notes:find(wt.abort_hint(strat), 1, true), notes)
      t.eq(1, vim.fn.isdirectory(w.path), "the worktree stays")
      pcall(vim.cmd, "cclose")
      pcall(vim.api.nvim_buf_delete, b, { force = true })
      vim.fn.delete(dir, "rf")
    end
  end,
  -- The two steps of finish: uncommitted work is named and, only on
  -- "Commit", committed; the branch's review is asked of the host with the
  -- merge base and the tip (the notice says when the main tree is on
  -- another branch than the worktree's origin); the second run brings in
  -- what is kept and removes after the question.
  finish_two_steps = function()
    config.apply({ worktree = { finish = "squash" } })
    local dir, git = repo(base_text)
    local w
    wt.create("two", function(x)
      w = x
    end, dir)
    vim.wait(10000, function()
      return w ~= nil
    end, 20)
    assert(w, "no worktree")
    assert(w.from, "made from a branch")
    vim.fn.writefile(vim.split(base_text:gsub("two", "TWO"):gsub("eight", "EIGHT"), "\n"), w.path .. "/a.txt")
    git("checkout", "-q", "-b", "other")
    local server, review = require("claude.server"), require("claude.review")
    local orig_async, orig_show = server.request_async, review.show_branch
    local asked_host, shown = {}, nil
    server.request_async = function(method, params, cb)
      table.insert(asked_host, { method = method, params = params })
      if method == "review_branch" then
        return cb({ scope = "branch", items = { { path = params.dir .. "/a.txt", session = "branch", status = "modified" } } })
      end
      cb({})
    end
    review.show_branch = function(res)
      shown = res
    end
    local ok, err = pcall(function()
      -- Cancel: nothing committed, the change named.
      local res, notes = quiet("Cancel", function(done)
        wt.finish(w.path, done)
      end)
      t.eq("uncommitted", res.refused, "cancelled")
      assert(notes:find("a.txt", 1, true), notes)
      t.eq(0, #asked_host, "no review without the commit")
      -- Commit: the review opens.
      local res2, notes2, asked = quiet("Commit", function(done)
        wt.finish(w.path, done)
      end)
      t.eq(true, res2.reviewing, "reviewing (" .. notes2 .. ")")
      assert(asked[1]:find("1 uncommitted change", 1, true) and asked[1]:find("a.txt", 1, true), asked[1])
      local tip = vim.trim(vim.fn.system({ "git", "-C", w.path, "rev-parse", "HEAD" }))
      t.eq({ dir = w.path, base = w.base, tip = tip, label = "branch worktree-two" }, asked_host[1].params, "the review asked of the host")
      assert(shown and shown.scope == "branch", "the panel shows the branch review")
      assert(notes2:find("is on other now, not on " .. w.from, 1, true), notes2)
      t.eq(true, wt.reviewing(w.path), "a review waits")
      -- gr + :w on EIGHT, then the second run: exactly the kept hunk.
      drop_eight(w)
      local res3, notes3 = quiet("Remove", function(done)
        wt.finish(w.path, done)
      end)
      t.eq(true, res3.brought_in, "brought in (" .. notes3 .. ")")
      t.eq(true, res3.removed, "removed")
      t.eq(kept, read(dir .. "/a.txt"), "the main tree's file")
      t.eq(false, wt.reviewing(w.path), "the review is over")
    end)
    server.request_async, review.show_branch = orig_async, orig_show
    vim.fn.delete(dir, "rf")
    assert(ok, err)
  end,
  -- git refusing — before it starts (an untracked file of the main tree
  -- in the way) or after (a hook refusing the commit) — leaves the main
  -- tree as it was, says so, and offers no removal.
  refusals_leave_the_main_tree_as_it_was = function()
    local cases = {
      { strat = "squash", hook = "pre-commit" },
      { strat = "merge", hook = "pre-merge-commit" },
      { strat = "squash", untracked = true },
      { strat = "merge", untracked = true },
      { strat = "cherry-pick", untracked = true },
    }
    for _, c in ipairs(cases) do
      local what = c.strat .. (c.hook and (" + " .. c.hook) or " + untracked")
      local dir, git, w, rec, wgit = branch(c.strat)
      if c.untracked then
        vim.fn.writefile({ "theirs" }, w.path .. "/new.txt")
        wgit("add", "new.txt")
        wgit("commit", "-q", "-m", "new")
        rec.tip = wgit("rev-parse", "HEAD")
        rec.files["new.txt"] = true
        vim.fn.writefile({ "mine" }, dir .. "/new.txt")
      else
        local hook = dir .. "/.git/hooks/" .. c.hook
        vim.fn.writefile({ "#!/bin/sh", "echo refused by the hook >&2", "exit 1" }, hook)
        vim.fn.setfperm(hook, "rwxr-xr-x")
      end
      local head = git("rev-parse", "HEAD")
      local res, notes, asked = quiet("Remove", function(done)
        wt._bring_in(w, rec, c.strat, done)
      end)
      t.eq(nil, res.brought_in, what .. ": not brought in")
      assert(notes:find("the main tree is as it was", 1, true), what .. ": " .. notes)
      t.eq(head, git("rev-parse", "HEAD"), what .. ": HEAD")
      t.eq("", git("status", "--porcelain", "--untracked-files=no"), what .. ": tracked files")
      t.eq(base_text, read(dir .. "/a.txt"), what .. ": a.txt")
      if c.untracked then
        t.eq("mine", read(dir .. "/new.txt"), what .. ": the untracked file")
      end
      t.eq(0, #asked, what .. ": no question")
      vim.fn.delete(dir, "rf")
    end
  end,
  -- A file the review did not show, changed in the worktree: refused by
  -- name; nothing committed on the branch, nothing brought in.
  unreviewed_change_refused = function()
    local dir, git, w, rec, wgit = branch("squash")
    vim.fn.writefile({ "later" }, w.path .. "/late.txt")
    local head = git("rev-parse", "HEAD")
    local res, notes = quiet("Keep", function(done)
      wt._bring_in(w, rec, "squash", done)
    end)
    t.eq(nil, res.brought_in, "not brought in")
    assert(notes:find("late.txt", 1, true), notes)
    t.eq(rec.tip, wgit("rev-parse", "HEAD"), "no commit on the branch")
    t.eq(head, git("rev-parse", "HEAD"), "main unchanged")
    vim.fn.delete(dir, "rf")
  end,
}
