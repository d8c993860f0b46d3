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

// ps's CREATED, as docker ps says it.
func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.Local)
	const day = 24 * time.Hour
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Minute, "Less than a second ago"},
		{300 * time.Millisecond, "Less than a second ago"},
		{1500 * time.Millisecond, "1 second ago"},
		{42 * time.Second, "42 seconds ago"},
		{90 * time.Second, "About a minute ago"},
		{2 * time.Minute, "2 minutes ago"},
		{59 * time.Minute, "59 minutes ago"},
		{80 * time.Minute, "About an hour ago"},
		{47 * time.Hour, "47 hours ago"},
		{3 * day, "3 days ago"},
		{20 * day, "2 weeks ago"},
		{90 * day, "3 months ago"},
		{800 * day, "2 years ago"},
	} {
		if got := ago(now.Add(-tt.d), now); got != tt.want {
			t.Errorf("ago(now-%v) = %q, want %q", tt.d, got, tt.want)
		}
		if got := ago(now.Add(-tt.d), now); len(got) > len(lessThanASecond) {
			t.Errorf("ago(now-%v) = %q, longer than %q", tt.d, got, lessThanASecond)
		}
	}
	if got := ago(time.Time{}, now); got != "-" {
		t.Errorf("ago(zero) = %q, want -", got)
	}
}
