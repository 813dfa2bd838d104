package mcp

import (
	"bytes"
	"testing"
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
