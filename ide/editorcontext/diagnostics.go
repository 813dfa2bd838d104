package editorcontext

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// Diagnostics: Lua (lua/claude/diagnostics.lua) sends every change as a
// diagnostics_changed notification; the cache below keeps the whole picture,
// so getDiagnostics answers without a round trip to Neovim.

// diagnostic is one diagnostic in the VS Code shape (PROTOCOL.md §6).
// Decoding Lua's JSON into it and encoding it again gives every answer the
// same key order.
type diagnostic struct {
	Message  string          `json:"message"`
	Severity string          `json:"severity"`
	Range    diagRange       `json:"range"`
	Source   string          `json:"source,omitempty"`
	Code     json.RawMessage `json:"code,omitempty"`
}

type diagRange struct {
	Start diagPosition `json:"start"`
	End   diagPosition `json:"end"`
}

// diagPosition: 0-based line, character in UTF-16 code units.
type diagPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// diagPush is what Lua sends: the diagnostics of some buffers, or of all of
// them (snapshot). A file without path is a buffer that no longer holds a
// file (wiped, renamed to a URL).
type diagPush struct {
	Seq      int64 `json:"seq"`
	Snapshot bool  `json:"snapshot"`
	Files    []struct {
		Bufnr       int          `json:"bufnr"`
		Path        string       `json:"path"`
		Diagnostics []diagnostic `json:"diagnostics"`
	} `json:"files"`
}

// diagEntry is one buffer's diagnostics, pre-encoded.
type diagEntry struct {
	path string
	real string // path with symlinks resolved, "" when the same
	list []byte // the diagnostics as a JSON array
	esc  []byte // {"uri":…,"diagnostics":…} escaped as the text of a tool result (mcp.AppendEscaped)
}

// diagChange is one diagnostics_changed notification to send to the CLIs.
type diagChange struct {
	URI         string          `json:"uri"`
	Diagnostics json.RawMessage `json:"diagnostics"`
}

// diagCache holds the diagnostics of every file buffer that has some.
type diagCache struct {
	mu      sync.Mutex
	byBuf   map[int]*diagEntry
	byPath  map[string]int   // path → bufnr
	byReal  map[string]int   // resolved path → bufnr, for paths with symlinks
	touched map[string]int64 // path → seq of the last push that named it
	seq     int64            // the last push applied
	// answer is getDiagnostics {}' answer, escaped as a tool result's text,
	// for the entries of generation gen; nil when not made since the last
	// change. The answer is a couple of MB with hundreds of files, and most
	// calls find nothing changed: it is escaped once, not on every call.
	answer  []byte
	gen     uint64        // bumped by every change of byBuf
	changed chan struct{} // closed (and replaced) by every push
	// far spells a local path as the CLI sees it (a Claude on an SSH host
	// or in a container); a file outside the mapping is not reported.
	far func(abs string) (string, error)
}

func newDiagCache(far func(abs string) (string, error)) *diagCache {
	return &diagCache{
		far:     far,
		byBuf:   map[int]*diagEntry{},
		byPath:  map[string]int{},
		byReal:  map[string]int{},
		touched: map[string]int64{},
		changed: make(chan struct{}),
	}
}

