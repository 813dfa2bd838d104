package mcp

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected frames of the transcripts")

// Transcripts live in testdata/transcripts/*.txt, one frame a line:
//
//	# comment
//	-> frame the client sends
//	<- frame the server must send next, byte for byte
//
// Each runs over a real WebSocket against a real Server with the fake tools.
// With -update, the content of the "<-" lines is rewritten from what the
// server sent; their number and place stay as written. After the last line
// the runner pings: its reply must be the next frame, so no stray frame
// goes unnoticed.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runTranscript(t, file)
		})
	}
}

const (
	sendPrefix   = "-> "
	expectPrefix = "<- "
	endPing      = `{"jsonrpc":"2.0","id":"transcript-end","method":"ping"}`
	endPong      = `{"jsonrpc":"2.0","id":"transcript-end","result":{}}`
)

func runTranscript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	s := startServer(t, testConfig(t), nil)
	ws := dial(t, s, "/")
	changed := false
	for i, line := range lines {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, sendPrefix):
			writeText(t, ws, strings.TrimPrefix(line, sendPrefix))
		case strings.HasPrefix(line, expectPrefix) || line == strings.TrimSpace(expectPrefix):
			got := readText(t, ws)
			want := strings.TrimPrefix(line, expectPrefix)
			if got == want {
				continue
			}
			if *update {
				lines[i], changed = expectPrefix+got, true
				continue
			}
			t.Errorf("%s:%d: %s", file, i+1, diff(want, got))
		default:
			t.Fatalf("%s:%d: line starts with neither %q, %q nor #", file, i+1, sendPrefix, expectPrefix)
		}
	}
	writeText(t, ws, endPing)
	if got := readText(t, ws); got != endPong {
		t.Errorf("%s: after the transcript: %s", file, diff(endPong, got))
	}
	if changed {
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", file)
	}
}
