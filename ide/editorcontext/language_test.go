package editorcontext

import "testing"

func TestLanguageID(t *testing.T) {
	tests := map[string]string{
		"":                "plaintext",
		"go":              "go",
		"sh":              "shellscript",
		"cs":              "csharp",
		"javascriptreact": "javascriptreact",
		"javascript.jsx":  "javascript",
		"make":            "makefile",
		"gomod":           "go.mod",
		"text":            "plaintext",
	}
	for ft, want := range tests {
		if got := languageID(ft); got != want {
			t.Errorf("languageID(%q) = %q, want %q", ft, got, want)
		}
	}
}
