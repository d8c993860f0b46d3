package job

import (
	"runtime/debug"
	"sync"
	"time"
)

// A burst of starts (burstStarts or more, each within burstQuiet of the
// one before) leaves garbage that the collector, tuned to be lazy
// (GOGC 400 in the daemon and the holder), keeps for long, and memory
// the runtime keeps from the system: 300 sleep jobs started at once cost
// the daemon and the holder about 100 KiB each in RSS, 2 s and 30 s
// later alike, where what they keep is a fraction of that. Once the
// starts have been quiet for burstQuiet, the heap is collected and its
// free memory given back (debug.FreeOSMemory): one collection a burst,
// off every call's path.
const (
	burstStarts = 32
	burstQuiet  = time.Second
)

var burst struct {
	mu   sync.Mutex
	n    int       // starts of the burst so far
	last time.Time // of the last start
	t    *time.Timer
}

// noteStart counts a start towards a burst (see burstStarts).
func noteStart() {
	burst.mu.Lock()
	defer burst.mu.Unlock()
	now := time.Now()
	if now.Sub(burst.last) > burstQuiet {
		burst.n = 0
	}
	burst.n++
	burst.last = now
	if burst.n < burstStarts {
		return
	}
	if burst.t == nil {
		burst.t = time.AfterFunc(burstQuiet, afterBurst)
	} else {
		burst.t.Reset(burstQuiet)
	}
}

// afterBurst gives back what a burst left, unless starts came again.
func afterBurst() {
	burst.mu.Lock()
	quiet := time.Since(burst.last) >= burstQuiet
	if quiet {
		burst.n = 0
	}
	burst.mu.Unlock()
	if quiet {
		debug.FreeOSMemory()
	}
}
