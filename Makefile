# nvim-claude — build, run, test, bench.
#
#   make          bin/nvim-claude (built with Go >= go.mod's version; without one,
#                 the prebuilt release asset, SHA-256 checked) and doc/tags
#   make run      build, fetch Neovim / the CLI if missing, open Neovim with :ClaudeStart
#   make test     fetch what tests need (Neovim 0.7/0.10/0.12, the pinned CLI), run everything
#   make test-latest   the end-to-end tests against npm's newest CLI (when a new one appears)
#
# Downloads go to .cache/ (gitignored) and are reused.

SHELL := /bin/bash
GO ?= go
CACHE_DIR ?= $(CURDIR)/.cache
CLAUDE_VERSION ?= 2.1.332
NVIM_LINES ?= 0.7 0.10 0.12
export CACHE_DIR CLAUDE_VERSION
export NVIM_DIST ?= $(CACHE_DIR)/nvim

BIN := bin/nvim-claude
# What the host is built from, read from `go list` (scripts/go-files), so
# that an edit in any package it imports rebuilds it, whatever the packages
# are called.
GO_SOURCES := $(shell GO=$(GO) scripts/go-files host)

# Packages whose tests start Neovim: run once per Neovim line. The rest run
# once. Also from `go list` (read only when a rule uses them).
NVIM_PKGS = $(shell GO=$(GO) scripts/go-files nvim)
PURE_PKGS = $(shell GO=$(GO) scripts/go-files pure)

.PHONY: all build run test test-lua test-deps test-latest vet bench soak fuzz clean

all: build

build: $(BIN) doc/tags

$(BIN): $(GO_SOURCES) scripts/build-host
	@GO=$(GO) scripts/build-host $(BIN)

# :help nvim-claude needs doc/tags; generated, never committed.
doc/tags: $(wildcard doc/*.txt)
	@scripts/helptags

# The editor: nvim on PATH, else Neovim 0.12 into .cache. The CLI: claude on
# PATH, else the pinned version into .cache, in the default permission mode so
# that its edits open the diff review (its own default, auto mode, writes them
# straight to disk). DIR: the project to open (default: this checkout), e.g.
#   make run DIR=~/src/app
# Each download says what it does; an up-to-date host says nothing.
DIR ?= $(CURDIR)
run:
	@dir='$(subst ','\'',$(DIR))'; case $$dir in "~"|"~/"*) dir=$$HOME$${dir#"~"} ;; esac; \
	[ -d "$$dir" ] || { echo "make run: DIR=$$dir is not a directory (DIR is the project to open, e.g. make run DIR=~/src/app)" >&2; exit 1; }; \
	dir=$$(cd "$$dir" && pwd) && \
	nvim=$$(command -v nvim || scripts/get-nvim 0.12) && \
	NVIM_CLAUDE_NVIM="$$nvim" $(MAKE) -s --no-print-directory build && \
	claude=$$(command -v claude || scripts/install-claude $(CLAUDE_VERSION)) && \
	echo "nvim: $$nvim  claude: $$claude  project: $$dir" && \
	cd "$$dir" && exec "$$nvim" --cmd "set rtp^=$(CURDIR)" \
	  -c "lua require('claude').setup({ bin = '$(abspath $(BIN))', terminal_cmd = { '$$claude', '--permission-mode', 'default' } })" \
	  -c "ClaudeStart"

test-deps:
	@NVIM_LINES="$(NVIM_LINES)" scripts/test-deps

vet:
	$(GO) vet ./...
	@dirs=$$(GO=$(GO) scripts/go-files dirs) && out=$$(gofmt -l $$dirs) && if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

# About 10 minutes on 2 cores once the downloads are cached; it prints a
# line per package as it finishes and a summary table at the end.
test: test-deps vet build
	@NVIM_LINES="$(NVIM_LINES)" PURE_PKGS="$(PURE_PKGS)" NVIM_PKGS="$(NVIM_PKGS)" scripts/test-all

# The pure-Lua tests (tests/*_test.lua: options, text made displayable,
# :Claude's subcommands, …) in nvim -l: a second or so, no host, no CLI.
# make test runs them on every Neovim line too (TestPureLua).
test-lua:
	@nvim=$$(command -v nvim >/dev/null && nvim -l /dev/null 2>/dev/null && command -v nvim || scripts/get-nvim 0.12) && \
	"$$nvim" -l tests/run.lua $(TESTS)

# The end-to-end packages against npm's newest CLI, on Neovim 0.12 only
# (a few minutes): run it when a new CLI appears (README: "When a new CLI
# breaks a test").
test-latest: build
	@nv=$$(scripts/get-nvim 0.12) && claude=$$(scripts/install-claude latest) && \
	echo "=== CLI $$($$claude --version), Neovim 0.12" && \
	NVIM_BIN=$$nv CLAUDE_BIN=$$claude $(GO) test -race -count=1 -timeout 30m ./internal/e2e/...

# Benchmarks: Go micro-benchmarks, and scripted scenarios against a
# headless Neovim 0.12 running $(BIN), each compared with a floor measured in
# the same run; rewrites BENCHMARKS.md (about 15 minutes on 2 cores). It
# reports: a missed target never fails it, a broken scenario does. With perf
# installed, a missed target comes with a profile.
#   make bench BENCHFLAGS='-only 3 -out -'   one scenario, printed
BENCHFLAGS ?=
bench: build
	@nv=$$(scripts/get-nvim 0.12) && \
	$(GO) run ./internal/bench -nvim "$$nv" -host $(CURDIR)/$(BIN) $(BENCHFLAGS)

# Reliability (RELIABILITY.md). soak: the full load — 16 clients ×
# 5,000 tool calls while 50,000 cursor moves stream out — once per Neovim
# line, with a leak check (about 4 minutes a line). fuzz: each fuzz target for
# FUZZTIME; a crasher lands in testdata/fuzz and becomes a regression seed
# that `make test` runs.
FUZZTIME ?= 60s
soak: test-deps build
	@set -e; for l in $(NVIM_LINES); do nv=$$(scripts/get-nvim $$l); echo "=== soak, Neovim $$l"; \
	  SOAK=1 SOAK_REPORT=$(CACHE_DIR)/soak-$$l.json NVIM_BIN=$$nv \
	  $(GO) test -race -count=1 -timeout 15m -run '^TestSoak$$' -v ./internal/soak/; done

fuzz: test-deps
	@set -e; for t in FuzzDecodeMessage FuzzSplitObject FuzzAppendString FuzzCallTool FuzzConnection FuzzHandshake; do echo "=== $$t"; \
	  $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./mcp/; done
	@echo "=== FuzzToolArguments"; NVIM_BIN=$$(scripts/get-nvim 0.12) \
	  $(GO) test -run '^$$' -fuzz '^FuzzToolArguments$$' -fuzztime $(FUZZTIME) ./app/

clean:
	rm -rf bin doc/tags
