// Package display makes text that comes from outside the plugin — hook
// payloads, transcripts, CLI messages, tool input, directory and session
// names — safe to put in a Neovim buffer, winbar, statusline or
// notification. A control character is shown, never obeyed: a newline
// cannot break a list item or forge a second line, ESC cannot start a
// terminal sequence, a bidi override cannot reorder what the user reads.
//
// It knows runes and nothing else: never where the text came from, never
// Neovim, never a feature. Every feature that shows such a string calls it
// on the way out, and the Lua side has the same rules (util.display) for the
// strings it gets from Neovim itself.
package display

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Ellipsis ends a line that was cut at its cap.
const Ellipsis = "…"

// Line returns s as one displayable line of at most max runes (max <= 0:
// no cap): a newline is shown as "⏎", a tab as a space, any other control
// character in caret notation (^[ for ESC, ^? for DEL), a C1 control or
// an invisible direction mark as <U+XXXX>, invalid UTF-8 as U+FFFD. A line
// longer than max ends with "…" and says nothing else was there.
func Line(s string, max int) string {
	if clean(s) && (max <= 0 || utf8.RuneCountInString(s) <= max) {
		return s
	}
	var b strings.Builder
	n, cut := 0, false
	for _, r := range s {
		shown := rune1(r)
		n += utf8.RuneCountInString(shown)
		if max > 0 && n > max {
			cut = true
			break
		}
		b.WriteString(shown)
	}
	if !cut {
		return b.String()
	}
	out := []rune(b.String())
	if len(out) > max-1 {
		out = out[:max-1]
	}
	return string(out) + Ellipsis
}

// Lines returns s as displayable lines: each line as by Line (each capped
// at max runes), runs of more than two blank lines collapsed into one line
// that says how many were there, and at most maxLines lines (maxLines <=
// 0: no cap); when lines were left out, the last line says how many.
func Lines(s string, max, maxLines int) []string {
	raw := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	var out []string
	for i := 0; i < len(raw); i++ {
		if strings.TrimSpace(raw[i]) == "" {
			j := i
			for j < len(raw) && strings.TrimSpace(raw[j]) == "" {
				j++
			}
			if j-i > 2 {
				out = append(out, "⋮ "+strconv.Itoa(j-i)+" blank lines")
				i = j - 1
				continue
			}
		}
		out = append(out, Line(raw[i], max))
	}
	if maxLines > 0 && len(out) > maxLines {
		left := len(out) - (maxLines - 1)
		out = append(out[:maxLines-1], "… "+strconv.Itoa(left)+" more lines")
	}
	return out
}

// clean reports whether s needs no change: valid UTF-8 without a control
// or direction character (the common case, which allocates nothing).
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 {
			return cleanSlow(s)
		}
	}
	return true
}

func cleanSlow(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafe(r) {
			return false
		}
	}
	return true
}

func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x061c:
		return true // direction marks, embeddings, overrides and isolates
	case r == 0x2028, r == 0x2029, r == 0xfeff:
		return true // line and paragraph separators, the BOM
	}
	return false
}

// rune1 is how r is shown.
func rune1(r rune) string {
	switch {
	case r == utf8.RuneError:
		return "\uFFFD"
	case r == '\n':
		return "⏎"
	case r == '\t':
		return " "
	case r < 0x20:
		return "^" + string(rune(r+0x40))
	case r == 0x7f:
		return "^?"
	case unsafe(r):
		return "<U+" + strings.ToUpper(strconv.FormatInt(int64(r), 16)) + ">"
	}
	return string(r)
}
