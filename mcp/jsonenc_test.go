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
		for _, w := range []wireToolResult{
			toWireResult(&ToolResult{Content: []Content{{Type: "text", Text: text}}}),
			toWireResult(&ToolResult{Content: []Content{{Type: "text", Text: "FILE_SAVED"}, {Type: "text", Text: text}}, IsError: true}),
			toWireResult(&ToolResult{Content: []Content{{Type: "image", Data: text, MimeType: "image/png"}, {Type: "text"}}}),
			toWireResult(&ToolResult{}),
		} {
			checkToolResultEncoding(t, w)
		}
	}
}

func checkToolResultEncoding(t *testing.T, w wireToolResult) {
	t.Helper()
	want, err := marshalJSON(w)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendToolResult(nil, w); !bytes.Equal(got, want) {
		t.Errorf("appendToolResult(%+v)\n got %s\nwant %s", w, got, want)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range encodeInputs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkToolResultEncoding(t, toWireResult(&ToolResult{Content: []Content{{Type: "text", Text: s}}}))
	})
}
