package editorcontext

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// push builds a diagPush from (bufnr, path, messages) triples.
type pushFile struct {
	bufnr int
	path  string
	msgs  []string
}

func mkPush(seq int64, snapshot bool, files ...pushFile) diagPush {
	var raw struct {
		Seq      int64 `json:"seq"`
		Snapshot bool  `json:"snapshot"`
		Files    []any `json:"files"`
	}
	raw.Seq, raw.Snapshot = seq, snapshot
	for _, f := range files {
		ds := []diagnostic{}
		for i, m := range f.msgs {
			ds = append(ds, diag(m, "Error", i, 0, i, 1, "src", ""))
		}
		entry := map[string]any{"bufnr": f.bufnr, "diagnostics": ds}
		if f.path != "" {
			entry["path"] = f.path
		}
		raw.Files = append(raw.Files, entry)
	}
	b, _ := json.Marshal(raw)
	var p diagPush
	if err := json.Unmarshal(b, &p); err != nil {
		panic(err)
	}
	return p
}

// changes renders notifications as "uri=[messages]" lines.
func changes(cs []diagChange) string {
	var out []string
	for _, c := range cs {
		var ds []diagnostic
		_ = json.Unmarshal(c.Diagnostics, &ds)
		var msgs []string
		for _, d := range ds {
			msgs = append(msgs, d.Message)
		}
		out = append(out, c.URI+"="+strings.Join(msgs, ","))
	}
	return strings.Join(out, " ")
}

func TestDiagCache(t *testing.T) {
	d := newDiagCache(nil)
	steps := []struct {
		push    diagPush
		changes string // notifications sent
		all     string // messages per file after it
	}{
		{mkPush(1, true, pushFile{1, "/p/a.go", []string{"a1"}}, pushFile{2, "/p/b.go", []string{"b1", "b2"}}),
			"file:///p/a.go=a1 file:///p/b.go=b1,b2", "/p/a.go:a1 /p/b.go:b1,b2"},
		// republished unchanged: nothing sent
		{mkPush(2, false, pushFile{1, "/p/a.go", []string{"a1"}}), "", "/p/a.go:a1 /p/b.go:b1,b2"},
		// changed
		{mkPush(3, false, pushFile{1, "/p/a.go", []string{"a2"}}), "file:///p/a.go=a2", "/p/a.go:a2 /p/b.go:b1,b2"},
		// cleared
		{mkPush(4, false, pushFile{2, "/p/b.go", nil}), "file:///p/b.go=", "/p/a.go:a2"},
		// renamed buffer: the old name is cleared
		{mkPush(5, false, pushFile{1, "/p/c.go", []string{"a2"}}), "file:///p/a.go= file:///p/c.go=a2", "/p/c.go:a2"},
		// no longer a file (wiped)
		{mkPush(6, false, pushFile{1, "", nil}), "file:///p/c.go=", ""},
		// a snapshot replaces everything
		{mkPush(7, false, pushFile{3, "/p/x.go", []string{"x"}}, pushFile{4, "/p/y.go", []string{"y"}}),
			"file:///p/x.go=x file:///p/y.go=y", "/p/x.go:x /p/y.go:y"},
		{mkPush(8, true, pushFile{4, "/p/y.go", []string{"y"}}), "file:///p/x.go=", "/p/y.go:y"},
	}
	for i, s := range steps {
		got := changes(d.apply(s.push))
		d.commit(s.push)
		if got != s.changes {
			t.Fatalf("step %d: notifications %q, want %q", i+1, got, s.changes)
		}
		all, err := summary(t, d.all(), ":")
		if err != nil {
			t.Fatalf("step %d: all() is not JSON: %v", i+1, err)
		}
		if all != s.all {
			t.Fatalf("step %d: all() = %q, want %q", i+1, all, s.all)
		}
	}
}

func TestDiagCacheForPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real dir", "f.go")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real dir"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d := newDiagCache(nil)
	p := mkPush(1, false, pushFile{1, real, []string{"m"}})
	d.apply(p)
	d.commit(p)
	tests := []struct{ ask, wantMsgs string }{
		{real, "m"},
		{strings.ReplaceAll(real, " ", "%20"), "m"},      // percent-encoded
		{filepath.Join(dir, "link", "f.go"), "m"},        // through a symlink
		{filepath.Join(dir, "real dir", "other.go"), ""}, // no diagnostics
	}
	for _, tt := range tests {
		var files []struct {
			URI         string       `json:"uri"`
			Diagnostics []diagnostic `json:"diagnostics"`
		}
		if err := json.Unmarshal([]byte(d.forPath(tt.ask)), &files); err != nil || len(files) != 1 {
			t.Fatalf("forPath(%s) = %s, %v", tt.ask, d.forPath(tt.ask), err)
		}
		// the answer names the file as it was asked for
		if files[0].URI != "file://"+tt.ask {
			t.Errorf("forPath(%s): uri %s", tt.ask, files[0].URI)
		}
		var msgs []string
		for _, dd := range files[0].Diagnostics {
			msgs = append(msgs, dd.Message)
		}
		if strings.Join(msgs, ",") != tt.wantMsgs {
			t.Errorf("forPath(%s) = %v, want %s", tt.ask, msgs, tt.wantMsgs)
		}
	}
}

