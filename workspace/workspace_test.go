package workspace

import "testing"

func TestURIPath(t *testing.T) {
	tests := []struct {
		uri  string
		want string
		ok   bool
	}{
		{"file:///a/b.go", "/a/b.go", true},
		{"FILE:///a/b.go", "/a/b.go", true},
		{"file://localhost/a/b.go", "/a/b.go", true},
		{"file:///a/./c/../b.go", "/a/b.go", true},
		{"file:///a/with space.go", "/a/with space.go", true},
		{"/abs/x.go", "/abs/x.go", true},
		{"rel/x.go", "/base/rel/x.go", true},
		{"file://otherhost/a.go", "", false},
		{"untitled:Untitled-1", "", false},
		{"_claude_fs_right:/a.go", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := URIPath(tt.uri, "/base")
		if got != tt.want || ok != tt.ok {
			t.Errorf("URIPath(%q) = %q, %v; want %q, %v", tt.uri, got, ok, tt.want, tt.ok)
		}
	}
}
