package proc

import (
	"os/exec"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of Stat.Start: clock ticks a second (USER_HZ, 100
// on every architecture Linux runs hive on). StartTimed checks it once
// against /proc.
const userHZ = 100

// bootTicks is the clock of Stat.Start (CLOCK_BOOTTIME, in the time
// namespace of the caller, as /proc shows it to the caller) in clock
// ticks; 0 if it cannot be read.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano()) / (1e9 / userHZ)
}

// tickCheck is how far StartTimed trusts the clock: 0 not compared with
// /proc yet, 1 it agreed, 2 it did not (/proc is read from then on).
var tickCheck atomic.Int32

// StartTimed starts cmd as Start does and returns its process's start
// time (Stat.Start) without reading /proc: the kernel stamps a process
// with the clock as it forks it, so when the clock reads the same tick
// before and after the start, that tick is the stamp. When the start
// spans two ticks (one start in tens: a tick is 10 ms) it is read from
// /proc, as it is once, the first time, to check the clock against it.
// 0 if it cannot be known.
func StartTimed(cmd *exec.Cmd) (uint64, error) {
	before := bootTicks()
	if err := start(cmd, true); err != nil {
		return 0, err
	}
	after := bootTicks()
	check := tickCheck.Load()
	if before != 0 && before == after && check == 1 {
		return before, nil
	}
	// Not waited for yet: its /proc entry stays, also once it exited.
	st, ok := Read(cmd.Process.Pid)
	if !ok {
		return 0, nil
	}
	if before != 0 && before == after && check == 0 {
		if st.Start == before {
			tickCheck.Store(1)
		} else {
			tickCheck.Store(2)
		}
	}
	return st.Start, nil
}
