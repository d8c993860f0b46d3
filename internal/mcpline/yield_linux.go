package mcpline

import (
	"sync/atomic"
	"syscall"
	"time"
)

// yieldToReader gives this thread's processor to whatever the kernel
// made runnable on it, after an answer's write: most often the client
// that reads the answer. A pipe's writer wakes its reader onto the
// writer's processor when the writer looks about to sleep (a "sync"
// wake-up); a daemon that goes on working instead (the job's remaining
// work, the next call's) keeps the client waiting until it does, or
// until the other processor takes the client, which on a VM waking an
// idle vCPU costs tens of microseconds. One system call, and nothing to
// yield to most often when the client is elsewhere. Raw: the runtime
// keeps the processor (P) for this thread, which runs on once the
// kernel gives it the CPU back.
//
// On a machine whose processors are all busy (a build beside the agent)
// the kernel gives the processor to that work instead, for its slice,
// and the daemon (its P held meanwhile) answers nothing until it comes
// back: runs 25-60 % slower under two busy loops (BenchmarkVsBase with
// HIVE_BENCH_HOGS=2). A yield that comes back late turns them off for a
// while (lateYields).
func yieldToReader() {
	lateYields.yield(func() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) })
}

// lateYields turns yields off for yieldPause once one took longer than
// lateYield: the processor went to other work rather than to the client.
var lateYields yieldBackoff

const (
	lateYield  = time.Millisecond
	yieldPause = time.Second
)

// A yieldBackoff runs yields until one comes back late, then none until
// a pause has passed.
type yieldBackoff struct {
	offUntil atomic.Int64 // on clock's scale; 0: on
}

// clockStart is when the package was loaded; clock, the monotonic time
// since.
var clockStart = time.Now()

func clock() time.Duration { return time.Since(clockStart) }

// yield runs do unless yields are off, and turns them off if it took
// longer than lateYield.
func (b *yieldBackoff) yield(do func()) {
	t0 := clock()
	if t0 < time.Duration(b.offUntil.Load()) {
		return
	}
	do()
	if t := clock(); t-t0 > lateYield {
		b.offUntil.Store(int64(t + yieldPause))
	}
}

// off reports whether yields are off now.
func (b *yieldBackoff) off() bool { return clock() < time.Duration(b.offUntil.Load()) }
