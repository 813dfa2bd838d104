package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A one-pass JSON scanner for the parts of a message the server must take
// apart before a handler sees it: the envelope, tools/call's params and a
// tool's arguments. encoding/json checks a whole input before it decodes it
// and checks a json.RawMessage again for every level it is decoded at, so a
// 5 MB openDiff used to be scanned six times (about 0.25 s on this machine's
// class); here the message is validated once, and the levels below are split
// with a scan that only looks for the ends of strings (bytes.IndexByte).
// Small values are still decoded by encoding/json.

// maxNesting is encoding/json's limit on nesting, kept so that both accept
// the same inputs.
const maxNesting = 10000

// member is one member of a JSON object: its key, unquoted, and the raw
// text of its value.
type member struct {
	key string
	val json.RawMessage
}

// syntaxError is invalid JSON; off is the byte offset it was found at.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg)
}

// errNotObject reports valid JSON that is not an object.
var errNotObject = errors.New("not a JSON object")

// plainString marks the bytes that may appear in a JSON string as they are.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanner walks one JSON text. With validate false it trusts the input (a
// span of a message that was validated before) and only finds where values
// end.
type scanner struct {
	data     []byte
	pos      int
	validate bool
}

func (s *scanner) fail(msg string) error { return &syntaxError{off: s.pos, msg: msg} }

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value scans the value at s.pos (after white space). When visit is not
// nil and the value is an object, visit is called with each of its
// members in turn.
func (s *scanner) value(depth int, visit func(key string, val json.RawMessage)) error {
	s.space()
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of input")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(depth+1, visit)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		return s.str()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return s.fail(fmt.Sprintf("unexpected character %q", s.data[s.pos]))
}

func (s *scanner) object(depth int, visit func(key string, val json.RawMessage)) error {
	if depth > maxNesting {
		return s.fail("exceeded max depth")
	}
	s.pos++ // {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.fail("expected a string key")
		}
		kStart := s.pos
		if err := s.str(); err != nil {
			return err
		}
		kEnd := s.pos
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.fail("expected ':' after an object key")
		}
		s.pos++
		s.space()
		vStart := s.pos
		if err := s.value(depth, nil); err != nil {
			return err
		}
		if visit != nil {
			visit(keyName(s.data[kStart:kEnd]), s.data[vStart:s.pos:s.pos])
		}
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input in an object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or '}' in an object")
		}
	}
}

func (s *scanner) array(depth int) error {
	if depth > maxNesting {
		return s.fail("exceeded max depth")
	}
	s.pos++ // [
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(depth, nil); err != nil {
			return err
		}
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input in an array")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or ']' in an array")
		}
	}
}

