package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/display"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// maxFile is the largest file the queue reads to count and revert a
// change: a larger one is listed as unreadable.
const maxFile = 64 << 20

// pollEvery is how often the transcripts are looked at: one directory
// listing and a stat per session file. After idleScans scans that found
// nothing new, the look is every pollIdle instead, until one finds
// something: a project with hundreds of past sessions costs a quiet
// Neovim a quarter of the stats.
const (
	pollEvery = 250 * time.Millisecond
	pollIdle  = time.Second
	idleScans = 20
)

// entry is one file Claude changed in one turn of one session.
type entry struct {
	session, turn string
	path          string
	baseline      *string // nil: the file did not exist before the turn
	result        string  // the file as Claude's last write in the turn left it
	reviewed      bool
}

// sessionState is what the queue knows of one CLI session.
type sessionState struct {
	id   string
	kind string // terminal, chat or session (not known)
	turn string // the turn now (the latest prompt)
	dir  string // where the CLI runs (its records' cwd): Lua names its worktree
}

// Queue is the review queue feature.
type Queue struct {
	h   host.Host
	log *slog.Logger

	mu       sync.Mutex
	entries  []*entry
	sessions map[string]*sessionState
	opts     Options
	seen     map[string]bool // the uuids of the user records applied
	seq      uint64          // listings made (List.Seq)
	branch   *branchReview   // the worktree branch under review, if any

	// The poller's own state: setOptions's first scan, then only the
	// poll goroutine touches tails and primed.
	tails  map[string]*tail
	primed map[string]bool // by project path
	dirs   []string        // the primed project paths, in order
	grew   bool            // a transcript grew in this scan
	// The transcript directories of worktree sessions (by directory: the
	// project path their records must be inside), in the order found.
	wtDirs  map[string]string
	wtOrder []string
	wtScans int

	started time.Time // a subagent transcript last written before is history
	maxLine int       // the longest transcript line read (MaxLine; tests set less)
	start   sync.Once
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New makes the review queue feature. It starts reading transcripts once
// the options name the Claude config directory.
func New(h host.Host) *Queue {
	return &Queue{
		h: h, log: h.Logger().With("feature", "review"),
		sessions: map[string]*sessionState{}, seen: map[string]bool{},
		tails: map[string]*tail{}, primed: map[string]bool{}, wtDirs: map[string]string{},
		stop: make(chan struct{}), started: time.Now(), maxLine: MaxLine,
	}
}

// Name names the feature.
func (q *Queue) Name() string { return "review" }

// Hooks are the feature's Lua handlers and lifetime.
func (q *Queue) Hooks() host.Hooks {
	return host.Hooks{
		LuaRequests: map[string]host.LuaRequest{
			"review_list":        host.Request("review_list", q.handleList),
			"review_baseline":    host.Request("review_baseline", q.handleBaseline),
			"review_revert_hunk": host.Request("review_revert_hunk", q.handleRevertHunk),
			"review_revert_file": host.Request("review_revert_file", q.handleRevertFile),
			"review_delete":      host.Request("review_delete", q.handleDelete),
			"review_check":       host.Request("review_check", q.handleCheck),
			"review_mark":        host.Request("review_mark", q.handleMark),
			"review_branch":      host.Request("review_branch", q.handleBranch),
			"review_branch_end":  host.Request("review_branch_end", q.handleBranchEnd),
		},
		Options: q.setOptions,
		Close:   q.close,
	}
}

func (q *Queue) setOptions(o host.Options) error {
	var r Options
	if err := o.Decode("review", &r); err != nil {
		return err
	}
	q.mu.Lock()
	q.opts = r
	q.mu.Unlock()
	if r.ConfigDir == "" {
		return nil
	}
	q.start.Do(func() {
		// The first look is here, so that what the transcripts hold now
		// is history before anything can append to them.
		q.scan()
		q.wg.Add(1)
		go q.poll()
	})
	return nil
}

// Options are what the queue needs of setup(): where the CLI keeps its
// session transcripts (its config directory) and the project they are
// filed under (Neovim's cwd when the host started).
type Options struct {
	ConfigDir string `json:"config_dir"`
	Cwd       string `json:"cwd"`
}

func (q *Queue) close() {
	select {
	case <-q.stop:
	default:
		close(q.stop)
	}
	q.wg.Wait()
}

// poll reads the transcripts until the feature closes.
func (q *Queue) poll() {
	defer q.wg.Done()
	t := time.NewTimer(pollEvery)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		if q.scan() {
			idle = 0
		} else {
			idle++
		}
		t.Reset(pollInterval(idle))
	}
}