// apply takes a push and returns the notifications to send: one per file
// whose diagnostics changed (an empty list for files that lost them). The
// caller sends them, then calls commit.
func (d *diagCache) apply(p diagPush) []diagChange {
	// Encode outside the lock: a snapshot may carry thousands.
	entries := make([]*diagEntry, len(p.Files))
	for i, f := range p.Files {
		if f.Path == "" || len(f.Diagnostics) == 0 {
			continue
		}
		e := &diagEntry{path: filepath.Clean(f.Path)}
		e.list, _ = marshalNoEscape(f.Diagnostics)
		if real, err := filepath.EvalSymlinks(e.path); err == nil && real != e.path {
			e.real = real
		}
		uri, ok := d.uri(e.path)
		if !ok {
			continue // outside the far↔local mapping: the CLI cannot name it
		}
		item := diagItem(uri, e.list)
		e.esc = mcp.AppendEscaped(make([]byte, 0, len(item)+len(item)/4), string(item))
		entries[i] = e
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	var out []diagChange
	cleared := func(path string) {
		if uri, ok := d.uri(path); ok {
			out = append(out, diagChange{URI: uri, Diagnostics: json.RawMessage("[]")})
		}
	}
	seen := make(map[int]bool, len(p.Files))
	for i, f := range p.Files {
		seen[f.Bufnr] = true
		old, e := d.byBuf[f.Bufnr], entries[i]
		switch {
		case e == nil:
			if old != nil {
				d.remove(f.Bufnr, old)
				cleared(old.path)
			}
			continue
		case old != nil && old.path == e.path && bytes.Equal(old.list, e.list):
			continue // republished unchanged
		case old != nil:
			d.remove(f.Bufnr, old)
			if old.path != e.path {
				cleared(old.path) // the buffer was renamed
			}
		}
		d.add(f.Bufnr, e)
		uri, _ := d.uri(e.path)
		out = append(out, diagChange{URI: uri, Diagnostics: e.list})
	}
	if p.Snapshot {
		for bufnr, old := range d.byBuf {
			if !seen[bufnr] {
				d.remove(bufnr, old)
				cleared(old.path)
			}
		}
		for path := range d.touched {
			delete(d.touched, path)
		}
	}
	return out
}

// commit marks push p as applied and wakes the waiters. It comes after
// the push's notifications are queued, so a CLI gets the diagnostics_changed
// before a getDiagnostics answer that waited for it.
func (d *diagCache) commit(p diagPush) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range p.Files {
		if f.Path != "" {
			d.touched[filepath.Clean(f.Path)] = p.Seq
		}
	}
	if p.Seq > d.seq {
		d.seq = p.Seq
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// add and remove must be called with d.mu held.
func (d *diagCache) add(bufnr int, e *diagEntry) {
	d.gen++
	d.answer = nil
	d.byBuf[bufnr] = e
	d.byPath[e.path] = bufnr
	if e.real != "" {
		d.byReal[e.real] = bufnr
	}
}

func (d *diagCache) remove(bufnr int, e *diagEntry) {
	d.gen++
	d.answer = nil
	delete(d.byBuf, bufnr)
	if d.byPath[e.path] == bufnr {
		delete(d.byPath, e.path)
	}
	if e.real != "" && d.byReal[e.real] == bufnr {
		delete(d.byReal, e.real)
	}
}

// sorted is every entry, by path, and the generation it was taken at.
func (d *diagCache) sorted() ([]*diagEntry, uint64) {
	d.mu.Lock()
	entries := make([]*diagEntry, 0, len(d.byBuf))
	for _, e := range d.byBuf {
		entries = append(entries, e)
	}
	gen := d.gen
	d.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	return entries, gen
}

// allEscaped is the getDiagnostics answer for every file with diagnostics,
// sorted by path, escaped as a tool result's text (mcp.AppendEscaped): made
// from the entries' escaped parts ("[", "," and "]" escape as themselves)
// and kept until the next change. The bytes returned are never changed
// afterwards.
func (d *diagCache) allEscaped() []byte {
	d.mu.Lock()
	if d.answer != nil {
		defer d.mu.Unlock()
		return d.answer
	}
	d.mu.Unlock()
	entries, gen := d.sorted()
	size := 2
	for _, e := range entries {
		size += len(e.esc) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.esc...)
	}
	b = append(b, ']')
	d.mu.Lock()
	if d.gen == gen {
		d.answer = b
	}
	d.mu.Unlock()
	return b
}

// forPath is the getDiagnostics answer for one file: its diagnostics under
// the path asked for (the CLI compares it with its own), an empty list when
// it has none or is not open.
func (d *diagCache) forPath(path string) string {
	list := []byte("[]")
	d.mu.Lock()
	e := d.lookup(path)
	if e != nil {
		list = e.list
	}
	d.mu.Unlock()
	if e == nil {
		// a buffer opened through a symlink, or a percent-encoded URI
		for _, alt := range altPaths(path) {
			d.mu.Lock()
			e = d.lookup(alt)
			if e != nil {
				list = e.list
			}
			d.mu.Unlock()
			if e != nil {
				break
			}
		}
	}
	uri, ok := d.uri(path)
	if !ok {
		return "[]"
	}
	return "[" + string(diagItem(uri, list)) + "]"
}

// uri is the file:// URI the CLI knows path by; false for a path outside
// the far↔local mapping.
func (d *diagCache) uri(path string) (string, bool) {
	if d.far == nil {
		return workspace.FileURI(path), true
	}
	p, err := d.far(path)
	if err != nil {
		return "", false
	}
	return workspace.FileURI(p), true
}

// lookup must be called with d.mu held.
func (d *diagCache) lookup(path string) *diagEntry {
	if b, ok := d.byPath[path]; ok {
		return d.byBuf[b]
	}
	if b, ok := d.byReal[path]; ok {
		return d.byBuf[b]
	}
	return nil
}

// altPaths are other names a path may be known by: percent-decoded, and
// with symlinks resolved.
func altPaths(path string) []string {
	var out []string
	if strings.Contains(path, "%") {
		if dec, err := url.PathUnescape(path); err == nil && dec != path {
			out = append(out, filepath.Clean(dec))
		}
	}
	for _, p := range append([]string{path}, out...) {
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			out = append(out, real)
		}
	}
	return out
}

