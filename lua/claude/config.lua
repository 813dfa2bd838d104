-- Options: defaults, validation and the merged result.
--
-- The one source of nvim-claude's options: the defaults below, the schema
-- that validates them, and host_options(), the part the Go host gets. The
-- classes describe setup()'s table (every field optional there), so that
-- editors with lua-language-server complete and check it.

---@class claude.Config
---@field bin? string the Go host binary (default: <plugin root>/bin/nvim-claude)
---@field terminal_cmd? string|string[] the Claude Code CLI command (default "claude")
---@field env? table<string, string> extra environment for the CLI (replaces, not merges)
---@field auto_start? boolean start the server with Neovim
---@field single_session? boolean a newly connected CLI replaces the older ones
---@field log_level? "trace"|"debug"|"info"|"warn"|"error"
---@field log_file? string default: stdpath("log")/nvim-claude.log
---@field terminal? claude.Config.Terminal
---@field notify? {needs_input?: boolean}
---@field execute? claude.Config.Execute
---@field diagnostics? {settle_ms?: number}
---@field selection? {track?: boolean, debounce_ms?: number, deny?: string[]}
---@field security? claude.Config.Security
---@field mentions? {focus_terminal?: boolean}
---@field editor_tools? {enable?: boolean, allow?: string[]}
---@field sessions? claude.Config.Sessions
---@field chat? claude.Config.Chat
---@field diff? claude.Config.Diff
---@field install? {base_url?: string} where :ClaudeInstall downloads the prebuilt host from
---@field review? claude.Config.Review
---@field dictation? claude.Config.Dictation

---@class claude.Config.Dictation
---@field engine? "auto"|"whisper"|"pocketsphinx"|"cmd"
---@field recorder? {cmd?: string|string[]} records a 16 kHz mono WAV to "{file}"
---@field whisper? {cmd?: string, model?: string, language?: string, args?: string[], prompt?: boolean|string|fun(words: string): string} whisper.cpp's CLI; prompt: its initial prompt (true: the words of the moment)
---@field pocketsphinx? {cmd?: string, args?: string[]}
---@field cmd? string|string[] an engine: reads the WAV "{file}", prints the text
---@field max_seconds? number a recording stops by itself after this long (0: never)
---@field keys? {toggle?: string|false}

---@class claude.Config.Sessions
---@field hooks? boolean :ClaudeStart gives the CLI hooks that report its state
---@field http_hooks? boolean as HTTP hooks to the IDE server (false: command hooks, which need editor_tools.enable)
---@field answer? boolean its permission prompts and plans can be answered from Neovim
---@field notify? boolean vim.notify when a hidden session needs input or finishes
---@field notifier? string[] also run this command with the message as its last argument (e.g. notify-send)

---@class claude.Config.Terminal
---@field provider? "native"|"snacks"|"none"
---@field layout? "split"|"float"
---@field split_side? "right"|"left"|"bottom"|"top"
---@field width? number fraction of the editor (< 1) or columns
---@field float? {width?: number, height?: number, border?: string}

---@class claude.Config.Execute
---@field confirm? boolean show the code in a float and ask before each run
---@field timeout_ms? number interrupt a run after this long (0: no limit)
---@field max_output? number characters of text output kept per run (0: no cap)
---@field python? string interpreter with jupyter_client and ipykernel
---@field grace_ms? number keys within this long of the float never answer it

---@class claude.Config.Security
---@field deny? string[] files whose contents never leave Neovim (globs)
---@field deny_extra? string[] appended to deny
---@field allow_home? boolean let a home-directory (or /) workspace be read and written