// pollInterval is the wait before the next scan after idle scans in a row
// that found nothing.
func pollInterval(idle int) time.Duration {
	if idle >= idleScans {
		return pollIdle
	}
	return pollEvery
}

// projectPaths are the paths the workspace's sessions may be filed under:
// its directory, and the same with its symbolic links resolved (the CLI
// may use either); "" without a config directory.
func (q *Queue) projectPaths() (projects string, paths []string) {
	q.mu.Lock()
	o := q.opts
	q.mu.Unlock()
	cwd := q.h.Workspace().Cwd()
	if cwd == "" {
		cwd = o.Cwd
	}
	if o.ConfigDir == "" || cwd == "" {
		return "", nil
	}
	paths = []string{cwd}
	if real, err := filepath.EvalSymlinks(cwd); err == nil && real != cwd {
		paths = append(paths, real)
	}
	// A folder besides the cwd (a session's worktree made outside it)
	// files its sessions under its own path.
	for _, f := range q.h.Workspace().Folders() {
		if f != "" && !slices.Contains(paths, f) && !insideDir(f, cwd) {
			paths = append(paths, f)
		}
	}
	return filepath.Join(o.ConfigDir, "projects"), paths
}

// worktreeDirPrefix is how the transcript directories of the sessions in
// the worktrees of the project at cwd begin: the CLI files a session under
// its own directory, <cwd>/.claude/worktrees/<name> (its --worktree layout
// and ours).
func worktreeDirPrefix(cwd string) string {
	return projectDirName(filepath.Join(cwd, ".claude", "worktrees")) + "-"
}

// scanWorktrees reads what the transcripts of the project's worktree
// sessions gained: every few scans it lists the transcript directories
// for those of worktrees (one made after the queue started is read from
// its start; records count when their cwd is inside the project).
func (q *Queue) scanWorktrees(projects string, paths []string) bool {
	if projects == "" {
		return false
	}
	q.wtScans++
	if q.wtScans%4 == 1 {
		ents, err := os.ReadDir(projects)
		if err == nil {
			for _, p := range paths {
				prefix := worktreeDirPrefix(p)
				for _, e := range ents {
					if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
						continue
					}
					d := filepath.Join(projects, e.Name())
					if _, ok := q.wtDirs[d]; !ok {
						q.wtDirs[d] = p
						q.wtOrder = append(q.wtOrder, d)
					}
				}
			}
		}
	}
	changed := false
	for _, d := range q.wtOrder {
		if q.scanDir(d, q.wtDirs[d], false) {
			changed = true
		}
	}
	return changed
}

// maxProjectName is the longest project directory name the CLI uses as
// it is; a longer one is cut there and given a hash of the path.
const maxProjectName = 200

// projectDir is the directory of cwd's transcripts under projects.
func projectDir(projects, cwd string) string {
	name := projectDirName(cwd)
	if len(name) <= maxProjectName {
		return filepath.Join(projects, name)
	}
	prefix := name[:maxProjectName]
	if ents, err := os.ReadDir(projects); err == nil {
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				return filepath.Join(projects, e.Name())
			}
		}
	}
	return filepath.Join(projects, name) // not there yet: looked for again
}

// scan reads what the transcripts gained: those of the workspace's
// directory now and of every one it had (a session started before a :cd
// goes on in its own). What a project's directory holds when the queue
// first looks is history: only what it gains counts (all of it when the
// directory comes later).
func (q *Queue) scan() (grew bool) {
	projects, paths := q.projectPaths()
	for _, p := range paths {
		if !q.primed[p] {
			q.primed[p] = true
			q.dirs = append(q.dirs, p)
			q.scanDir(projectDir(projects, p), p, true)
		}
	}
	changed := false
	for _, p := range q.dirs {
		if q.scanDir(projectDir(projects, p), p, false) {
			changed = true
		}
	}
	if q.scanWorktrees(projects, paths) {
		changed = true
	}
	if changed {
		q.emitChanged()
	}
	grew = changed || q.grew
	q.grew = false
	return grew
}

