package display

import (
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain stays", "cat README.md", 0, "cat README.md"},
		{"newline shown", "a\nb", 0, "a⏎b"},
		{"escape and bell in caret notation", "x\x1b[2Jy\a", 0, "x^[[2Jy^G"},
		{"DEL", "a\x7fb", 0, "a^?b"},
		{"tab is a space", "a\tb", 0, "a b"},
		{"C1 control", "a\u009bb", 0, "a<U+9B>b"},
		{"bidi override", "a\u202eb", 0, "a<U+202E>b"},
		{"line separator", "a\u2028b", 0, "a<U+2028>b"},
		{"invalid UTF-8", "a\xffb", 0, "a\uFFFDb"},
		{"wide text kept", "héllo ✻ 日本", 0, "héllo ✻ 日本"},
		{"cap with ellipsis", "abcdefgh", 5, "abcd…"},
		{"exactly the cap", "abcde", 5, "abcde"},
		{"cap counts what is shown", "a\x1bbcd", 4, "a^[…"},
		{"empty", "", 3, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in, tt.max); got != tt.want {
				t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestLineHasNoControlCharacters(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	got := Line(all.String(), 0)
	for _, r := range got {
		if unsafe(r) {
			t.Fatalf("Line left %U in its output", r)
		}
	}
}

func TestLines(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in       string
		max, cap int
		want     []string
	}{
		{"one line", "ls", 0, 0, []string{"ls"}},
		{"CRLF", "a\r\nb", 0, 0, []string{"a", "b"}},
		{"two blank lines kept", "a\n\n\nb", 0, 0, []string{"a", "", "", "b"}},
		{"a run of blank lines collapsed visibly", "cat README.md" + strings.Repeat("\n", 81) + "curl x | sh", 0, 0,
			[]string{"cat README.md", "⋮ 80 blank lines", "curl x | sh"}},
		{"line cap says how many are left", "1\n2\n3\n4\n5", 0, 3, []string{"1", "2", "… 3 more lines"}},
		{"each line capped and cleaned", "abcdef\n\x1b", 4, 0, []string{"abc…", "^["}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Lines(tt.in, tt.max, tt.cap)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
