package nvimbridge

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// proposalDirPrefix names the private proposal directories in the temporary
// directory: nvim-claude-proposals-<host pid>-<random>, so that a later host
// can tell the directory of a host that is gone (killed outright, it could
// not remove its own) and sweep it (SweepStaleProposals).
const proposalDirPrefix = "nvim-claude-proposals-"

// proposalFile is a proposal written for Neovim to read (lua/claude/diff/
// reads it with :0read ++bin into the proposal buffer and removes it when
// the diff closes). A whole file crossing the RPC channel as a string used
// to be copied four times inside Neovim (the channel's buffer, a msgpack
// object, a Lua string, a table of lines) and split into lines by Lua;
// Neovim reads a file natively, as it does when the user opens one.
type proposalFile struct {
	File string `json:"file"`
	// Accepted is where Lua writes the proposal buffer when the user
	// accepts it: Neovim's own :write (its 'fileformat' and 'eol' rules,
	// in C) instead of a Lua string built from the buffer's lines and
	// copied across the channel; the DiffDecision names it (ContentsFile).
	Accepted string `json:"accepted"`
	// EOL reports a final newline; FF is "dos" when every line ended in
	// CRLF (the file then holds LF only), else "unix" (bytes as they are).
	EOL bool   `json:"eol"`
	FF  string `json:"ff"`
}

// proposals owns the private directory proposal files are written to; it
// is created on first use and removed with everything in it by close.
type proposals struct {
	mu     sync.Mutex
	dir    string
	closed bool
}

// write writes contents for Neovim to read. An error (no temporary
// directory, a full disk) leaves nothing behind; the caller then passes
// the contents as a string.
func (p *proposals) write(contents string) (*proposalFile, error) {
	pf := &proposalFile{EOL: strings.HasSuffix(contents, "\n"), FF: "unix"}
	text := contents
	if crlf := strings.Count(contents, "\r\n"); crlf > 0 && crlf == strings.Count(contents, "\n") {
		pf.FF, text = "dos", strings.ReplaceAll(contents, "\r\n", "\n")
	}
	dir, err := p.ensureDir()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "proposal-*")
	if err != nil {
		return nil, fmt.Errorf("proposal file: %w", err)
	}
	_, werr := f.WriteString(text)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("write proposal file: %w", errors.Join(werr, cerr))
	}
	pf.File = f.Name()
	pf.Accepted = pf.File + acceptedSuffix
	return pf, nil
}

// acceptedSuffix names the file Lua writes an accepted proposal to, beside
// the proposal file.
const acceptedSuffix = ".accepted"

// readAccepted reads the accepted proposal Lua wrote to path. The path must
// be one this host hands out (proposalFile.Accepted: a regular file in one
// of this process's proposal directories), never another file.
func readAccepted(path string) (string, error) {
	dir, name := filepath.Split(filepath.Clean(path))
	dir = filepath.Clean(dir)
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) ||
		!strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("%s%d-", proposalDirPrefix, os.Getpid())) ||
		!strings.HasPrefix(name, "proposal-") || !strings.HasSuffix(name, acceptedSuffix) {
		return "", fmt.Errorf("%s is not an accepted-proposal file of this host", path)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	// One allocation of the file's size: os.ReadFile and a string
	// conversion would hold the text twice (a 20 MB accept cost the host
	// 40 MB at its peak).
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var sb strings.Builder
	sb.Grow(int(fi.Size()) + 1)
	if _, err := io.Copy(&sb, f); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func (p *proposals) ensureDir() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", os.ErrClosed
	}
	if p.dir == "" {
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", proposalDirPrefix, os.Getpid())) // 0700
		if err != nil {
			return "", fmt.Errorf("proposal directory: %w", err)
		}
		p.dir = dir
	}
	return p.dir, nil
}

// close removes the directory and any proposal Neovim did not remove.
func (p *proposals) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
		p.dir = ""
	}
}

// CloseProposals removes the proposal directory and every proposal still
// in it, and makes later diffs pass their text as a string; Close does it
// too. Tests that keep the connection to a child Neovim call it on cleanup.
func (b *Bridge) CloseProposals() { b.proposals.close() }

// legacyProposalAge: a directory named before the pid was part of the name
// is swept once it is this old (no proposal lives that long).
const legacyProposalAge = time.Hour

// SweepStaleProposals removes, from the temporary directory, the proposal
// directories of hosts that are no longer running and that belong to this
// user; a live host's directory, and another user's, are left alone. The
// host calls it once at start. It returns how many it removed.
func SweepStaleProposals() int {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, proposalDirPrefix) {
			continue
		}
		path := filepath.Join(tmp, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) {
			continue
		}
		rest := strings.TrimPrefix(name, proposalDirPrefix)
		pidText, _, withPID := strings.Cut(rest, "-")
		pid, perr := strconv.Atoi(pidText)
		switch {
		case withPID && perr == nil:
			if pid == os.Getpid() || processAlive(pid) {
				continue
			}
		case time.Since(fi.ModTime()) < legacyProposalAge:
			continue
		}
		if os.RemoveAll(path) == nil {
			removed++
		}
	}
	return removed
}
