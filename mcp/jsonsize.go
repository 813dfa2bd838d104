package mcp

import "unicode/utf8"

// The exact size of a tool result's encoding, so that the answer that
// carries a whole file (openDiff's FILE_SAVED) is encoded into one buffer
// of exactly its size. A guess (the text plus a sixteenth) was short for
// source code, whose newlines, tabs and quotes each take two bytes, and
// the encoder then grew its buffer once: 2.5 times the file in fresh
// memory, each new page touched, for every accept. Counting first reads
// the text once more, from memory the encoder is about to read anyway.
// The size is only a capacity: were it wrong, the encoding would still be
// right, just reallocated.

// escapedLen is the length of appendString(nil, s): s as a JSON string,
// quotes included.
func escapedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case safeJSON[c]:
				n++
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6 // \u00XX
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// toolResultLen is the length of appendToolResult(nil, r).
func toolResultLen(r *ToolResult) int {
	n := len(`{"content":[]}`)
	for i := range r.Content {
		c := &r.Content[i]
		if i > 0 {
			n++
		}
		n += len(`{"type":}`) + escapedLen(c.Type)
		switch {
		case c.EscapedText != nil:
			n += len(`,"text":""`) + len(c.EscapedText)
		case c.Type == "text" || c.Text != "":
			n += len(`,"text":`) + escapedLen(c.Text)
		}
		if c.Data != "" {
			n += len(`,"data":`) + escapedLen(c.Data)
		}
		if c.MimeType != "" {
			n += len(`,"mimeType":`) + escapedLen(c.MimeType)
		}
	}
	if r.IsError {
		n += len(`,"isError":true`)
	}
	return n
}
