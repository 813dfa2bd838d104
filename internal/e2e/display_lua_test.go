//go:build unix

package e2e

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/nvim-claude/nvim-claude/display"
)

// Lua's util.display shows text from outside by the host's rules: the same
// table gives the same result in both, in the Neovim under test (so that a
// string reads the same whichever side made it displayable).
func TestLuaUtilDisplay(t *testing.T) {
	e := startEditor(t, editorOpts{})
	for _, tt := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain stays", "cat README.md", 0, "cat README.md"},
		{"newline shown", "a\nb", 0, "a⏎b"},
		{"CRLF: the CR in caret notation", "a\r\nb", 0, "a^M⏎b"},
		{"escape and bell in caret notation", "x\x1b[2Jy\a", 0, "x^[[2Jy^G"},
		{"NUL", "a\x00b", 0, "a^@b"},
		{"DEL", "a\x7fb", 0, "a^?b"},
		{"tab is a space", "a\tb", 0, "a b"},
		{"C1 control", "a\u009bb", 0, "a<U+9B>b"},
		{"bidi override", "a\u202eb", 0, "a<U+202E>b"},
		{"isolate", "a\u2066b", 0, "a<U+2066>b"},
		{"Arabic letter mark", "a\u061cb", 0, "a<U+61C>b"},
		{"left-to-right mark", "a\u200eb", 0, "a<U+200E>b"},
		{"line separator", "a\u2028b", 0, "a<U+2028>b"},
		{"BOM", "\ufeffab", 0, "<U+FEFF>ab"},
		{"invalid UTF-8", "a\xffb", 0, "a\uFFFDb"},
		{"a lone continuation byte", "a\x80b", 0, "a\uFFFDb"},
		{"a truncated sequence", "a\xe2\x9cb", 0, "a\uFFFD\uFFFDb"},
		{"an overlong form", "a\xc0\xafb", 0, "a\uFFFD\uFFFDb"},
		{"a surrogate", "a\xed\xa0\x80b", 0, "a\uFFFD\uFFFD\uFFFDb"},
		{"wide text kept", "héllo ✻ 日本", 0, "héllo ✻ 日本"},
		{"cap with ellipsis", "abcdefgh", 5, "abcd…"},
		{"cap on wide text", "日本語テキスト", 4, "日本語…"},
		{"exactly the cap", "abcde", 5, "abcde"},
		{"cap counts what is shown", "a\x1bbcd", 4, "a^[…"},
		{"cap inside a shown form", "ab\x1bcd", 3, "ab…"},
		{"a cap of one", "abc", 1, "…"},
		{"a cap before a long shown form", "abc\u202edefgh", 5, "abc…"},
		{"a long directory name ending in an override", strings.Repeat("a", 75) + "\u202e", 80, strings.Repeat("a", 75) + "…"},
		{"empty", "", 3, ""},
		{"a workspace directory name", "ws\n\x1b]0;owned\a", 0, "ws⏎^[]0;owned^G"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if g := display.Line(tt.in, tt.max); g != tt.want {
				t.Fatalf("the table is wrong: Go's display.Line(%q, %d) = %q, want %q", tt.in, tt.max, g, tt.want)
			}
			got := luaDisplay(t, e, tt.in, tt.max)
			if got != tt.want {
				t.Fatalf("util.display(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
	// Every character up to U+3000: nothing unsafe survives.
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	got := luaDisplay(t, e, all.String(), 0)
	if want := display.Line(all.String(), 0); got != want {
		t.Fatalf("util.display differs from display.Line on U+0000..U+2FFF")
	}
}

// luaDisplay is util.display(in, max) byte for byte (hex both ways: the
// harness's JSON would mend invalid UTF-8 itself).
func luaDisplay(t *testing.T, e *editor, in string, max int) string {
	t.Helper()
	var h string
	e.Eval(t, `local s, max = ...
		s = s:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end)
		return (require("claude.util").display(s, max > 0 and max or nil):gsub(".", function(c)
		return string.format("%02x", c:byte()) end))`, &h, hex.EncodeToString([]byte(in)), max)
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
