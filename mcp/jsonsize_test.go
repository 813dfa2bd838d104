package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEncodedSizeIsExact pins that a tool result is encoded into one
// buffer of exactly its size: a short guess grew the buffer of a whole
// file's answer once, 2.5 times the file in fresh memory.
func TestEncodedSizeIsExact(t *testing.T) {
	source := strings.Repeat("\tif x == \"a\\b\" {\r\n\t\treturn nil // ok\n\t}\n", 2000)
	for _, text := range append(encodeInputs, source, "\x00\x00\x00", strings.Repeat("\u2028é\xff", 100)) {
		if got, want := escapedLen(text), len(appendString(nil, text)); got != want {
			t.Errorf("escapedLen(%q) = %d, appendString wrote %d", text, got, want)
		}
		for _, id := range []json.RawMessage{nil, json.RawMessage(`7`), json.RawMessage(`"req-1"`)} {
			r := &ToolResult{Content: []Content{{Type: "text", Text: "FILE_SAVED"}, {Type: "text", Text: text}, {Type: "image", Data: text, MimeType: "image/png"},
				{Type: "text", EscapedText: AppendEscaped(nil, text)}}, IsError: true}
			out, err := encodeResult(id, toolReply{r})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != cap(out) {
				t.Errorf("text %.20q id %s: encoded %d bytes into a buffer of %d", text, id, len(out), cap(out))
			}
		}
	}
}
