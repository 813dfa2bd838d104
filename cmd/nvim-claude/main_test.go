package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/app"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"version", []string{"-version"}, 0, "nvim-claude " + app.Version + "\n", ""},
		{"version, GNU style", []string{"--version"}, 0, "nvim-claude " + app.Version + "\n", ""},
		{"bad level", []string{"-log-level", "loud"}, 2, "", `unknown log level "loud"`},
		{"unknown flag", []string{"-nope"}, 2, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), nopCloser{&stdout}, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if stdout.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]string{"trace": "DEBUG-4", "debug": "DEBUG", "INFO": "INFO", "warn": "WARN", "warning": "WARN", "error": "ERROR"} {
		got, err := parseLevel(in)
		if err != nil || got.String() != want {
			t.Errorf("parseLevel(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}

func TestLuaVersionMatches(t *testing.T) {
	raw, err := os.ReadFile("../../lua/claude/version.lua")
	if err != nil {
		t.Fatal(err)
	}
	b := string(raw)
	if !strings.Contains(b, `"`+app.Version+`"`) {
		t.Fatalf("lua/claude/version.lua does not say %q:\n%s", app.Version, b)
	}
}