// getDiagnostics {} answers from an escaped copy kept between calls: after
// every change (new diagnostics, a buffer cleared, renamed, a snapshot) the
// next answer is the new picture, byte for byte the escaping of all().
func TestDiagCacheEscapedAnswer(t *testing.T) {
	hostile := "say \"hi\" \\ <T> & \x00\x1b\u2028\u2029 \xff é😀"
	steps := []struct {
		name string
		push diagPush
		want string // "path=messages" per file, sorted by path
	}{
		{"first", mkPush(1, false, pushFile{1, "/p/a.go", []string{"a1", hostile}}, pushFile{2, "/p/b \"q\".go", []string{"b1"}}),
			"/p/a.go=a1," + strings.ToValidUTF8(hostile, "\ufffd") + ` /p/b "q".go=b1`},
		{"changed", mkPush(2, false, pushFile{1, "/p/a.go", []string{"a2"}}), `/p/a.go=a2 /p/b "q".go=b1`},
		{"republished unchanged", mkPush(3, false, pushFile{1, "/p/a.go", []string{"a2"}}), `/p/a.go=a2 /p/b "q".go=b1`},
		{"cleared", mkPush(4, false, pushFile{2, "/p/b \"q\".go", nil}), "/p/a.go=a2"},
		{"added", mkPush(5, false, pushFile{3, "/p/c.go", []string{"c1"}}), "/p/a.go=a2 /p/c.go=c1"},
		{"renamed", mkPush(6, false, pushFile{3, "/p/0.go", []string{"c1"}}), "/p/0.go=c1 /p/a.go=a2"},
		{"snapshot", mkPush(7, true, pushFile{1, "/p/a.go", []string{"a3"}}), "/p/a.go=a3"},
		{"emptied", mkPush(8, true), ""},
	}
	d := newDiagCache(nil)
	for _, st := range steps {
		d.allEscaped() // an answer made before the push
		d.apply(st.push)
		d.commit(st.push)
		for range 2 { // made afresh, then kept
			got := d.allEscaped()
			if want := mcpEscaped(d.all()); string(got) != want {
				t.Fatalf("%s: allEscaped\n got %s\nwant %s", st.name, got, want)
			}
			var text string
			if err := json.Unmarshal([]byte(`"`+string(got)+`"`), &text); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			files, err := summary(t, text, "=")
			if err != nil {
				t.Fatalf("%s: %v in %s", st.name, err, text)
			}
			if files != st.want {
				t.Fatalf("%s: answer %q, want %q", st.name, files, st.want)
			}
		}
	}
}

// mcpEscaped is s as mcp escapes a tool result's text.
func mcpEscaped(s string) string { return string(mcp.AppendEscaped(nil, s)) }

// all is the answer for every file made afresh from the entries (not the
// kept answer): their escaped parts unescaped, joined.
func (d *diagCache) all() string {
	entries, _ := d.sorted()
	parts := make([]string, len(entries))
	for i, e := range entries {
		if err := json.Unmarshal([]byte(`"`+string(e.esc)+`"`), &parts[i]); err != nil {
			panic(err)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// summary lists the files of a getDiagnostics answer as path<sep>messages.
func summary(t *testing.T, text, sep string) (string, error) {
	t.Helper()
	var files []struct {
		URI         string       `json:"uri"`
		Diagnostics []diagnostic `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(text), &files); err != nil {
		return "", err
	}
	var out []string
	for _, f := range files {
		var msgs []string
		for _, dd := range f.Diagnostics {
			msgs = append(msgs, dd.Message)
		}
		out = append(out, strings.TrimPrefix(f.URI, "file://")+sep+strings.Join(msgs, ","))
	}
	return strings.Join(out, " "), nil
}

func TestDiagCacheWait(t *testing.T) {
	d := newDiagCache(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan bool, 2)
	go func() { done <- d.waitSeq(ctx, 2) }()
	go func() { done <- d.waitTouched(ctx, []string{"/p/a.go"}, 1) }()
	for seq := int64(1); seq <= 2; seq++ {
		p := mkPush(seq, false, pushFile{1, "/p/a.go", []string{fmt.Sprint(seq)}})
		d.apply(p)
		d.commit(p)
	}
	for i := 0; i < 2; i++ {
		if !<-done {
			t.Fatal("a wait ended without its push")
		}
	}
	// A wait whose push never comes ends with its context.
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if d.waitTouched(short, []string{"/p/b.go"}, 0) {
		t.Fatal("waitTouched returned true for a path no push named")
	}
}

// The cache's share of getDiagnostics with 500 files × 20 diagnostics
// (PROTOCOL.md §4: the CLI gives {uri} 500 ms, {} 2 s).
func BenchmarkDiagCache(b *testing.B) {
	d := newDiagCache(nil)
	var files []pushFile
	for i := 0; i < 500; i++ {
		var msgs []string
		for j := 0; j < 20; j++ {
			msgs = append(msgs, fmt.Sprintf("diagnostic %d of file %d: something is wrong here", j, i))
		}
		files = append(files, pushFile{i + 1, fmt.Sprintf("/project/pkg%d/file%d.go", i%20, i), msgs})
	}
	p := mkPush(1, true, files...)
	d.apply(p)
	d.commit(p)
	b.Run("all", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = d.all()
		}
	})
	b.Run("uri", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = d.forPath("/project/pkg7/file247.go")
		}
	})
}
