package mcp

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

var encodeInputs = []string{
	"", "plain", "FILE_SAVED", "quote \" backslash \\ slash /", "line\nfeed\r\ttab\b\f",
	"\x00\x01\x1f\x7f", "<html> & 'x'", "é ü 日本 😀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80",
	"end with backslash \\",
}

func TestAppendToolResultMatchesEncodingJSON(t *testing.T) {
	for _, text := range encodeInputs {
		for _, r := range []*ToolResult{
			{Content: []Content{{Type: "text", Text: text}}},
			{Content: []Content{{Type: "text", Text: "FILE_SAVED"}, {Type: "text", Text: text}}, IsError: true},
			{Content: []Content{{Type: "image", Data: text, MimeType: "image/png"}, {Type: "text"}}},
			{Content: []Content{{Type: "resource", Text: text}, {Type: "image"}}},
			{},
		} {
			checkToolResultEncoding(t, r)
		}
	}
}

// wireContent and wireToolResult are the wire shapes of Content and
// ToolResult, as encoding/json would send them: a text item's text is sent
// even when empty. appendToolResult must write what encoding/json writes
// for them.
type wireContent struct {
	Type     string  `json:"type"`
	Text     *string `json:"text,omitempty"`
	Data     string  `json:"data,omitempty"`
	MimeType string  `json:"mimeType,omitempty"`
}

type wireToolResult struct {
	Content []wireContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

func toWireResult(r *ToolResult) wireToolResult {
	w := wireToolResult{Content: make([]wireContent, 0, len(r.Content)), IsError: r.IsError}
	for i := range r.Content {
		c := &r.Content[i]
		wc := wireContent{Type: c.Type, Data: c.Data, MimeType: c.MimeType}
		if c.Type == "text" || c.Text != "" {
			wc.Text = &c.Text
		}
		w.Content = append(w.Content, wc)
	}
	return w
}

func checkToolResultEncoding(t *testing.T, r *ToolResult) {
	t.Helper()
	want, err := marshalJSON(toWireResult(r))
	if err != nil {
		t.Fatal(err)
	}
	if got := appendToolResult(nil, r); !bytes.Equal(got, want) {
		t.Errorf("appendToolResult(%+v)\n got %s\nwant %s", r, got, want)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range encodeInputs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkToolResultEncoding(t, &ToolResult{Content: []Content{{Type: "text", Text: s}}})
	})
}

// A text given already escaped (EscapedTextResult, with AppendEscaped's
// bytes, whole or in parts) goes on the wire byte for byte as the same text
// given plain — through appendToolResult and through encoding/json alike.
func TestEscapedTextMatchesText(t *testing.T) {
	hostile := append([]string{
		`{"uri":"file:///p/a \"q\".go","diagnostics":[{"message":"<T> & 'x' \\ end"}]}`,
		"ctrl \x00\x01\x07\x1b\x7f and \u2028 line \u2029 para",
		"tab\tnl\ncr\r", "invalid \xff\xfe and cut \xe2\x80", "\xed\xa0\x80 surrogate", "😀 é 日本",
	}, encodeInputs...)
	for _, text := range hostile {
		whole := AppendEscaped(nil, text)
		// escaped in two parts at a rune boundary: the same bytes
		var parts []byte
		mid := len(text) / 2
		for mid > 0 && mid < len(text) && !utf8.RuneStart(text[mid]) {
			mid--
		}
		parts = AppendEscaped(parts, text[:mid])
		parts = AppendEscaped(parts, text[mid:])
		for name, esc := range map[string][]byte{"whole": whole, "parts": parts} {
			want := appendToolResult(nil, TextResult(text))
			got := appendToolResult(nil, EscapedTextResult(esc))
			if !bytes.Equal(got, want) {
				t.Errorf("%s %q:\n got %s\nwant %s", name, text, got, want)
			}
			viaJSON, err := marshalJSON(EscapedTextResult(esc))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(viaJSON, want) {
				t.Errorf("%s %q through encoding/json:\n got %s\nwant %s", name, text, viaJSON, want)
			}
		}
	}
	if got, want := appendToolResult(nil, EscapedTextResult(nil)), appendToolResult(nil, TextResult("")); !bytes.Equal(got, want) {
		t.Errorf("empty: got %s, want %s", got, want)
	}
}
