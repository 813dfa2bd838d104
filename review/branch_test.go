package review

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitRepo makes a repository in a temporary directory (a throwaway
// identity) and returns it with a git runner that fails the test.
func gitRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	return dir, git
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The branch scope lists what the branch changed between base and tip,
// each file against its text at the base, and drops a hunk the way gr
// reverts one: the base's lines come back, the other hunk stays.
func TestBranchReview(t *testing.T) {
	dir, git := gitRepo(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
	writeFile(t, filepath.Join(dir, "gone.txt"), "bye\n")
	writeFile(t, filepath.Join(dir, "same.txt"), "same\n")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	writeFile(t, filepath.Join(dir, "a.txt"), "one\nTWO\nthree\nfour\nfive\nSIX\nseven\n")
	writeFile(t, filepath.Join(dir, "sub", "new.txt"), "new\n")
	writeFile(t, filepath.Join(dir, "bin.dat"), "a\x00b")
	git("rm", "-q", "gone.txt")
	git("add", ".")
	git("commit", "-q", "-m", "work")
	tip := git("rev-parse", "HEAD")

	q := newTestQueue(t)
	testWorkspace(q).SetCwd(dir)
	res, err := q.handleBranch(context.Background(), branchRef{Dir: dir, Base: base, Tip: tip, Label: "wt:x"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range res.(List).Items {
		if it.Label != "wt:x" || it.Dir != dir || it.Session != scopeBranch {
			t.Fatalf("item %+v: want label wt:x, dir %s", it, dir)
		}
		got[filepath.Base(it.Path)] = it.Status + " +" + itoa(it.Added) + " -" + itoa(it.Removed)
	}
	want := map[string]string{
		"a.txt":    "modified +2 -2",
		"new.txt":  "new +1 -0",
		"bin.dat":  "binary +0 -0",
		"gone.txt": "deleted +0 -1",
	}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}

	// Drop the second hunk (SIX, line 6) of a.txt.
	a := filepath.Join(dir, "a.txt")
	cur := splitText("one\nTWO\nthree\nfour\nfive\nSIX\nseven\n")
	e, err := q.handleRevertHunk(context.Background(), revertRef{ref: ref{Scope: scopeBranch, Session: scopeBranch, Path: a}, Line: 6, Lines: cur})
	if err != nil {
		t.Fatal(err)
	}
	ed := e.(Edit)
	after := strings.Join(splice(cur, ed), "\n")
	if after != "one\nTWO\nthree\nfour\nfive\nsix\nseven" {
		t.Fatalf("after the drop: %q", after)
	}

	// gR on the file the branch deleted drops the deletion: the base's
	// text is back (only in the branch scope, and only to be written).
	gone := filepath.Join(dir, "gone.txt")
	rf, err := q.handleRevertFile(context.Background(), revertRef{ref: ref{Scope: scopeBranch, Session: scopeBranch, Path: gone}, Lines: []string{""}, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(gone); string(b) != "bye\n" || !rf.(RevertFile).Written || len(rf.(RevertFile).Edits) != 1 {
		t.Fatalf("gone.txt after gR: %q, %+v", b, rf)
	}
	if _, err := q.handleRevertFile(context.Background(), revertRef{ref: ref{Scope: scopeBranch, Session: scopeBranch, Path: gone}, Lines: []string{"bye"}, Write: true}); err == nil {
		t.Fatal("a second gR reverted again")
	}

	// The other scopes do not see the branch; its end forgets it.
	if l := q.list(scopeTurn); len(l.Items) != 0 {
		t.Fatalf("the turn scope lists the branch: %+v", l.Items)
	}
	if _, err := q.handleBranchEnd(context.Background(), struct{}{}); err != nil {
		t.Fatal(err)
	}
	if l := q.list(scopeBranch); len(l.Items) != 0 {
		t.Fatalf("an ended branch review still lists: %+v", l.Items)
	}
}

// What the request gives git is a directory and two commit ids, never an
// option or a revision expression.
func TestBranchRefChecked(t *testing.T) {
	id := strings.Repeat("a", 40)
	for _, c := range []struct {
		name string
		r    branchRef
		ok   bool
	}{
		{"fine", branchRef{Dir: "/r/w", Base: id, Tip: id}, true},
		{"sha256", branchRef{Dir: "/r/w", Base: strings.Repeat("b", 64), Tip: id}, true},
		{"relative dir", branchRef{Dir: "r/w", Base: id, Tip: id}, false},
		{"dot dot", branchRef{Dir: "/r/../w", Base: id, Tip: id}, false},
		{"option", branchRef{Dir: "/r/w", Base: "--output=/tmp/x", Tip: id}, false},
		{"expression", branchRef{Dir: "/r/w", Base: "HEAD~1", Tip: id}, false},
		{"short", branchRef{Dir: "/r/w", Base: id[:12], Tip: id}, false},
		{"upper", branchRef{Dir: "/r/w", Base: strings.ToUpper(id), Tip: id}, false},
	} {
		err := checkBranchRef(c.r)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// splitNames leaves out what no cat-file batch line can name.
func TestSplitNames(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a\x00b c\x00", []string{"a", "b c"}},
		{"x\ny\x00z\x00", []string{"z"}},
		{"\x00\x00", nil},
	} {
		got := splitNames(c.in)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// A session in one of the project's worktrees files its transcript under
// the worktree's own project directory: the queue reads it too, and the
// item carries the session's directory (Lua names the worktree from it).
func TestQueueReadsWorktreeSessions(t *testing.T) {
	cfg := t.TempDir()
	proj, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(proj, ".claude", "worktrees", "feat")
	a := filepath.Join(wt, "a.txt")
	writeFile(t, a, "new\n")
	dir := filepath.Join(cfg, "projects", projectDirName(wt))
	if !strings.HasPrefix(filepath.Base(dir), worktreeDirPrefix(proj)) {
		t.Fatalf("%s does not begin with %s", filepath.Base(dir), worktreeDirPrefix(proj))
	}
	q := newTestQueue(t)
	testWorkspace(q).SetCwd(proj)
	q.setOptions(reviewOptions(t, Options{ConfigDir: cfg, Cwd: proj}))
	stamp := func(line string) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(withCwd(line, wt)), &m)
		m["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
		b, _ := json.Marshal(m)
		return string(b)
	}
	writeFile(t, filepath.Join(dir, "w1.jsonl"), stamp(promptLine("W1", "p1"))+"\n"+stamp(editLine("W1", "p1", a, "old\n", "old", "new"))+"\n")
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := list(t, q, "turn")
		if it, ok := got["a.txt@W1"]; ok {
			if it.Dir != wt {
				t.Fatalf("the item's dir is %q, want the worktree %q", it.Dir, wt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worktree session's edit is not listed: %+v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
