package plugin

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// listFiles's limit; paths themselves go through the workspace package's
// boundary (App.boundary), which also lists the files.
const maxListedFiles = 20000

// globMatcher compiles a glob: "*" and "?" stay within a path segment, "**"
// spans segments, "[…]" and "{a,b}" work as in shells. A glob without "/"
// matches the file name at any depth ("*.go"); with one, the whole path
// from the folder ("src/**/*.go").
func globMatcher(glob string) (func(rel string) bool, error) {
	if glob == "" {
		return func(string) bool { return true }, nil
	}
	re, err := globRegexp(glob)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(glob, "/") {
		return func(rel string) bool { return re.MatchString(filepath.Base(rel)) }, nil
	}
	return re.MatchString, nil
}

func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
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
