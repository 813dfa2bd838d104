package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The deny-list's share of getOpenEditors with 500 open files in 10
// directories (make bench, scenario 7): every open buffer is judged on
// every call.
func BenchmarkDeniedAll(b *testing.B) {
	ws := b.TempDir()
	var paths []string
	for i := 0; i < 500; i++ {
		p := filepath.Join(ws, fmt.Sprintf("src/pkg%02d/file%03d.go", i/50, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	bd := NewBoundary(Settings{Home: b.TempDir(), Deny: defaultDeny})
	folders := []string{ws}
	b.Run("all", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j, d := range bd.DeniedAllIn(folders, paths) {
				if d {
					b.Fatalf("%s denied", paths[j])
				}
			}
		}
	})
	b.Run("names", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, p := range paths {
				matchAny(bd.pats, p)
			}
		}
	})
	b.Run("lstat", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, p := range paths {
				_, _ = os.Lstat(p)
			}
		}
	})
}
