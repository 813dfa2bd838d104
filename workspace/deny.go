package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// pattern is one compiled deny glob. The semantics are those of the Lua
// matcher (lua/claude/selection.lua), so a file is denied alike when
// selection sharing and when a tool asks: a glob without "/" matches the
// file name at any depth; one with "/" matches the whole path — "~" is the
// home directory, a relative one may match anywhere ("*/" is put in front)
// — and "*" crosses directory separators.
type pattern struct {
	re   *regexp.Regexp
	full bool   // matched against the whole path, else the file name
	abs  string // for an absolute glob: the fixed directory it starts with ("" otherwise)
	// A glob that is a literal, or a literal with one "*" in front or at
	// the end (most of the list: ".env", "*.pem", "id_rsa*", "~/.ssh/*"),
	// is matched with string comparisons (every open buffer is judged on
	// every getOpenEditors): form says which, lit is the literal.
	form litForm
	lit  string
}

type litForm int

const (
	byRegexp litForm = iota
	exactly
	withPrefix // lit then anything ("*" matches "/" too)
	withSuffix // anything then lit
)

// literalForm finds the string comparison that matches like glob's regexp
// (globRegexp with segments false), or byRegexp. Where names compare
// without case (darwin, windows) the regexp decides.
func literalForm(glob string) (litForm, string) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return byRegexp, ""
	}
	// (U+FFFD: the regexp also matches it with an invalid byte)
	if strings.ContainsAny(glob, "?[{\\\uFFFD") {
		return byRegexp, ""
	}
	switch i := strings.IndexByte(glob, '*'); {
	case i < 0:
		return exactly, glob
	case strings.Count(glob, "*") > 1:
		return byRegexp, ""
	case i == len(glob)-1:
		return withPrefix, glob[:i]
	case i == 0:
		return withSuffix, glob[1:]
	}
	return byRegexp, ""
}

func (p *pattern) match(s string) bool {
	switch p.form {
	case exactly:
		return s == p.lit
	case withPrefix: // (".*" stops at a newline)
		return strings.HasPrefix(s, p.lit) && !strings.Contains(s[len(p.lit):], "\n")
	case withSuffix:
		return strings.HasSuffix(s, p.lit) && !strings.Contains(s[:len(s)-len(p.lit)], "\n")
	}
	return p.re.MatchString(s)
}

func compileGlobs(globs []string, home string) []pattern {
	var pats []pattern
	for _, g := range globs {
		if g == "" {
			continue
		}
		full := strings.Contains(g, "/")
		if full {
			switch {
			case g == "~" || strings.HasPrefix(g, "~/"):
				if home == "" {
					continue
				}
				g = home + g[1:]
			case g[0] != '/' && g[0] != '*':
				g = "*/" + g
			}
		}
		re, err := globRegexp(g, false)
		if err != nil {
			continue // as Lua skips a glob glob2regpat refuses
		}
		p := pattern{re: re, full: full}
		p.form, p.lit = literalForm(g)
		if full && g[0] == '/' {
			p.abs = fixedDir(g)
		}
		pats = append(pats, p)
	}
	return pats
}

// fixedDir is the directory part of an absolute glob before its first
// wildcard: where the deny-listed files it names live.
func fixedDir(g string) string {
	i := strings.IndexAny(g, "*?[{")
	if i < 0 {
		return filepath.Dir(g)
	}
	return filepath.Dir(g[:i+1])
}

// globRegexp turns a glob into an anchored regexp. With segments false it
// reads like Vim's glob2regpat() (the deny-list, as Lua matches it): "*"
// (and "**") is any text including "/", "?" one character. With segments
// true (listFiles' pattern): "*" and "?" stay within a path segment, "**/"
// is any number of directories, "**" any text. Both: "[…]" a class ("[!…]"
// negated), "{a,b}" alternatives, "\x" the character x.
func globRegexp(glob string, segments bool) (*regexp.Regexp, error) {
	var b strings.Builder
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		b.WriteString("(?i)")
	}
	b.WriteString("^")
	star, one := ".*", "."
	if segments {
		star, one = "[^/]*", "[^/]"
	}
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && segments && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString(star)
		case c == '?':
			b.WriteString(one)
		case c == '[':
			j := strings.IndexByte(glob[i+1:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", glob)
			}
			class := glob[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		case c == '{':
			b.WriteString("(?:")
			depth++
		case c == '}' && depth > 0:
			b.WriteString(")")
			depth--
		case c == ',' && depth > 0:
			b.WriteString("|")
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(string(glob[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed { in %q", glob)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// PathGlob compiles a listFiles pattern: "*" and "?" stay within a path
// segment, "**" spans segments, "[…]" and "{a,b}" work as in shells. A glob
// without "/" matches the file name at any depth ("*.go"); with one, the
// whole path from the folder ("src/**/*.go"). "" matches everything.
func PathGlob(glob string) (func(rel string) bool, error) {
	if glob == "" {
		return func(string) bool { return true }, nil
	}
	re, err := globRegexp(glob, true)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(glob, "/") {
		return func(rel string) bool { return re.MatchString(path.Base(rel)) }, nil
	}
	return re.MatchString, nil
}

func matchAny(pats []pattern, path string) bool {
	base := filepath.Base(path)
	for i := range pats {
		p := &pats[i]
		if p.full {
			if p.match(path) {
				return true
			}
		} else if p.match(base) {
			return true
		}
	}
	return false
}

// Limits of the identity index's walk.
const (
	indexMaxEntries = 200000
	indexMaxAge     = 5 * time.Second
)

// identityIndex holds the device and inode of the deny-listed files, to
// recognise another hard link to one of them. It is built on the first
// question about a file with several links, and rebuilt when older than
// indexMaxAge: from the folders asked about (a bounded walk that follows no
// symlink and skips VCS directories and node_modules) and the fixed
// directories of the absolute deny globs (~/.ssh …).
type identityIndex struct {
	mu    sync.Mutex
	built time.Time
	roots map[string]bool // directories walked into ids
	ids   map[fileID]bool
}

func (x *identityIndex) invalidate() {
	x.mu.Lock()
	x.built = time.Time{}
	x.mu.Unlock()
}

// has reports whether fi is the identity of a deny-listed file found in
// folders or in the fixed directories of the absolute deny globs.
func (x *identityIndex) has(fi fs.FileInfo, pats []pattern, folders []string) bool {
	id, ok := idOf(fi)
	if !ok {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if time.Since(x.built) > indexMaxAge {
		x.ids, x.roots = map[fileID]bool{}, map[string]bool{}
		x.built = time.Now()
	}
	for _, p := range pats {
		if p.abs != "" {
			x.walk(p.abs, pats)
		}
	}
	for _, d := range folders {
		x.walk(d, pats)
	}
	return x.ids[id]
}

func (x *identityIndex) walk(dir string, pats []pattern) {
	if x.roots[dir] {
		return
	}
	x.roots[dir] = true
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > indexMaxEntries {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if path != dir && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !matchAny(pats, path) {
			return nil
		}
		if fi, err := os.Stat(path); err == nil {
			if id, ok := idOf(fi); ok {
				x.ids[id] = true
			}
		}
		return nil
	})
}

// skippedDir tells the directories not walked (VCS data, dependencies).
func skippedDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", "node_modules":
		return true
	}
	return false
}
