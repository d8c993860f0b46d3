package job

import (
	"testing"
	"time"
)

// Jobs started within one millisecond (the records' resolution) still
// have creation times in the order they were started: lists of the
// newest first show them so, not by their random ids.
func TestCreatedInStartOrder(t *testing.T) {
	// One runs; the rest wait in the queue, so they start many a
	// millisecond.
	h := newHarness(t, Options{MaxRunning: 1})
	h.start(Spec{Cmd: "sleep 30"})
	var last time.Time
	for i := 0; i < 50; i++ {
		j := h.start(Spec{Cmd: "true"})
		c := j.Info().Created
		if i > 0 && c.UnixMilli() <= last.UnixMilli() {
			t.Fatalf("job %d created at %d ms, not after the one before it (%d ms)", i, c.UnixMilli(), last.UnixMilli())
		}
		last = c
	}
	if ahead := time.Until(last); ahead > 100*time.Millisecond {
		t.Errorf("the last of 50 starts is %v ahead of the clock", ahead)
	}
}
