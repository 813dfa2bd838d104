package reviewq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/app/host"
)

// pollEvery is how often the transcripts are looked at: one directory
// listing and a stat per session file.
const pollEvery = 250 * time.Millisecond

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
}

// Queue is the review queue feature.
type Queue struct {
	h   host.Host
	log *slog.Logger

	mu       sync.Mutex
	entries  []*entry
	sessions map[string]*sessionState
	opts     host.ReviewOptions

	// The poller's own state: setOptions's first scan, then only the
	// poll goroutine touches tails and primed.
	tails  map[string]*tail
	primed map[string]bool // by project path
	dirs   []string        // the primed project paths, in order

	started time.Time // a subagent transcript last written before is history
	start   sync.Once
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New makes the review queue feature. It starts reading transcripts once
// the options name the Claude config directory.
func New(h host.Host) *Queue {
	return &Queue{
		h: h, log: h.Logger().With("feature", "reviewq"),
		sessions: map[string]*sessionState{},
		tails:    map[string]*tail{}, primed: map[string]bool{},
		stop: make(chan struct{}), started: time.Now(),
	}
}

// Name names the feature.
func (q *Queue) Name() string { return "reviewq" }

// Hooks are the feature's Lua handlers and lifetime.
func (q *Queue) Hooks() host.Hooks {
	return host.Hooks{
		LuaRequests: map[string]host.LuaRequest{
			"review_list":        host.Request("review_list", q.handleList),
			"review_baseline":    host.Request("review_baseline", q.handleBaseline),
			"review_revert_hunk": host.Request("review_revert_hunk", q.handleRevertHunk),
			"review_revert_file": host.Request("review_revert_file", q.handleRevertFile),
			"review_mark":        host.Request("review_mark", q.handleMark),
		},
		Options: q.setOptions,
		Close:   q.close,
	}
}

func (q *Queue) setOptions(o host.Options) {
	q.mu.Lock()
	q.opts = o.Review
	q.mu.Unlock()
	if o.Review.ConfigDir == "" {
		return
	}
	q.start.Do(func() {
		// The first look is here, so that what the transcripts hold now
		// is history before anything can append to them.
		q.scan()
		q.wg.Add(1)
		go q.poll()
	})
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
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		q.scan()
	}
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
	return filepath.Join(o.ConfigDir, "projects"), paths
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
func (q *Queue) scan() {
	projects, paths := q.projectPaths()
	for _, p := range paths {
		if !q.primed[p] {
			q.primed[p] = true
			q.dirs = append(q.dirs, p)
			q.scanDir(projectDir(projects, p), true)
		}
	}
	changed := false
	for _, p := range q.dirs {
		if q.scanDir(projectDir(projects, p), false) {
			changed = true
		}
	}
	if changed {
		q.emitChanged()
	}
}

// scanDir reads what dir's transcripts gained and reports whether the
// queue changed; first: the directory is new to us, and what its files
// hold now is history.
func (q *Queue) scanDir(dir string, first bool) bool {
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
		if q.scanFile(p, e, first, false) {
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
				if q.scanFile(filepath.Join(subdir, se.Name()), se, false, true) {
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
func (q *Queue) scanFile(p string, e os.DirEntry, history, sidechain bool) bool {
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
	for _, line := range t.readNew(p, fi.Size()) {
		t.live = true
		if q.apply(line, sidechain) {
			changed = true
		}
	}
	return changed
}

// apply takes one transcript line and reports whether the queue changed.
func (q *Queue) apply(line []byte, sidechain bool) bool {
	var r record
	if json.Unmarshal(line, &r) != nil || r.SessionID == "" || r.Type != "user" {
		return false
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
		} else if b, err := os.ReadFile(c.path); err == nil {
			after = string(b)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.sessions[r.SessionID]
	if s == nil {
		s = &sessionState{id: r.SessionID, kind: "session"}
		q.sessions[r.SessionID] = s
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

// emitChanged tells Lua (User ClaudeReviewChanged, the statusline).
func (q *Queue) emitChanged() {
	q.h.Emit("review.changed", map[string]any{"count": q.toReview()})
}

// toReview is how many files of the current turns are not reviewed.
func (q *Queue) toReview() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, it := range q.itemsLocked(scopeTurn) {
		if !it.reviewed {
			n++
		}
	}
	return n
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
	for _, e := range q.entries {
		s := q.sessions[e.session]
		if scope != scopeSession && (s == nil || e.turn != s.turn) {
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
	if r.Scope != scopeTurn && r.Scope != scopeSession {
		return nil, fmt.Errorf("unknown scope %q (turn or session)", r.Scope)
	}
	for _, it := range q.itemsLocked(r.Scope) {
		if it.session == r.Session && it.path == r.Path {
			return it, nil
		}
	}
	return nil, fmt.Errorf("%s is not in the review queue (any more)", r.Path)
}

// ListItem is one row of :ClaudeReview.
type ListItem struct {
	Session  string `json:"session"`
	Label    string `json:"label"` // the session as the user sees it
	Path     string `json:"path"`
	Status   string `json:"status"` // modified, new, deleted, binary
	Added    int    `json:"added"`
	Removed  int    `json:"removed"`
	Reviewed bool   `json:"reviewed"`
	Line     int    `json:"line"` // the first changed line now (1-based)
	Denied   bool   `json:"denied,omitempty"`
}

// List is review_list's answer.
type List struct {
	Scope string     `json:"scope"`
	Items []ListItem `json:"items"`
	Count int        `json:"count"` // not reviewed
}

// sessionLabel names a session by its kind and the start of its id.
func sessionLabel(kind, id string) string {
	if len(id) > 8 {
		id = id[:8]
	}
	return kind + " " + id
}

// current reads the file now; nil when it does not exist.
func current(path string) (*string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	s := string(b)
	return &s, nil
}

func (q *Queue) handleList(_ context.Context, r ref) (any, error) {
	if r.Scope == "" {
		r.Scope = scopeTurn
	}
	if r.Scope != scopeTurn && r.Scope != scopeSession {
		return nil, fmt.Errorf("unknown scope %q (turn or session)", r.Scope)
	}
	q.mu.Lock()
	items := q.itemsLocked(r.Scope)
	snaps := make([]item, len(items))
	labels := make([]string, len(items))
	for i, it := range items {
		snaps[i] = *it
		kind := "session"
		if s := q.sessions[it.session]; s != nil {
			kind = s.kind
		}
		labels[i] = sessionLabel(kind, it.session)
	}
	q.mu.Unlock()
	out := List{Scope: r.Scope, Items: []ListItem{}}
	for i, it := range snaps {
		li := ListItem{Session: it.session, Label: labels[i], Path: it.path, Reviewed: it.reviewed, Line: 1,
			Denied: q.h.Workspace().Boundary().Denied(it.path)}
		cur, err := current(it.path)
		if err != nil {
			return nil, err
		}
		base := ""
		if it.baseline != nil {
			base = *it.baseline
		}
		now := ""
		if cur != nil {
			now = *cur
		}
		switch {
		case cur == nil && it.baseline != nil:
			li.Status = "deleted"
		case it.baseline == nil:
			li.Status = "new"
		default:
			li.Status = "modified"
		}
		if isBinary(base) || isBinary(now) {
			li.Status = "binary"
		} else {
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
		if !li.Reviewed {
			out.Count++
		}
		out.Items = append(out.Items, li)
	}
	return out, nil
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
	if q.h.Workspace().Boundary().Denied(r.Path) {
		return nil, fmt.Errorf("%s is deny-listed (security.deny): its diff is not shown", r.Path)
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
// holds it, and for a hunk the cursor's line (1-based).
type revertRef struct {
	ref
	Line  int      `json:"line"`
	Lines []string `json:"lines"`
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
		return nil, nil, false, fmt.Errorf("%s is binary: it is listed, not diffed or reverted here", r.Path)
	}
	return splitText(*b), splitText(rs), false, nil
}

func (q *Queue) handleRevertHunk(_ context.Context, r revertRef) (any, error) {
	base, res, _, err := q.texts(r.ref)
	if err != nil {
		return nil, err
	}
	if r.Lines == nil {
		r.Lines = []string{}
	}
	e, err := revertHunk(base, res, r.Lines, r.Line-1)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// RevertFile is review_revert_file's answer: edits for the buffer, or,
// for a file Claude created, that the file is to be deleted.
type RevertFile struct {
	Edits  []Edit `json:"edits"`
	Delete bool   `json:"delete"`
}

func (q *Queue) handleRevertFile(_ context.Context, r revertRef) (any, error) {
	base, res, isNew, err := q.texts(r.ref)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(r.Path); errors.Is(err, os.ErrNotExist) {
		if isNew {
			return nil, fmt.Errorf("%s is gone already", r.Path)
		}
		// Who deleted it is not known: restoring it could undo yours.
		return nil, fmt.Errorf("%s is gone: its text before the turn is the left side of its diff (<CR> in :ClaudeReview), to restore by hand", r.Path)
	}
	if r.Lines == nil {
		r.Lines = []string{}
	}
	edits, err := revertAll(base, res, r.Lines)
	if err != nil {
		return nil, err
	}
	if isNew {
		// Claude created it and nobody changed it since: it goes.
		return RevertFile{Edits: []Edit{}, Delete: true}, nil
	}
	if edits == nil {
		edits = []Edit{}
	}
	return RevertFile{Edits: edits}, nil
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
