package mcp

import (
	"unicode/utf8"
)

// A hand-written encoder for the one result that can be large: a tool
// result whose text is a whole file (openDiff's FILE_SAVED answer), or a
// text given already escaped (getDiagnostics' answer, see
// Content.EscapedText), which is written as it is. Its
// output is byte for byte what encoding/json with SetEscapeHTML(false)
// writes (TestAppendToolResultMatchesEncodingJSON), at several times the
// speed: one pass over the text, into a buffer sized up front (jsonsize.go).

// safeJSON marks the bytes a JSON string holds as they are (no HTML
// escaping); bytes ≥ 0x80 are checked as UTF-8 separately.
var safeJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, as encoding/json does without
// HTML escaping: invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are
// escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends s escaped as the contents of a JSON string, without
// the quotes: what a text content's text becomes on the wire. The escaping
// of a concatenation of whole UTF-8 sequences is the concatenation of their
// escapings, so a text kept in parts can be escaped part by part, once (see
// [Content.EscapedText]).
func AppendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safeJSON[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendToolResult appends the JSON of a tool result: encoding/json's
// encoding of its wire shape, in which a text item's text is sent even
// when empty (TestAppendToolResultMatchesEncodingJSON).
func appendToolResult(dst []byte, r *ToolResult) []byte {
	dst = append(dst, `{"content":[`...)
	for i := range r.Content {
		c := &r.Content[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendContent(dst, c)
	}
	dst = append(dst, ']')
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}')
}

// appendContent appends the JSON of one content item; an item with
// EscapedText sends those bytes as its text, verbatim.
func appendContent(dst []byte, c *Content) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, c.Type)
	switch {
	case c.EscapedText != nil:
		dst = append(dst, `,"text":"`...)
		dst = append(dst, c.EscapedText...)
		dst = append(dst, '"')
	case c.Type == "text" || c.Text != "":
		dst = append(dst, `,"text":`...)
		dst = appendString(dst, c.Text)
	}
	if c.Data != "" {
		dst = append(dst, `,"data":`...)
		dst = appendString(dst, c.Data)
	}
	if c.MimeType != "" {
		dst = append(dst, `,"mimeType":`...)
		dst = appendString(dst, c.MimeType)
	}
	return append(dst, '}')
}

// MarshalJSON encodes c as a tool result sends it (a *ToolResult that a
// custom method returns goes through encoding/json): the same bytes as
// appendToolResult's, EscapedText included.
func (c Content) MarshalJSON() ([]byte, error) {
	return appendContent(nil, &c), nil
}
