//go:build linux

package main

import "testing"

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{20: "20", 200: "200", 2000: "2,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}
