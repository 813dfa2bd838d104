package review

import (
	"testing"
	"time"
)

// The poll slows down only after a run of scans that found nothing, and
// comes back to its pace at once.
func TestPollInterval(t *testing.T) {
	tests := []struct {
		idle int
		want time.Duration
	}{
		{0, pollEvery},
		{idleScans - 1, pollEvery},
		{idleScans, pollIdle},
		{idleScans * 10, pollIdle},
	}
	for _, tt := range tests {
		if got := pollInterval(tt.idle); got != tt.want {
			t.Errorf("pollInterval(%d) = %v, want %v", tt.idle, got, tt.want)
		}
	}
	if pollIdle <= pollEvery {
		t.Errorf("pollIdle %v is not slower than pollEvery %v", pollIdle, pollEvery)
	}
}