---@class claude.Config.Chat
---@field cmd? string the CLI for chats (default: the first word of terminal_cmd)
---@field mode? "manual"|"acceptEdits"|"plan"|"auto"|"dontAsk"|"default"
---@field model? string
---@field effort? "low"|"medium"|"high"|"xhigh"|"max"
---@field editor_tools? boolean offer the editor tools to the chat's model
---@field allowed_tools? string[]
---@field disallowed_tools? string[]
---@field env? table<string, string>
---@field layout? "right"|"left"|"bottom"|"tab"
---@field width? number
---@field prompt_height? number
---@field notify? boolean
---@field history_size? number
---@field treesitter_max_lines? number
---@field keys? table<string, string>

---@class claude.Config.Diff
---@field layout? "vertical"|"horizontal"
---@field open_in_new_tab? boolean|"session" true: a new tab page per diff; "session": one per Claude session
---@field keep_terminal_focus? boolean
---@field keymaps? {accept?: string|false, reject?: string|false, accept_hunk?: string|false, reject_hunk?: string|false}
---@field hint? boolean a line over the proposal naming the keys that answer it

---@class claude.Config.Review
---@field keys? {open?: string|false, revert_hunk?: string|false, revert_file?: string|false, mark?: string|false, next?: string|false, prev?: string|false, close?: string|false}
---@field panel_height? number lines of the :ClaudeReview panel (0: no panel, the quickfix list only)
local M = {}

local levels = { trace = 0, debug = 1, info = 2, warn = 3, error = 4 }
local level_names = { [0] = "trace", "debug", "info", "warn", "error", "error" }

local function plugin_root()
  -- this file is <root>/lua/claude/config.lua
  local src = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