// state returns the last applied push and a channel closed by the next.
func (d *diagCache) state() (seq int64, changed <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq, d.changed
}

// waitSeq waits until push seq has been applied.
func (d *diagCache) waitSeq(ctx context.Context, seq int64) bool {
	for {
		cur, ch := d.state()
		if cur >= seq {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// waitTouched waits until a push after seq has named each path.
func (d *diagCache) waitTouched(ctx context.Context, paths []string, after int64) bool {
	for {
		d.mu.Lock()
		done := true
		for _, p := range paths {
			if d.touched[filepath.Clean(p)] <= after {
				done = false
				break
			}
		}
		ch := d.changed
		d.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func diagItem(fileURI string, list []byte) []byte {
	uri, _ := marshalNoEscape(fileURI)
	b := make([]byte, 0, len(uri)+len(list)+32)
	b = append(b, `{"uri":`...)
	b = append(b, uri...)
	b = append(b, `,"diagnostics":`...)
	b = append(b, list...)
	b = append(b, '}')
	return b
}

// marshalNoEscape is json.Marshal without HTML escaping (messages often
// hold < > &).
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// handleDiagnosticsChanged applies a push from Lua and tells the CLIs about
// the files whose diagnostics changed.
func (c *Context) handleDiagnosticsChanged(p diagPush) {
	// A deny-listed file's diagnostics can quote its text: they are kept
	// empty, so neither the push nor getDiagnostics carries them.
	for i := range p.Files {
		if len(p.Files[i].Diagnostics) > 0 && c.ws.Files().Denied(p.Files[i].Path) {
			p.Files[i].Diagnostics = nil
		}
	}
	for _, ch := range c.diags.apply(p) {
		c.h.Broadcast("diagnostics_changed", ch)
	}
	c.diags.commit(p)
}

// Bounds of the work getDiagnostics {} does before answering from the cache
// (the CLI waits 2 s for it).
const (
	// diagBudget bounds the whole answer, inside the CLI's 2 s.
	diagBudget = 1800 * time.Millisecond
	// syncTimeout bounds the sync round trip (reloading buffers runs their
	// BufReadPost autocommands) and the push it sends.
	syncTimeout = time.Second
	// maxSettle caps diagnostics.settle_ms, the wait for a language
	// server's report on a file the CLI just changed. gopls reports a
	// change within ~40 ms, but says nothing when the diagnostics stay the
	// same — then the whole wait is spent.
	maxSettle = 1500 * time.Millisecond
)

// syncDiagnostics brings the cache up to date before a getDiagnostics {}:
// files the CLI just edited are reloaded (their language servers then see
// the new text), changes not yet pushed are pushed, and for reloaded files
// with a language server it waits a little for the new diagnostics. It never
// fails: at worst the answer is the cache as it is.
func (c *Context) syncDiagnostics(ctx context.Context) {
	ctx, cancelAll := context.WithTimeout(ctx, diagBudget)
	defer cancelAll()
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	res, err := c.ed.SyncDiagnostics(sctx)
	if err != nil {
		c.log.Debug("getDiagnostics: sync with Neovim failed; answering from the cache", "err", err)
		return
	}
	if res.Seq == nil {
		return
	}
	if !c.diags.waitSeq(sctx, *res.Seq) {
		return
	}
	if len(res.Wait) == 0 {
		return
	}
	settle := min(c.settleFor(), maxSettle)
	wctx, wcancel := context.WithTimeout(ctx, settle)
	defer wcancel()
	c.diags.waitTouched(wctx, res.Wait, *res.Seq)
}