// scanDir reads what dir's transcripts gained and reports whether the
// queue changed; project is the path whose transcripts dir holds (only
// its records count); first: the directory is new to us, and what its
// files hold now is history.
func (q *Queue) scanDir(dir, project string, first bool) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	changed := false
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if q.scanFile(p, e, project, first, false) {
			changed = true
		}
		// A session we saw write or prompt has its subagents' transcripts
		// in <session>/subagents/: their writes are the session's, in its
		// turn. Those written before the queue started are history.
		if t := q.tails[p]; t != nil && t.live {
			subdir := filepath.Join(dir, strings.TrimSuffix(e.Name(), ".jsonl"), "subagents")
			subs, err := os.ReadDir(subdir)
			if err != nil {
				continue
			}
			for _, se := range subs {
				if se.IsDir() || !strings.HasSuffix(se.Name(), ".jsonl") {
					continue
				}
				if q.scanFile(filepath.Join(subdir, se.Name()), se, project, false, true) {
					changed = true
				}
			}
		}
	}
	return changed
}

// scanFile reads what one transcript gained; history: what it holds when
// first seen is not read; a subagent's file when it was last written
// before the queue started is history too.
func (q *Queue) scanFile(p string, e os.DirEntry, project string, history, sidechain bool) bool {
	fi, err := e.Info()
	if err != nil {
		return false
	}
	t := q.tails[p]
	if t == nil {
		t = &tail{}
		// (File times come from a coarse clock: a margin.)
		if history || (sidechain && fi.ModTime().Before(q.started.Add(-2*time.Second))) {
			t.off = fi.Size()
		}
		q.tails[p] = t
	}
	changed := false
	if fi.Size() != t.off {
		q.grew = true // a session is at work: look again soon
	}
	t.readNew(p, fi.Size(), q.maxLine, func(line []byte) {
		t.live = true
		if q.apply(line, sidechain, project) {
			changed = true
		}
	}, func(n int) {
		q.log.Warn("transcript line over the cap skipped: a write it records is not listed",
			"file", p, "bytes_so_far", n, "cap", q.maxLine)
	})
	return changed
}

