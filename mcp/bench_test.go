package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

const typicalToolCall = `{"method":"tools/call","params":{"name":"getDiagnostics","arguments":{"uri":"file:///home/user/project/src/main.go"},"_meta":{"claudecode/toolUseId":"toolu_01ABCDEF","progressToken":12}},"jsonrpc":"2.0","id":12}`

// fiveMB returns about 5 MB of source-like text, quotes and newlines
// included, so that JSON escaping does real work.
func fiveMB() string {
	line := "\tfmt.Printf(\"%s: <%d> & done\\n\", name, n) // ✻ a line of code\n"
	return strings.Repeat(line, 5<<20/len(line))
}

func openDiffMessage(b *testing.B) []byte {
	b.Helper()
	msg, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      7,
		"method":  "tools/call",
		"params": map[string]any{
			"name": "openDiff",
			"arguments": map[string]string{
				"old_file_path":     "/home/user/project/big.go",
				"new_file_path":     "/home/user/project/big.go",
				"new_file_contents": fiveMB(),
				"tab_name":          "✻ [Claude Code] big.go (6c8f53) ⧉",
			},
			"_meta": map[string]any{"progressToken": 7},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return msg
}

func benchmarkDecode(b *testing.B, msg []byte) {
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := decodeMessage(msg)
		if err != nil || m.kind != kindRequest {
			b.Fatal(err)
		}
		var p callParams
		if err := decodeParams(m.params, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeToolCall(b *testing.B) { benchmarkDecode(b, []byte(typicalToolCall)) }

func BenchmarkDecodeOpenDiff5MB(b *testing.B) { benchmarkDecode(b, openDiffMessage(b)) }

func benchmarkEncode(b *testing.B, res *ToolResult) {
	id := json.RawMessage(`7`)
	n := 0
	for _, c := range res.Content {
		n += len(c.Text)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := encodeResult(id, toWireResult(res)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeToolResult(b *testing.B) {
	benchmarkEncode(b, TextResult(`[{"uri":"file:///home/user/project/src/main.go","diagnostics":[{"message":"undefined: x","severity":"Error","range":{"start":{"line":3,"character":1},"end":{"line":3,"character":2}},"source":"compiler","code":"UndeclaredName"}]}]`))
}

func BenchmarkEncodeFileSaved5MB(b *testing.B) {
	benchmarkEncode(b, &ToolResult{Content: []Content{{Type: "text", Text: "FILE_SAVED"}, {Type: "text", Text: fiveMB()}}})
}

func BenchmarkEncodeNotification(b *testing.B) {
	params := map[string]any{
		"text": "selected text", "filePath": "/home/user/project/src/main.go", "fileUrl": "file:///home/user/project/src/main.go",
		"selection": map[string]any{"start": map[string]int{"line": 3, "character": 0}, "end": map[string]int{"line": 5, "character": 7}, "isEmpty": false},
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := encodeNotification("selection_changed", params); err != nil {
			b.Fatal(err)
		}
	}
}
