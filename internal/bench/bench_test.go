//go:build linux

package main

import (
	"math"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	s := sample{5, 1, 4, 2, 3}
	tests := []struct {
		q, want float64
	}{
		{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {1, 5}, {0.125, 1.5}, {0.99, 4.96},
	}
	for _, tt := range tests {
		if got := s.quantile(tt.q); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if !math.IsNaN(sample{}.median()) {
		t.Error("median of an empty sample is not NaN")
	}
	if s[0] != 5 {
		t.Error("quantile sorted the sample in place")
	}
}

func TestRatios(t *testing.T) {
	got := ratios(sample{2, 3, 4}, sample{1, 0, 2, 7})
	want := sample{2, 2}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ratios = %v, want %v", got, want)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{fmtMS(0.1234), "0.123 ms"},
		{fmtMS(5.678), "5.68 ms"},
		{fmtMS(56.78), "56.8 ms"},
		{fmtMS(567.8), "568 ms"},
		{fmtMS(5678), "5.68 s"},
		{fmtMS(56780), "56.8 s"},
		{fmtMS(math.NaN()), "—"},
		{fmtMB(15 << 20), "15.0 MiB"},
		{fmtMB(300 << 20), "300 MiB"},
		{fmtRatio(1.234), "1.23×"},
		{fmtRatio(math.Inf(1)), "—"},
		{fmtNs(999), "999 ns"},
		{fmtNs(1500), "1.50 µs"},
		{fmtNs(2.5e6), "2.50 ms"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if got := ms([]time.Duration{1500 * time.Microsecond}); got[0] != 1.5 {
		t.Errorf("ms(1.5ms) = %v", got)
	}
}