--- The defaults. Documented in doc/nvim-claude.txt (claude-config).
---@return claude.Config
function M.defaults()
  return {
    bin = nil, -- <plugin root>/bin/nvim-claude
    terminal_cmd = "claude",
    env = {},
    auto_start = false,
    single_session = false, -- a newly connected CLI replaces the older ones
    log_level = "warn",
    log_file = nil, -- stdpath("log")/nvim-claude.log
    terminal = {
      provider = "native", -- "snacks" (snacks.nvim) or "none" (run claude yourself)
      layout = "split", -- or "float"
      split_side = "right",
      width = 0.35,
      float = { width = 0.85, height = 0.85, border = "rounded" },
      -- the mode :ClaudeStart starts the CLI in (--permission-mode): "manual"
      -- opens every edit in the diff review first; nil: the CLI's own
      -- (its settings.json permissions.defaultMode, else its default)
      permission_mode = nil,
    },
    notify = {
      needs_input = true, -- vim.notify when a diff waits while you look elsewhere
    },
    execute = {
      confirm = true, -- show the code in a float and ask before each run
      timeout_ms = 30000, -- interrupt a run after this long (0: no limit)
      max_output = 20000, -- characters of text output kept per run (0: no cap)
      python = nil, -- interpreter with jupyter_client + ipykernel (nil: python3, then /usr/bin/python3)
      grace_ms = 500, -- keys within this long of the float, or of another key, never answer it
    },
    diagnostics = {
      -- after the CLI edits a file, how long getDiagnostics waits for the
      -- language servers' fresh report
      settle_ms = 600,
    },
    selection = {
      track = true, -- share cursor and selection with Claude (:ClaudeShare toggles)
      debounce_ms = 50,
      deny = nil, -- deprecated alias of security.deny
    },
    security = {
      -- files whose contents never leave Neovim, in any form: selections,
      -- mentions, readFile, the editor tools' results (globs: see claude-security)
      deny = {
        "~/.ssh/*", "~/.aws/*", "~/.gnupg/*", "~/.kube/config", "~/.docker/config.json",
        "~/.config/gh/hosts.yml", "~/.git-credentials", "~/.netrc", "~/.npmrc", "~/.pypirc",
        ".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "id_ecdsa*", ".netrc",
      },
      deny_extra = {}, -- appended to deny: extend the list without repeating it
      allow_home = false, -- let a workspace that is $HOME, / or another user's home be read and written
    },
    mentions = {
      focus_terminal = true, -- :ClaudeSend focuses the Claude terminal
    },
    editor_tools = {
      enable = true, -- the "nvim" MCP server: LSP, tree-sitter and buffers as tools for the model
      allow = nil, -- list of tool names to offer (nil: all of them)
    },
    sessions = {
      hooks = true, -- the CLI :ClaudeStart launches reports its state through hooks (layered over yours)
      http_hooks = true, -- as HTTP hooks to the IDE server (false: a `nvim-claude hook` process per hook)
      answer = true, -- its permission prompts and plans can be answered from Neovim too (:ClaudeAnswer, :ClaudeSessions)
      notify = true, -- vim.notify when a hidden session needs input or finishes
      notifier = nil, -- e.g. { "notify-send", "Claude" }: run with the message appended
    },
    chat = {
      cmd = nil, -- the CLI for chats (nil: the first word of terminal_cmd)
      mode = "manual", -- starting permission mode: "manual", "acceptEdits", "plan", "auto" or "dontAsk" (the CLI's; "default" = "manual")
      model = nil, -- e.g. "sonnet" (nil: the CLI's default)
      effort = nil, -- "low", "medium", "high", "xhigh" or "max" (nil: the CLI's default)
      editor_tools = false, -- offer the editor tools (mcp__nvim__*) to the chat's model
      allowed_tools = nil, -- list passed as --allowedTools
      disallowed_tools = nil, -- list passed as --disallowedTools
      env = {}, -- extra environment for the chat's CLI (over `env`)
      layout = "right", -- "left", "bottom" or "tab"
      width = 0.4, -- fraction of the editor or columns (lines for "bottom")
      prompt_height = 6,
      notify = true, -- vim.notify when a permission waits and the chat is hidden
      history_size = 100,
      -- transcripts longer than this are highlighted with Vim's markdown
      -- syntax, not treesitter (whose markdown parsing slows every edit:
      -- the stream lags); 0: never treesitter
      treesitter_max_lines = 0,
      keys = {
        send = "<C-s>", -- prompt, normal and insert mode (<CR> in normal mode too)
        interrupt = "<C-c>",
        mode = "<S-Tab>",
        pick_mode = "gM", -- pick the permission mode from the CLI's list
        model = "gm",
        attach_selection = "gs",
        image = "gi",
        clear_attachments = "gX",
        toggle = "<Tab>", -- transcript: open/close the fold under the cursor
        allow = "a",
        allow_session = "s",
        allow_project = "p",
        deny = "d",
        next_prompt = "]p", -- transcript: go to the permission prompt waiting
        rewind = "R", -- transcript: rewind the files to before the message under the cursor (asks first)
        undo_rewind = "U", -- transcript: undo the last rewind
        fork = "F",
        resume = "r",
        close = "q",
      },
    },
    diff = {
      layout = "vertical", -- or "horizontal"
      open_in_new_tab = false,
      keep_terminal_focus = false,
      keymaps = {
        accept = "<leader>ca",
        reject = "<leader>cr",
        accept_hunk = "ga", -- the hunk under the cursor
        reject_hunk = "gr",
      },
      hint = true, -- a line over the proposal: ":w accept · :q reject · <leader>ca / <leader>cr"
    },
    worktree = {
      -- :ClaudeStart --worktree [name]: where session worktrees go; nil is
      -- the CLI's own layout, <repository>/.claude/worktrees/<name>; a
      -- relative path is taken from the repository's root
      dir = nil,
      branch_prefix = "worktree-", -- the branch is <prefix><name> (the CLI's)
      finish = "squash", -- :ClaudeWorktree finish brings the reviewed branch in by "squash", "merge" or "cherry-pick"
    },
    review = {
      -- :ClaudeReview (the review queue): keys in its panel and in a
      -- file's diff against its baseline
      keys = {
        open = "<CR>", -- panel: the file's diff against its baseline
        revert_hunk = "gr", -- diff: put back the baseline of Claude's hunk under the cursor
        revert_file = "gR", -- panel and diff: put back the whole file (Claude's hunks only)
        mark = "gm", -- panel and diff: mark reviewed (again: not reviewed)
        next = "]r", -- the next file not reviewed
        prev = "[r",
        close = "q", -- panel
      },
      panel_height = 8,
    },
    dictation = {
      -- the speech-to-text engine: "auto" is whisper.cpp when whisper.cmd
      -- and whisper.model are set, else PocketSphinx when installed, else cmd
      engine = "auto",
      recorder = { cmd = nil }, -- nil: the first of pw-record, parecord, arecord, rec, sox that works
      -- prompt: true gives whisper.cpp the words of the moment (project,
      -- symbol under the cursor, open files); false none; a string, or a
      -- function(words) returning one, yours
      whisper = { cmd = nil, model = nil, language = nil, args = {}, prompt = true },
      pocketsphinx = { cmd = nil, args = {} }, -- cmd nil: pocketsphinx_continuous, else pocketsphinx (5.x)
      cmd = nil, -- your engine: a command that reads the WAV "{file}" and prints the text
      max_seconds = 300,
      keys = { toggle = "<C-g>" }, -- in the chat prompt and the Claude terminal
    },
    -- Where :ClaudeStart and :ClaudeChat run Claude (:help nvim-claude-containers):
    -- nil here; { ssh = "user@host", dir = "/far/dir" }; { container = "name",
    -- runtime = "docker" | "podman" }; { devcontainer = true } (the
    -- project's .devcontainer/devcontainer.json). map = { remote = "/far",
    -- ["local"] = "~/here" } says which far folder shows which local one
    -- (default: dir shows Neovim's directory). options go to the engine
    -- (ssh -p 2222 -i key, docker exec --user dev); claude is the far CLI;
    -- config_dir the far CLAUDE_CONFIG_DIR; bin the engine's program.
    remote = nil,
    install = {
      -- where :ClaudeInstall downloads the prebuilt host ("{version}" is
      -- the plugin's version). nil: the project's GitHub release.
      -- $NVIM_CLAUDE_RELEASE_URL overrides it, and is what make and
      -- build.lua (which run before setup()) read.
      base_url = nil,
    },
  }
end

-- Schema: for each option the accepted Lua types and an optional check that
-- returns an error message. Nested tables are schemas of their own.
local function one_of(...)
  local allowed = { ... }
  return function(v)
    for _, a in ipairs(allowed) do
      if v == a then
        return nil
      end
    end
    return "must be one of " .. table.concat(
      vim.tbl_map(function(a)
        return string.format("%q", a)
      end, allowed),
      ", "
    )
  end
end

local function list_of_strings(v)
  for k, item in pairs(v) do
    if type(k) ~= "number" or type(item) ~= "string" then
      return "must be a list of strings"
    end
  end
end

local function key_or_false(v)
  if v ~= false and (type(v) ~= "string" or v == "") then
    return "must be a key sequence or false"
  end
end

local function command(v)
  if type(v) == "string" then
    if v == "" then
      return "must not be empty"
    end
    return
  end
  if #v == 0 then
    return "must not be an empty list"
  end
  return list_of_strings(v)
end

-- not_negative: a number's check, 0 allowed (zero: what 0 means, for the
-- message).
local function not_negative(zero)
  local msg = "must be 0" .. (zero and (" (" .. zero .. ")") or "") .. " or more"
  return function(v)
    if v < 0 then
      return msg
    end
  end
end

local function fraction(v)
  if v <= 0 or v > 1 then
    return "must be a fraction of the editor (0 < n <= 1)"
  end
end

local schema = {
  bin = { types = { "string" } },
  terminal_cmd = {
    types = { "string", "table" },
    check = function(v)
      if type(v) == "table" then
        if #v == 0 then
          return "must not be an empty list"
        end
        for _, part in ipairs(v) do
          if type(part) ~= "string" then
            return "must be a string or a list of strings"
          end
        end
      elseif v == "" then
        return "must not be empty"
      end
    end,
  },
  env = {
    types = { "table" },
    check = function(v)
      for k, val in pairs(v) do
        if type(k) ~= "string" or (type(val) ~= "string" and type(val) ~= "number") then
          return "must map variable names to strings"
        end
      end
    end,
  },
  auto_start = { types = { "boolean" } },
  single_session = { types = { "boolean" } },
  execute = {
    table = {
      confirm = { types = { "boolean" } },
      grace_ms = {
        types = { "number" },
        check = function(v)
          if v < 0 or v > 10000 then
            return "must be between 0 and 10000"
          end
        end,
      },
      timeout_ms = {
        types = { "number" },
        check = not_negative("no limit"),
      },
      max_output = {
        types = { "number" },
        check = not_negative("no cap"),
      },
      python = { types = { "string" } },
    },
  },
  diagnostics = {
    table = {
      settle_ms = {
        types = { "number" },
        check = function(v)
          if v < 0 or v > 1500 then
            return "must be between 0 and 1500"
          end
        end,
      },
    },
  },
  notify = {
    table = {
      needs_input = { types = { "boolean" } },
    },
  },
  log_level = {
    types = { "string", "number" },
    check = function(v)
      if type(v) == "number" then
        if not level_names[v] then
          return "must be a vim.log.levels value"
        end
      elseif not levels[v:lower()] then
        return 'must be "trace", "debug", "info", "warn", "error" or a vim.log.levels value'
      end
    end,
  },
  log_file = { types = { "string" } },
  terminal = {
    table = {
      provider = { types = { "string" }, check = one_of("native", "snacks", "none") },
      layout = { types = { "string" }, check = one_of("split", "float") },
      float = {
        table = {
          width = { types = { "number" }, check = fraction },
          height = { types = { "number" }, check = fraction },
          border = { types = { "string", "table" } },
        },
      },
      split_side = { types = { "string" }, check = one_of("right", "left", "bottom", "top") },
      permission_mode = {
        types = { "string" },
        check = one_of("manual", "default", "acceptEdits", "auto", "plan", "dontAsk", "bypassPermissions"),
      },
      width = {
        types = { "number" },
        check = function(v)
          if v <= 0 or (v >= 1 and v ~= math.floor(v)) then
            return "must be a fraction of the editor (0 < width < 1) or a number of columns"
          end
        end,
      },
    },
  },
  selection = {
    table = {
      track = { types = { "boolean" } },
      debounce_ms = {
        types = { "number" },
        check = function(v)
          if v < 0 or v > 10000 then
            return "must be between 0 and 10000"
          end
        end,
      },
      deny = { types = { "table" }, check = list_of_strings },
    },
  },
  security = {
    table = {
      deny = { types = { "table" }, check = list_of_strings },
      deny_extra = { types = { "table" }, check = list_of_strings },
      allow_home = { types = { "boolean" } },
    },
  },
  mentions = {
    table = {
      focus_terminal = { types = { "boolean" } },
    },
  },
  editor_tools = {
    table = {
      enable = { types = { "boolean" } },
      allow = { types = { "table" }, check = list_of_strings },
    },
  },
  sessions = {
    table = {
      hooks = { types = { "boolean" } },
      http_hooks = { types = { "boolean" } },
      answer = { types = { "boolean" } },
      notify = { types = { "boolean" } },
      notifier = { types = { "table" }, check = list_of_strings },
    },
  },
  chat = {
    table = {
      cmd = { types = { "string" } },
      mode = { types = { "string" }, check = one_of("manual", "acceptEdits", "plan", "auto", "dontAsk", "default") },
      model = { types = { "string" } },
      effort = { types = { "string" }, check = one_of("low", "medium", "high", "xhigh", "max") },
      editor_tools = { types = { "boolean" } },
      allowed_tools = { types = { "table" }, check = list_of_strings },
      disallowed_tools = { types = { "table" }, check = list_of_strings },
      env = {
        types = { "table" },
        check = function(v)
          for k, val in pairs(v) do
            if type(k) ~= "string" or (type(val) ~= "string" and type(val) ~= "number") then
              return "must map variable names to strings"
            end
          end
        end,
      },
      layout = { types = { "string" }, check = one_of("right", "left", "bottom", "tab") },
      width = {
        types = { "number" },
        check = function(v)
          if v <= 0 or (v >= 1 and v ~= math.floor(v)) then
            return "must be a fraction of the editor (0 < width < 1) or a number of columns"
          end
        end,
      },
      prompt_height = {
        types = { "number" },
        check = function(v)
          if v < 1 or v ~= math.floor(v) then
            return "must be a whole number of lines (1 or more)"
          end
        end,
      },
      notify = { types = { "boolean" } },
      history_size = {
        types = { "number" },
        check = not_negative(),
      },
      treesitter_max_lines = {
        types = { "number" },
        check = not_negative(),
      },
      keys = {
        table = (function()
          local t = {}
          for _, k in ipairs({
            "send", "interrupt", "mode", "pick_mode", "model", "attach_selection", "image", "clear_attachments", "toggle",
            "allow", "allow_session", "allow_project", "deny", "next_prompt", "rewind", "undo_rewind", "fork", "resume", "close",
          }) do
            t[k] = { types = { "string", "boolean" }, check = key_or_false }
          end
          return t
        end)(),
      },
    },
  },
  diff = {
    table = {
      layout = { types = { "string" }, check = one_of("vertical", "horizontal") },
      open_in_new_tab = {
        types = { "boolean", "string" },
        check = function(v)
          if type(v) == "string" and v ~= "session" then
            return 'must be true, false or "session"'
          end
        end,
      },
      keep_terminal_focus = { types = { "boolean" } },
      keymaps = {
        table = {
          accept = { types = { "string", "boolean" }, check = key_or_false },
          reject = { types = { "string", "boolean" }, check = key_or_false },
          accept_hunk = { types = { "string", "boolean" }, check = key_or_false },
          reject_hunk = { types = { "string", "boolean" }, check = key_or_false },
        },
      },
      hint = { types = { "boolean" } },
    },
  },
  worktree = {
    table = {
      dir = { types = { "string" } },
      branch_prefix = { types = { "string" } },
      finish = { types = { "string" }, check = one_of("squash", "merge", "cherry-pick") },
    },
  },
  review = {
    table = {
      keys = {
        table = (function()
          local t = {}
          for _, k in ipairs({ "open", "revert_hunk", "revert_file", "mark", "next", "prev", "close" }) do
            t[k] = { types = { "string", "boolean" }, check = key_or_false }
          end
          return t
        end)(),
      },
      panel_height = {
        types = { "number" },
        check = not_negative(),
      },
    },
  },
  dictation = {
    table = {
      engine = { types = { "string" }, check = one_of("auto", "whisper", "pocketsphinx", "cmd") },
      recorder = { table = { cmd = { types = { "string", "table" }, check = command } } },
      whisper = {
        table = {
          cmd = { types = { "string" } },
          model = { types = { "string" } },
          language = { types = { "string" } },
          args = { types = { "table" }, check = list_of_strings },
          prompt = { types = { "boolean", "string", "function" } },
        },
      },
      pocketsphinx = {
        table = {
          cmd = { types = { "string" } },
          args = { types = { "table" }, check = list_of_strings },
        },
      },
      cmd = { types = { "string", "table" }, check = command },
      max_seconds = {
        types = { "number" },
        check = not_negative("no limit"),
      },
      keys = { table = { toggle = { types = { "string", "boolean" }, check = key_or_false } } },
    },
  },
  remote = {
    table = {
      ssh = { types = { "string" }, check = function(v)
        if v == "" or v:sub(1, 1) == "-" then
          return "must be a destination (user@host)"
        end
      end },
      container = { types = { "string" }, check = function(v)
        if v == "" or v:sub(1, 1) == "-" then
          return "must be a container's name"
        end
      end },
      runtime = { types = { "string" }, check = one_of("docker", "podman") },
      devcontainer = { types = { "boolean", "string" } },
      dir = { types = { "string" }, check = function(v)
        if v:sub(1, 1) ~= "/" then
          return "must be an absolute far path"
        end
      end },
      map = {
        table = {
          remote = { types = { "string" }, check = function(v)
            if v:sub(1, 1) ~= "/" then
              return "must be an absolute far path"
            end
          end },
          ["local"] = { types = { "string" } },
        },
      },
      options = { types = { "table" }, check = list_of_strings },
      bin = { types = { "string" } },
      claude = { types = { "string" } },
      config_dir = { types = { "string" } },
    },
  },
  install = {
    table = {
      base_url = {
        types = { "string" },
        check = function(v)
          if not v:match("^https?://") then
            return "must be an http:// or https:// URL"
          end
        end,
      },
    },
  },
}

-- validate walks opts against schema and collects every problem.
local function validate(opts, sch, prefix, problems)
  for key, val in pairs(opts) do
    local name = prefix .. tostring(key)
    local spec = sch[key]
    if not spec then
      table.insert(problems, string.format("unknown option '%s'", name))
    elseif spec.table then
      if type(val) ~= "table" then
        table.insert(problems, string.format("option '%s' must be a table, got %s", name, type(val)))
      else
        validate(val, spec.table, name .. ".", problems)
      end
    elseif not vim.tbl_contains(spec.types, type(val)) then
      table.insert(
        problems,
        string.format("option '%s' must be a %s, got %s", name, table.concat(spec.types, " or "), type(val))
      )
    elseif spec.check then
      local msg = spec.check(val)
      if msg then
        table.insert(problems, string.format("option '%s' %s", name, msg))
      end
    end
  end
end

-- drop removes the offending keys so the rest of the config still applies.
local function clean(opts, sch)
  local out = {}
  for key, val in pairs(opts) do
    local spec = sch[key]
    if spec then
      if spec.table then
        if type(val) == "table" then
          out[key] = clean(val, spec.table)
        end
      elseif vim.tbl_contains(spec.types, type(val)) and not (spec.check and spec.check(val)) then
        out[key] = val
      end
    end
  end
  return out
end

M.options = M.defaults()

--- The options the Go host needs, resolved (it keeps no default of its
--- own): sent when its job starts and whenever setup() runs again
--- (claude.server.send_options); in Go each feature decodes the table it
--- owns (host.Options.Decode).
---@return table
function M.host_options()
  local o = M.options
  return {
    single_session = o.single_session,
    selection = { debounce_ms = o.selection.debounce_ms },
    execute = {
      confirm = o.execute.confirm,
      timeout_ms = o.execute.timeout_ms,
      max_output = o.execute.max_output,
      python = o.execute.python,
    },
    diagnostics = { settle_ms = o.diagnostics.settle_ms },
    security = { deny = M.deny_globs(), allow_home = o.security.allow_home },
    editor_tools = { enable = o.editor_tools.enable, allow = o.editor_tools.allow },
    review = { config_dir = M.claude_config_dir(), cwd = vim.fn.getcwd(-1, -1) },
  }
end

--- The effective deny-list: security.deny followed by security.deny_extra.
--- The same table until the options change (callers cache by identity).
---@return string[]
function M.deny_globs()
  if not M.deny then
    M.deny = vim.list_extend(vim.deepcopy(M.options.security.deny), M.options.security.deny_extra)
  end
  return M.deny
end

--- Validates opts, merges them over the defaults and stores the result in
--- M.options. Returns the list of problems (empty when all is well); invalid
--- options are ignored, valid ones apply.
--- base (optional) is the options to merge over instead of the defaults:
--- setup() called again changes only what it names.
function M.apply(opts, base)
  opts = opts or {}
  local problems = {}
  if type(opts) ~= "table" then
    problems = { "setup() takes a table of options, got " .. type(opts) }
    opts = {}
  else
    validate(opts, schema, "", problems)
    opts = clean(opts, schema)
  end
  M.options = vim.tbl_deep_extend("force", base and vim.deepcopy(base) or M.defaults(), opts)
  if opts.env then
    -- env replaces, not merges: removing a variable must be possible.
    M.options.env = vim.deepcopy(opts.env)
  end
  -- deny lists replace the default list (tbl_deep_extend would merge by
  -- index); selection.deny is the old name of security.deny.
  local sec = opts.security or {}
  local deny = sec.deny or (opts.selection and opts.selection.deny)
  if deny then
    M.options.security.deny = vim.deepcopy(deny)
  end
  if sec.deny_extra then
    M.options.security.deny_extra = vim.deepcopy(sec.deny_extra)
  end
  M.deny = vim.list_extend(vim.deepcopy(M.options.security.deny), M.options.security.deny_extra)
  M.options.selection.deny = M.deny
  if opts.editor_tools and opts.editor_tools.allow then
    -- a list replaces, like selection.deny
    M.options.editor_tools.allow = vim.deepcopy(opts.editor_tools.allow)
  end
  if opts.dictation then
    -- commands and argument lists replace their defaults
    local d = opts.dictation
    for _, k in ipairs({ "cmd" }) do
      if d[k] then
        M.options.dictation[k] = vim.deepcopy(d[k])
      end
    end
    for _, t in ipairs({ "recorder", "whisper", "pocketsphinx" }) do
      for _, k in ipairs({ "cmd", "args" }) do
        if d[t] and d[t][k] then
          M.options.dictation[t][k] = vim.deepcopy(d[t][k])
        end
      end
    end
  end
  if opts.remote then
    -- where Claude runs is one setting: a new one replaces the old whole
    M.options.remote = vim.deepcopy(opts.remote)
  end
  if opts.chat then
    -- lists and env replace their defaults, like the options above
    for _, k in ipairs({ "allowed_tools", "disallowed_tools", "env" }) do
      if opts.chat[k] then
        M.options.chat[k] = vim.deepcopy(opts.chat[k])
      end
    end
  end
  return problems
end

function M.root()
  return plugin_root()
end

--- Path of the Go host binary.
function M.bin()
  return M.options.bin or require("claude.install").target(plugin_root())
end

--- Log level as the name the Go host takes.
function M.log_level()
  local v = M.options.log_level
  if type(v) == "number" then
    return level_names[v]
  end
  return v:lower()
end

function M.log_file()
  if M.options.log_file then
    return vim.fn.expand(M.options.log_file)
  end
  local ok, dir = pcall(vim.fn.stdpath, "log")
  if not ok then
    dir = vim.fn.stdpath("cache") -- Neovim 0.7 has no stdpath("log")
  end
  return dir .. "/nvim-claude.log"
end

--- The Claude config directory, where the CLI looks for lock files:
--- CLAUDE_CONFIG_DIR from opts.env, else Neovim's own, else ~/.claude.
function M.claude_config_dir()
  local dir = M.options.env.CLAUDE_CONFIG_DIR
  if dir == nil or dir == "" then
    dir = vim.env.CLAUDE_CONFIG_DIR
  end
  if dir == nil or dir == "" then
    dir = "~/.claude"
  end
  return vim.fn.fnamemodify(vim.fn.expand(dir), ":p"):gsub("/$", "")
end

return M