// str scans the string at s.pos.
func (s *scanner) str() error {
	s.pos++ // "
	if !s.validate {
		for {
			i := bytes.IndexByte(s.data[s.pos:], '"')
			if i < 0 {
				return s.fail("unterminated string")
			}
			end := s.pos + i
			// the quote is escaped when an odd number of backslashes precede it
			n := 0
			for j := end - 1; j >= s.pos && s.data[j] == '\\'; j-- {
				n++
			}
			s.pos = end + 1
			if n%2 == 0 {
				return nil
			}
		}
	}
	d := s.data
	for {
		for s.pos < len(d) && plainString[d[s.pos]] {
			s.pos++
		}
		if s.pos >= len(d) {
			return s.fail("unterminated string")
		}
		switch c := d[s.pos]; {
		case c == '"':
			s.pos++
			return nil
		case c == '\\':
			if s.pos+1 >= len(d) {
				return s.fail("unterminated string")
			}
			switch d[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				if s.pos+6 > len(d) {
					return s.fail("unterminated \\u escape")
				}
				for _, h := range d[s.pos+2 : s.pos+6] {
					if hexVal(h) < 0 {
						return s.fail("invalid \\u escape")
					}
				}
				s.pos += 6
			default:
				return s.fail("invalid escape in a string")
			}
		default:
			return s.fail("control character in a string")
		}
	}
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

func (s *scanner) number() error {
	d := s.data
	digits := func() int {
		n := 0
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if d[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(d) && d[s.pos] == '0':
		s.pos++
	case digits() == 0:
		return s.fail("invalid number")
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return s.fail("invalid number")
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return s.fail("invalid number")
		}
	}
	return nil
}

// splitObject validates data as one JSON value and, when it is an object,
// returns its members in order (a repeated key appears twice; the last one
// wins, as with encoding/json). Valid JSON that is not an object returns
// errNotObject; invalid JSON a *syntaxError.
func splitObject(data []byte) ([]member, error) {
	return split(data, true)
}

// splitValidObject is splitObject for a span of a message that was
// validated already (params, arguments): it only finds the members.
func splitValidObject(data []byte) ([]member, error) {
	return split(data, false)
}

func split(data []byte, validate bool) ([]member, error) {
	members := make([]member, 0, 4)
	err := eachMember(data, validate, func(key string, val json.RawMessage) {
		members = append(members, member{key: key, val: val})
	})
	if err != nil {
		return nil, err
	}
	return members, nil
}

// eachMember is split without the slice: it calls visit with each member
// of data in order, and returns what split would. visit may have been
// called for the first members of an object that turns out invalid, so a
// caller keeps what it saw only when eachMember returns nil.
func eachMember(data []byte, validate bool, visit func(key string, val json.RawMessage)) error {
	s := scanner{data: data, validate: validate}
	s.space()
	isObject := s.pos < len(data) && data[s.pos] == '{'
	if err := s.value(0, visit); err != nil {
		return err
	}
	s.space()
	if s.pos != len(data) {
		return s.fail("data after the top-level value")
	}
	if !isObject {
		return errNotObject
	}
	return nil
}

// keyName unquotes an object key (a validated JSON string); the keys of
// the JSON-RPC envelope and of tools/call's params come without an
// allocation.
func keyName(raw []byte) string {
	switch string(raw) {
	case `"jsonrpc"`:
		return "jsonrpc"
	case `"id"`:
		return "id"
	case `"method"`:
		return "method"
	case `"params"`:
		return "params"
	case `"name"`:
		return "name"
	case `"arguments"`:
		return "arguments"
	case `"_meta"`:
		return "_meta"
	case `"progressToken"`:
		return "progressToken"
	}
	return unquote(raw)
}

// unquote decodes a JSON string value (raw, quotes included) that was
// validated already, as encoding/json would: invalid UTF-8 and lone
// surrogates become U+FFFD.
func unquote(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	return unquoteEscaped(raw)
}

func unquoteEscaped(raw []byte) string {
	body := raw[1 : len(raw)-1]
	var sb strings.Builder
	sb.Grow(len(body))
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\\')
		if i < 0 {
			i = len(body)
		}
		writeValid(&sb, body[:i])
		body = body[i:]
		if len(body) < 2 {
			break
		}
		switch c := body[1]; c {
		case '"', '\\', '/':
			sb.WriteByte(c)
			body = body[2:]
		case 'b':
			sb.WriteByte('\b')
			body = body[2:]
		case 'f':
			sb.WriteByte('\f')
			body = body[2:]
		case 'n':
			sb.WriteByte('\n')
			body = body[2:]
		case 'r':
			sb.WriteByte('\r')
			body = body[2:]
		case 't':
			sb.WriteByte('\t')
			body = body[2:]
		case 'u':
			r, ok := hex4(body[2:])
			if !ok {
				return sb.String() // not reached for validated input
			}
			body = body[6:]
			if utf16.IsSurrogate(r) {
				if len(body) >= 6 && body[0] == '\\' && body[1] == 'u' {
					if r2, ok := hex4(body[2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							sb.WriteRune(dec)
							body = body[6:]
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			sb.WriteRune(r)
		default:
			return sb.String() // not reached for validated input
		}
	}
	return sb.String()
}

// writeValid writes b, with each invalid UTF-8 sequence replaced by U+FFFD.
func writeValid(sb *strings.Builder, b []byte) {
	if utf8.Valid(b) {
		sb.Write(b)
		return
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		v := hexVal(c)
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
