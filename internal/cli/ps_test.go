package cli

import (
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{850 * time.Millisecond, "850ms"},
		{4200 * time.Millisecond, "4.2s"},
		{3*time.Minute + 12*time.Second, "3m12s"},
		{2*time.Hour + 5*time.Minute, "2h05m"},
		{76 * time.Hour, "3d4h"},
	} {
		if got := humanDuration(tt.d); got != tt.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// Times of today show the clock only; older ones (jobs are kept for
// days) their date too.
func TestHumanTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.Local)
	for _, tt := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(-time.Hour), "14:00:00"},
		{now.Add(-16 * time.Hour), "2026-11-30 23:00"},
		{now.Add(-6 * 24 * time.Hour), "2026-11-25 15:00"},
		{time.Time{}, "-"},
	} {
		if got := humanTime(tt.t, now); got != tt.want {
			t.Errorf("humanTime(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}