// apply takes one transcript line of project's transcript directory and
// reports whether the queue changed.
func (q *Queue) apply(line []byte, sidechain bool, project string) bool {
	// Most of a transcript is the assistant's records: a line without the
	// token "user" (however the JSON is spaced) is none of the user
	// records read here, and is not decoded.
	if !bytes.Contains(line, []byte(`"user"`)) {
		return false
	}
	var r record
	if json.Unmarshal(line, &r) != nil || r.SessionID == "" || r.Type != "user" || !inProject(r.Cwd, project) {
		return false
	}
	// A record from before the queue started is history even in a file
	// new to it: a forked or resumed session's file begins with the
	// records it copied (their own times kept, their prompt ids dropped),
	// whose writes are not this turn's. (File times come from a coarse
	// clock: a margin.)
	if ts, err := time.Parse(time.RFC3339Nano, r.Timestamp); err == nil && ts.Before(q.started.Add(-2*time.Second)) {
		return false
	}
	// A fork copies the session's records into its own file with their
	// uuids (and times) kept, under the fork's first prompt id: a record
	// seen already is that copy, not a write of the fork's turn.
	if r.UUID != "" {
		q.mu.Lock()
		dup := q.seen[r.UUID]
		q.seen[r.UUID] = true
		q.mu.Unlock()
		if dup {
			return false
		}
	}
	turn := r.PromptID
	prompt := r.isPrompt()
	if turn == "" && prompt {
		turn = r.UUID
	}
	c, isChange := r.change()
	after := ""
	if isChange {
		// Outside the lock: a file read.
		if c.after != nil {
			after = *c.after
		} else if wp, err := q.check(c.path); err == nil {
			if b, err := q.read(wp); err == nil && b != nil {
				after = *b
			}
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.sessions[r.SessionID]
	if s == nil {
		s = &sessionState{id: r.SessionID, kind: "session"}
		q.sessions[r.SessionID] = s
	}
	if s.dir == "" && filepath.IsAbs(r.Cwd) {
		s.dir = filepath.Clean(r.Cwd)
	}
	switch {
	case r.Entrypoint == "cli":
		s.kind = "terminal"
	case strings.HasPrefix(r.Entrypoint, "sdk"):
		s.kind = "chat"
	}
	newTurn := false
	// A subagent's records name prompts of its own: the turn is its
	// session's.
	if !sidechain && turn != "" && turn != s.turn && (prompt || r.PromptID != "") {
		s.turn = turn
		newTurn = true
		q.mergeEarlierLocked(s.id, s.turn)
	}
	if !isChange {
		return newTurn
	}
	if s.turn == "" { // a write before any prompt we saw
		s.turn = "(start)"
	}
	for _, e := range q.entries {
		if e.session == s.id && e.turn == s.turn && e.path == c.path {
			e.result = after
			e.reviewed = false
			return true
		}
	}
	q.entries = append(q.entries, &entry{session: s.id, turn: s.turn, path: c.path, baseline: c.before, result: after})
	return true
}

// turnEarlier is the turn of a session's entries merged from the turns
// before its current one (no prompt id looks like it).
const turnEarlier = "(earlier turns)"

// mergeEarlierLocked merges the entries of session's turns before current
// into one per file: the first one's baseline, the last one's result,
// reviewed only if all were. That is all the session scope shows of them
// (the turn scope shows the current turn only), and a long session would
// otherwise keep two texts of a file for every turn that wrote it: the
// queue's memory would grow with the transcript. q.mu is held.
func (q *Queue) mergeEarlierLocked(session, current string) {
	first := map[string]*entry{}
	out := q.entries[:0]
	for _, e := range q.entries {
		if e.session != session || e.turn == current {
			out = append(out, e)
			continue
		}
		if m := first[e.path]; m != nil {
			m.result = e.result
			m.reviewed = m.reviewed && e.reviewed
			continue
		}
		e.turn = turnEarlier
		first[e.path] = e
		out = append(out, e)
	}
	clear(q.entries[len(out):]) // (what the merge dropped is garbage now)
	q.entries = out
}

// emitChanged tells Lua (User ClaudeReviewChanged, the statusline).
func (q *Queue) emitChanged() {
	l := q.list(scopeTurn)
	q.h.Emit("review.changed", map[string]any{"count": l.Count, "seq": l.Seq})
}

// toReview is how many files of the current turns are not reviewed: the
// count of the list :ClaudeReview shows, so that the two agree.
func (q *Queue) toReview() int {
	return q.list(scopeTurn).Count
}

// check is the boundary's judgement of a listed file, made at each use
// (a symlink swapped in after the listing is judged anew): the one rule
// for every write of the plugin's — inside a workspace folder with
// symlinks resolved, not deny-listed, not inside .git, no "..". A revert
// is such a write, and the diff shows what a revert would write back.
func (q *Queue) check(path string) (workspace.Path, error) {
	return q.h.Workspace().Check(context.Background(), path, workspace.Write, nil)
}

// read reads a file that passed check, through the boundary; nil: it does
// not exist.
func (q *Queue) read(wp workspace.Path) (*string, error) {
	if _, err := os.Lstat(wp.Real); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	b, err := q.h.Workspace().Files().ReadFile(wp, maxFile)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", display.Line(wp.Abs, 0), err)
	}
	s := string(b)
	return &s, nil
}

// refusal says in a few words why the boundary refused a listed file.
func refusal(path string, err error) string {
	switch {
	case errors.Is(err, workspace.ErrDenied):
		return "deny-listed (security.deny)"
	case errors.Is(err, workspace.ErrGitDir):
		return "inside .git"
	case errors.Is(err, workspace.ErrHome):
		return "in a home-directory workspace (security.allow_home)"
	case hasDotDot(path):
		return `a path with ".."`
	default:
		return "outside the workspace"
	}
}

// refused is the error for a diff or revert of a file the boundary
// refuses: the path in full, and why.
func refused(path string, err error) error {
	return fmt.Errorf("%s is %s: Claude's change there is listed, never diffed or reverted by nvim-claude: %w",
		display.Line(path, 0), refusal(path, err), err)
}

const (
	scopeTurn    = "turn"
	scopeSession = "session"
)

// item is one row of the queue: an entry of a current turn, or in the
// session scope every turn's entries of one file of one session merged
// (the first turn's baseline, the last turn's result).
type item struct {
	session  string
	path     string
	baseline *string
	result   string
	reviewed bool
	entries  []*entry
}

func (q *Queue) itemsLocked(scope string) []*item {
	var out []*item
	byKey := map[string]*item{}
	entries := q.entries
	if scope == scopeBranch {
		entries = nil
		if q.branch != nil {
			entries = q.branch.entries
		}
	}
	for _, e := range entries {
		s := q.sessions[e.session]
		if scope == scopeTurn && (s == nil || e.turn != s.turn) {
			continue
		}
		key := e.session + "\x00" + e.path
		it := byKey[key]
		if it == nil {
			it = &item{session: e.session, path: e.path, baseline: e.baseline, reviewed: true}
			byKey[key] = it
			out = append(out, it)
		}
		it.result = e.result
		it.reviewed = it.reviewed && e.reviewed
		it.entries = append(it.entries, e)
	}
	return out
}

func knownScope(s string) bool {
	return s == scopeTurn || s == scopeSession || s == scopeBranch
}

// ref names one item in a request from Lua.
type ref struct {
	Scope   string `json:"scope"`
	Session string `json:"session"`
	Path    string `json:"path"`
}

func (q *Queue) find(r ref) (*item, error) {
	if r.Scope == "" {
		r.Scope = scopeTurn
	}
	if !knownScope(r.Scope) {
		return nil, fmt.Errorf("unknown scope %q (turn, session or branch)", r.Scope)
	}
	for _, it := range q.itemsLocked(r.Scope) {
		if it.session == r.Session && it.path == r.Path {
			return it, nil
		}
	}
	return nil, fmt.Errorf("%s is not in the review queue (any more)", display.Line(r.Path, 0))
}

// ListItem is one row of :ClaudeReview.
type ListItem struct {
	Session string `json:"session"`
	Label   string `json:"label"` // the session as the user sees it
	// Dir is where the session runs (its CLI's directory, from the
	// transcript; for a branch review the worktree): Lua names the
	// worktree from it.
	Dir      string `json:"dir,omitempty"`
	Path     string `json:"path"`
	Status   string `json:"status"` // modified, new, deleted, binary, unreadable, refused
	Added    int    `json:"added"`
	Removed  int    `json:"removed"`
	Reviewed bool   `json:"reviewed"`
	Line     int    `json:"line"` // the first changed line now (1-based)
	Denied   bool   `json:"denied,omitempty"`
	// Refused says why the boundary refuses the file (outside the
	// workspace, deny-listed ...): it is listed, never read, diffed or
	// reverted.
	Refused string `json:"refused,omitempty"`
}

// List is review_list's answer.
type List struct {
	Scope string     `json:"scope"`
	Items []ListItem `json:"items"`
	Count int        `json:"count"` // not reviewed
	// Seq orders the counts of listings and events: taken before the
	// files are read, so a higher one is never older news. Lua keeps the
	// count of the highest (an event and a listing may arrive in either
	// order).
	Seq uint64 `json:"seq"`
}

// sessionLabel names a session by its kind and the start of its id.
func sessionLabel(kind, id string) string {
	if len(id) > 8 {
		id = id[:8]
	}
	return kind + " " + id
}

func (q *Queue) handleList(_ context.Context, r ref) (any, error) {
	if r.Scope == "" {
		r.Scope = scopeTurn
	}
	if !knownScope(r.Scope) {
		return nil, fmt.Errorf("unknown scope %q (turn, session or branch)", r.Scope)
	}
	return q.list(r.Scope), nil
}

// list is the queue as :ClaudeReview shows it. A file the boundary refuses
// is listed as refused, with why, and never read; a file now exactly as
// it was before the turn (reverted, or a write that changed nothing) has
// nothing to review and is not listed.
func (q *Queue) list(scope string) List {
	q.mu.Lock()
	q.seq++
	seq := q.seq
	items := q.itemsLocked(scope)
	snaps := make([]item, len(items))
	labels := make([]string, len(items))
	dirs := make([]string, len(items))
	for i, it := range items {
		snaps[i] = *it
		if scope == scopeBranch && q.branch != nil {
			labels[i], dirs[i] = q.branch.label, q.branch.dir
			continue
		}
		kind := "session"
		if s := q.sessions[it.session]; s != nil {
			kind, dirs[i] = s.kind, s.dir
		}
		labels[i] = sessionLabel(kind, it.session)
	}
	q.mu.Unlock()
	out := List{Scope: scope, Items: []ListItem{}, Seq: seq}
	for i, it := range snaps {
		li := ListItem{Session: it.session, Label: labels[i], Dir: dirs[i], Path: it.path, Reviewed: it.reviewed, Line: 1}
		var cur *string
		wp, err := q.check(it.path)
		if err == nil {
			cur, err = q.read(wp)
		}
		switch {
		case err != nil && workspace.Refused(err):
			li.Status, li.Refused = "refused", refusal(it.path, err)
			li.Denied = errors.Is(err, workspace.ErrDenied)
		case err != nil:
			// One file that cannot be read (a directory now, no
			// permission) is listed as such; the others still are.
			li.Status = "unreadable"
		default:
			if (cur == nil) == (it.baseline == nil) && (cur == nil || *cur == *it.baseline) {
				continue
			}
			q.counts(&li, it.baseline, cur)
		}
		if !li.Reviewed {
			out.Count++
		}
		out.Items = append(out.Items, li)
	}
	return out
}

// counts fills in li's status, lines added and removed, and first changed
// line, from the baseline and the text now (nil: no file).
func (q *Queue) counts(li *ListItem, baseline, cur *string) {
	base, now := "", ""
	if baseline != nil {
		base = *baseline
	}
	if cur != nil {
		now = *cur
	}
	switch {
	case cur == nil && baseline != nil:
		li.Status = "deleted"
	case baseline == nil:
		li.Status = "new"
	default:
		li.Status = "modified"
	}
	if isBinary(base) || isBinary(now) {
		li.Status = "binary"
		return
	}
	bl, nl := splitText(base), splitText(now)
	hs := diffLines(bl, nl)
	for _, h := range hs {
		li.Added += h.B1 - h.B0
		li.Removed += h.A1 - h.A0
	}
	if len(hs) > 0 {
		li.Line = min(hs[0].B0+1, max(len(nl), 1))
	}
}

// Baseline is review_baseline's answer: what the diff shows on the left.
type Baseline struct {
	Lines  []string `json:"lines"`
	New    bool     `json:"new"` // the file did not exist before the turn
	Binary bool     `json:"binary"`
}

func (q *Queue) handleBaseline(_ context.Context, r ref) (any, error) {
	q.mu.Lock()
	it, err := q.find(r)
	var base *string
	var res string
	if err == nil {
		base, res = it.baseline, it.result
	}
	q.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if _, err := q.check(r.Path); err != nil {
		return nil, refused(r.Path, err)
	}
	if base == nil {
		return Baseline{Lines: []string{}, New: true, Binary: isBinary(res)}, nil
	}
	if isBinary(*base) || isBinary(res) {
		return Baseline{Lines: []string{}, Binary: true}, nil
	}
	return Baseline{Lines: splitText(*base)}, nil
}

// revertRef is a revert request: the item, the text now as the buffer
// holds it, and for a hunk the cursor's line (1-based) and the side of the
// diff it is on: "file" (the default) or "baseline" (the left side, whose
// line numbers are the baseline's).
type revertRef struct {
	ref
	Line  int      `json:"line"`
	Side  string   `json:"side"`
	Lines []string `json:"lines"`
	// Write: the buffer has no unsaved change, so the revert is written
	// to the file — by the host, through the boundary's confined writer.
	Write bool `json:"write"`
}

// texts are the item's baseline and result as lines, or why it cannot be
// reverted by lines.
func (q *Queue) texts(r ref) (base, res []string, isNew bool, err error) {
	q.mu.Lock()
	it, err := q.find(r)
	var b *string
	var rs string
	if err == nil {
		b, rs = it.baseline, it.result
	}
	q.mu.Unlock()
	if err != nil {
		return nil, nil, false, err
	}
	if b == nil {
		return []string{}, splitText(rs), true, nil
	}
	if isBinary(*b) || isBinary(rs) {
		return nil, nil, false, fmt.Errorf("%s is binary: it is listed, not diffed or reverted here", display.Line(r.Path, 0))
	}
	return splitText(*b), splitText(rs), false, nil
}

func (q *Queue) handleRevertHunk(_ context.Context, r revertRef) (any, error) {
	if _, err := q.check(r.Path); err != nil {
		return nil, refused(r.Path, err)
	}
	base, res, _, err := q.texts(r.ref)
	if err != nil {
		return nil, err
	}
	if r.Lines == nil {
		r.Lines = []string{}
	}
	if r.Side != "" && r.Side != "file" && r.Side != "baseline" {
		return nil, fmt.Errorf("unknown side %q (file or baseline)", r.Side)
	}
	e, err := revertHunk(base, res, r.Lines, r.Line-1, r.Side == "baseline")
	if err != nil {
		return nil, err
	}
	return e, nil
}

// RevertFile is review_revert_file's answer: edits for the buffer, or,
// for a file Claude created, that the file is to be deleted (after the
// user says so: review_delete).
type RevertFile struct {
	Edits  []Edit `json:"edits"`
	Delete bool   `json:"delete"`
	// Written: the host wrote the reverted file (the request's Write);
	// the edits bring the buffer to the same text.
	Written bool `json:"written"`
	// EOL is whether the baseline ends with a line end: the buffer's
	// 'endofline', so that a file without one stays without. Absent for
	// an empty baseline.
	EOL *bool `json:"eol,omitempty"`
}

func (q *Queue) handleRevertFile(_ context.Context, r revertRef) (any, error) {
	wp, err := q.check(r.Path)
	if err != nil {
		return nil, refused(r.Path, err)
	}
	base, res, isNew, err := q.texts(r.ref)
	if err != nil {
		return nil, err
	}
	eol := q.baselineEOL(r.ref)
	cur, err := q.read(wp)
	if err != nil {
		return nil, err
	}
	shown := display.Line(r.Path, 0)
	if cur == nil {
		if isNew {
			return nil, fmt.Errorf("%s is gone already", shown)
		}
		if r.Scope == scopeBranch && r.Write {
			// The branch deleted it (a commit, not a change of yours
			// since): dropping that deletion writes its text at the base.
			return q.restore(wp, r)
		}
		// Who deleted it is not known: restoring it could undo yours.
		return nil, fmt.Errorf("%s is gone: its text before the turn is the left side of its diff (<CR> in :ClaudeReview), to restore by hand", shown)
	}
	if r.Lines == nil {
		r.Lines = []string{}
	}
	lines := r.Lines
	var f fileForm
	if r.Write {
		// The file's own text, not the buffer's: what is written is the
		// file with Claude's hunks put back.
		lines, f = splitFile(*cur)
	}
	edits, err := revertAll(base, res, lines)
	if err != nil {
		return nil, err
	}
	if isNew {
		// Claude created it and nobody changed it since: it goes.
		return RevertFile{Edits: []Edit{}, Delete: true}, nil
	}
	if len(edits) == 0 {
		return nil, fmt.Errorf("nothing of Claude's left to revert in %s: where Claude changed it, it reads as before the turn", shown)
	}
	if !r.Write {
		return RevertFile{Edits: edits, EOL: eol}, nil
	}
	text := reverted(lines, edits)
	if eol != nil {
		f.eol = *eol
	}
	if err := q.h.Workspace().Files().WriteFile(wp, f.bytes(text)); err != nil {
		return nil, fmt.Errorf("could not write %s: %w", shown, err)
	}
	if !slices.Equal(lines, r.Lines) {
		// The buffer did not hold the file's text: it gets the file's.
		edits = []Edit{{Start: 0, End: len(r.Lines), Lines: text}}
	}
	return RevertFile{Edits: edits, Written: true, EOL: &f.eol}, nil
}

// restore writes back a file the branch under review deleted: its text
// at the base, through the boundary's confined writer; the buffer (empty,
// r.Lines) gets the same lines.
func (q *Queue) restore(wp workspace.Path, r revertRef) (any, error) {
	q.mu.Lock()
	it, err := q.find(r.ref)
	var base *string
	if err == nil {
		base = it.baseline
	}
	q.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, fmt.Errorf("%s did not exist at the base: nothing to restore", display.Line(r.Path, 0))
	}
	if err := q.h.Workspace().Files().WriteFile(wp, []byte(*base)); err != nil {
		return nil, fmt.Errorf("could not write %s: %w", display.Line(r.Path, 0), err)
	}
	lines, f := splitFile(*base)
	return RevertFile{Edits: []Edit{{Start: 0, End: len(r.Lines), Lines: lines}}, Written: true, EOL: &f.eol}, nil
}

