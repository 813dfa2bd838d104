// Command nvim-claude is the Go host of the nvim-claude Neovim plugin.
//
// Neovim starts it as an RPC job (jobstart({bin}, {rpc = true})): stdin and
// stdout carry msgpack-RPC and nothing else may write to stdout. Logs go to
// the file named by -log-file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nvim-claude/nvim-claude/app"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "mcp" {
		return runMCP(stdin, stdout, stderr, os.Getenv)
	}
	if len(args) > 0 && args[0] == "hook" {
		// the CLI ends a hook with SIGTERM (a dismissed prompt, a
		// timeout); a waiting PermissionRequest hook then lets its call go
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer signal.Stop(stop)
		return runHook(args[1:], stdin, stdout, stderr, os.Getenv, stop)
	}
	fs := flag.NewFlagSet("nvim-claude", flag.ContinueOnError)
	fs.SetOutput(stderr)
	showVersion := fs.Bool("version", false, "print the version and exit")
	logFile := fs.String("log-file", "", "append logs to this file (default: no log)")
	logLevel := fs.String("log-level", "warn", "trace|debug|info|warn|error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "nvim-claude", app.Version)
		return 0
	}

	log, closeLog, err := openLog(*logFile, *logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "nvim-claude:", err)
		return 2
	}
	defer closeLog()

	// stdout is the RPC channel: anything printed by accident would corrupt
	// it, so the process-wide Stdout now points at stderr.
	os.Stdout = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer stop()
	code := 0
	if err := app.Serve(ctx, stdin, stdout, log); err != nil {
		log.Error("nvim-claude", "err", err)
		code = 1
	}
	log.Info("stopped")
	return code
}

// openLog returns a logger writing to path at level (no file: discard).
func openLog(path, level string) (*slog.Logger, func(), error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return nil, nil, err
	}
	if path == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open log file: %w", err)
	}
	h := slog.NewTextHandler(f, &slog.HandlerOptions{Level: lvl, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.LevelKey && a.Value.Any() == levelTrace {
			a.Value = slog.StringValue("TRACE")
		}
		return a
	}})
	return slog.New(h), func() { _ = f.Close() }, nil
}

// levelTrace is below slog's debug level.
const levelTrace = slog.Level(-8)

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "trace":
		return levelTrace, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", s)
}
