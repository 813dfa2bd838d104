package mcp

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	s, err := NewServer(Config{ConfigDir: t.TempDir(), PID: 1, WorkspaceFolders: []string{"/"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	tests := []struct {
		name    string
		token   string
		wantErr string
	}{
		{"good token", s.Token(), ""},
		{"bad token", "nope", "HTTP 401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := Probe(ctx, s.Port(), tt.token)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Probe err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