// fileForm is how a file writes its lines: line ends, a last one, a BOM.
type fileForm struct {
	crlf, eol, bom bool
}

// splitFile is splitText with the file's form, to write it back alike.
func splitFile(s string) ([]string, fileForm) {
	f := fileForm{bom: strings.HasPrefix(s, "\ufeff"), eol: s == "" || strings.HasSuffix(s, "\n")}
	lines := splitText(s)
	f.crlf = len(lines) > 0 && strings.Contains(s, "\r\n") && !strings.Contains(strings.ReplaceAll(s, "\r\n", ""), "\n")
	return lines, f
}

func (f fileForm) bytes(lines []string) []byte {
	sep := "\n"
	if f.crlf {
		sep = "\r\n"
	}
	var b strings.Builder
	if f.bom {
		b.WriteString("\ufeff")
	}
	b.WriteString(strings.Join(lines, sep))
	if f.eol && len(lines) > 0 {
		b.WriteString(sep)
	}
	return []byte(b.String())
}

// reverted applies revertAll's edits (last first) to lines.
func reverted(lines []string, edits []Edit) []string {
	for _, e := range edits {
		lines = splice(lines, e)
	}
	return lines
}

// handleCheck answers whether the boundary allows r's file now: Lua asks
// before it loads the file for a whole-file revert, so that a file outside
// (a symlink swapped in since the listing) is not even read into Neovim.
func (q *Queue) handleCheck(_ context.Context, r ref) (any, error) {
	q.mu.Lock()
	_, err := q.find(r)
	q.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if _, err := q.check(r.Path); err != nil {
		return nil, refused(r.Path, err)
	}
	return map[string]any{"ok": true}, nil
}

