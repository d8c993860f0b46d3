package mcpline

import (
	"testing"
	"time"
)

// deepCall recurses n frames of about 256 bytes each, as a direct call
// goes down through handler, manager and fork preparation.
//
//go:noinline
func deepCall(n int) byte {
	var frame [224]byte
	touchStack(frame[:])
	if n == 0 {
		return frame[len(frame)-1]
	}
	return deepCall(n-1) + frame[len(frame)-1]
}

// BenchmarkGrowStack: a fresh goroutine that goes 7 KiB deep (as a direct
// call does), its stack grown by doublings on the way and grown at once
// first (growStack), taking turns: doublings-ns/op, grown-ns/op and
// their ratio. Hot, the copies cost little; between a client's calls the
// runtime's tables they walk are out of the caches (the pre-fork window
// of bench/README's "Session 23").
func BenchmarkGrowStack(b *testing.B) {
	done := make(chan byte)
	var doublings, grown time.Duration
	for b.Loop() {
		t0 := time.Now()
		go func() { done <- deepCall(28) }()
		<-done
		t1 := time.Now()
		go func() {
			growStack()
			done <- deepCall(28)
		}()
		<-done
		doublings, grown = doublings+t1.Sub(t0), grown+time.Since(t1)
	}
	b.ReportMetric(float64(doublings.Nanoseconds())/float64(b.N), "doublings-ns/op")
	b.ReportMetric(float64(grown.Nanoseconds())/float64(b.N), "grown-ns/op")
	b.ReportMetric(float64(grown)/float64(doublings), "grown/doublings")
}
