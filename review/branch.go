package review

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nvim-claude/nvim-claude/display"
)

// A branch review is the queue's third scope: every file a worktree's
// branch changed since it left the main line (merge base to tip), each
// file's baseline its text at the merge base and its result its text at
// the tip. It reuses everything the turn and session scopes have — the
// panel, the diff against the baseline, gr and gR to put back (here: to
// drop) a hunk or a file in the worktree's copy, gm — so that finishing a
// worktree is reviewed with the same keys. What stays in the worktree's
// files is what is kept; Lua brings that in.
const scopeBranch = "branch"

// branchTimeout bounds the git commands of one branch review.
const branchTimeout = time.Minute

// branchReview is the branch under review (one at a time: finishing is
// one worktree after another).
type branchReview struct {
	dir, base, tip, label string
	entries               []*entry
}

// branchRef asks for the review of the worktree at Dir: its branch from
// Base (the merge base with the main line) to Tip, both full commit ids.
type branchRef struct {
	Dir   string `json:"dir"`
	Base  string `json:"base"`
	Tip   string `json:"tip"`
	Label string `json:"label"` // how the panel names the branch (Lua makes it)
}

// isCommitID reports whether s is a full commit id: 40 (SHA-1) or 64
// (SHA-256) lowercase hex digits. Not a regexp: a package-level one is
// compiled at every start of the host, before its server may listen.
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkBranchRef refuses what is not a worktree directory and two commit
// ids: nothing from the request reaches git's command line as an option.
func checkBranchRef(r branchRef) error {
	if !filepath.IsAbs(r.Dir) || hasDotDot(r.Dir) {
		return fmt.Errorf("the worktree %s is not an absolute path", display.Line(r.Dir, 0))
	}
	if !isCommitID(r.Base) || !isCommitID(r.Tip) {
		return errors.New("a branch review needs the base and the tip as full commit ids")
	}
	return nil
}

// handleBranch starts the review of a worktree's branch: it lists the
// files the branch changed and keeps their texts at the base and the tip.
// It runs git: Lua calls it with request_async.
func (q *Queue) handleBranch(ctx context.Context, r branchRef) (any, error) {
	if err := checkBranchRef(r); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, branchTimeout)
	defer cancel()
	names, err := branchFiles(ctx, r.Dir, r.Base, r.Tip)
	if err != nil {
		return nil, err
	}
	var specs []string
	for _, n := range names {
		specs = append(specs, r.Base+":"+n, r.Tip+":"+n)
	}
	blobs, err := catFiles(ctx, r.Dir, specs)
	if err != nil {
		return nil, err
	}
	b := &branchReview{dir: r.Dir, base: r.Base, tip: r.Tip, label: r.Label}
	if b.label == "" {
		b.label = "branch"
	}
	for i, n := range names {
		base, tip := blobs[2*i], blobs[2*i+1]
		e := &entry{session: scopeBranch, turn: r.Tip, path: filepath.Join(r.Dir, filepath.FromSlash(n)), baseline: base}
		if tip != nil {
			e.result = *tip
		}
		b.entries = append(b.entries, e)
	}
	q.mu.Lock()
	q.branch = b
	q.mu.Unlock()
	return q.list(scopeBranch), nil
}

// handleBranchEnd forgets the branch review (the worktree was brought in
// or discarded).
func (q *Queue) handleBranchEnd(_ context.Context, _ struct{}) (any, error) {
	q.mu.Lock()
	q.branch = nil
	q.mu.Unlock()
	return map[string]any{"ended": true}, nil
}

// gitCmd is git in dir, without a terminal prompt, a pager or optional
// locks (a review only reads).
func gitCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.quotepath=off"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat")
	cmd.WaitDelay = time.Second
	return cmd
}

// branchFiles names the files that differ between base and tip (relative
// to the repository's top, slash-separated), in git's order. A name with a
// line end cannot be asked of cat-file's batch: it is left out (and the
// bring-in still carries it, as git merges the whole branch).
func branchFiles(ctx context.Context, dir, base, tip string) ([]string, error) {
	var out, errb bytes.Buffer
	cmd := gitCmd(ctx, dir, "diff", "--no-renames", "--no-ext-diff", "--no-textconv", "-z", "--name-only", base, tip, "--")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git diff in %s: %s: %w", display.Line(dir, 0), display.Line(strings.TrimSpace(errb.String()), 300), err)
	}
	return splitNames(out.String()), nil
}

// splitNames splits git's -z output into names, leaving out those no
// batch request can name.
func splitNames(s string) []string {
	var names []string
	for _, n := range strings.Split(s, "\x00") {
		if n == "" || strings.ContainsAny(n, "\n\r") {
			continue
		}
		names = append(names, n)
	}
	return names
}

// catFiles reads each "<commit>:<path>" spec's blob with one git
// cat-file --batch: nil where the path does not exist at that commit (or
// is not a file); a blob larger than the queue reads is given as binary.
func catFiles(ctx context.Context, dir string, specs []string) ([]*string, error) {
	out := make([]*string, len(specs))
	if len(specs) == 0 {
		return out, nil
	}
	cmd := gitCmd(ctx, dir, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(specs, "\n") + "\n")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	rd := bufio.NewReader(stdout)
	readErr := readBatch(rd, out)
	if readErr != nil {
		_, _ = io.Copy(io.Discard, rd)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git cat-file in %s: %s: %w", display.Line(dir, 0), display.Line(strings.TrimSpace(errb.String()), 300), err)
	}
	return out, readErr
}

// readBatch reads cat-file --batch's answers, one per spec, into out.
func readBatch(rd *bufio.Reader, out []*string) error {
	for i := range out {
		head, err := rd.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file ended early: %w", err)
		}
		f := strings.Fields(head)
		if len(f) == 2 && f[1] == "missing" || len(f) < 3 {
			continue // not at that commit
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("git cat-file: a header %q", display.Line(head, 80))
		}
		var body []byte
		if size > maxFile {
			if _, err := io.CopyN(io.Discard, rd, size+1); err != nil {
				return err
			}
			s := "\x00 (larger than the review reads)"
			out[i] = &s
			continue
		}
		body = make([]byte, size+1) // and the line end after it
		if _, err := io.ReadFull(rd, body); err != nil {
			return fmt.Errorf("git cat-file ended early: %w", err)
		}
		if f[1] != "blob" {
			continue // a submodule's commit, a tree: no file here
		}
		s := string(body[:size])
		out[i] = &s
	}
	return nil
}