// handleDelete deletes a file Claude created, after the user said so
// (review_revert_file answered Delete): through the boundary, judged
// again, and only while it is as Claude left it.
func (q *Queue) handleDelete(_ context.Context, r ref) (any, error) {
	wp, err := q.check(r.Path)
	if err != nil {
		return nil, refused(r.Path, err)
	}
	q.mu.Lock()
	it, err := q.find(r)
	var isNew bool
	var res string
	if err == nil {
		isNew, res = it.baseline == nil, it.result
	}
	q.mu.Unlock()
	if err != nil {
		return nil, err
	}
	shown := display.Line(r.Path, 0)
	if !isNew {
		return nil, fmt.Errorf("%s existed before the turn: it is reverted, not deleted", shown)
	}
	cur, err := q.read(wp)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, fmt.Errorf("%s is gone already", shown)
	}
	if *cur != res {
		return nil, fmt.Errorf("%s changed after Claude created it: not deleted", shown)
	}
	if err := q.h.Workspace().Files().Remove(wp); err != nil {
		return nil, fmt.Errorf("could not delete %s: %w", shown, err)
	}
	return map[string]any{"deleted": true}, nil
}

// baselineEOL reports whether the baseline of r's entry ends with a line
// end (nil: no baseline, or an empty one).
func (q *Queue) baselineEOL(r ref) *bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, err := q.find(r)
	if err != nil || it.baseline == nil || *it.baseline == "" {
		return nil
	}
	eol := strings.HasSuffix(*it.baseline, "\n")
	return &eol
}

// markRef marks an item reviewed or not.
type markRef struct {
	ref
	Reviewed bool `json:"reviewed"`
}

func (q *Queue) handleMark(_ context.Context, r markRef) (any, error) {
	q.mu.Lock()
	it, err := q.find(r.ref)
	if err == nil {
		for _, e := range it.entries {
			e.reviewed = r.Reviewed
		}
	}
	q.mu.Unlock()
	if err != nil {
		return nil, err
	}
	q.emitChanged()
	return map[string]any{"reviewed": r.Reviewed}, nil
}
