package review

import (
	"regexp"
	"strings"
	"testing"
)

// projectDirName and isCommitID replaced two regexps (compiled at every
// host start): they must say exactly what the regexps said.
func TestNamesAsTheRegexpsSaid(t *testing.T) {
	nonAlnum := regexp.MustCompile(`[^a-zA-Z0-9]`)
	for _, cwd := range []string{"", "/home/u/proj", "/a b/c.d_e", "/wörk/日本", "/bad\xffbyte", "/A-Z/0-9/az"} {
		if got, want := projectDirName(cwd), nonAlnum.ReplaceAllString(cwd, "-"); got != want {
			t.Errorf("projectDirName(%q) = %q, want %q", cwd, got, want)
		}
	}
	commitID := regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	sha1 := strings.Repeat("0123456789", 4)
	for _, s := range []string{"", sha1, sha1 + "abcdef", strings.Repeat("ab", 32), strings.ToUpper(strings.Repeat("ab", 20)),
		sha1[:39] + "g", sha1 + "0", "--output=/tmp/x", "HEAD~1", strings.Repeat("f", 64) + "\n"} {
		if got, want := isCommitID(s), commitID.MatchString(s); got != want {
			t.Errorf("isCommitID(%q) = %v, want %v", s, got, want)
		}
	}
}
