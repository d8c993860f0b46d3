// Package proc reads the process table: what hive needs to know about
// processes it did not start or no longer waits on (group members left
// behind by a job, the processes of a PTY session, processes of a dead
// daemon's jobs). It reads /proc on Linux; elsewhere it knows nothing and
// callers fall back to process-group signals.
package proc

// Stat is what hive reads of a process's /proc/PID/stat.
type Stat struct {
	Pid     int
	State   byte // 'R', 'S', 'Z' (zombie), ...
	PPid    int
	Pgrp    int
	Session int
	// Start is the start time in clock ticks after boot: with the pid, it
	// identifies a process across pid reuse.
	Start uint64
	// CPU is the processor time the process has had, user and system,
	// all its threads, in clock ticks: a process that does not change it
	// is not running (stopped, blocked, starved of nothing but itself).
	CPU uint64
}

// Alive reports whether the process is running (not a zombie).
func (s Stat) Alive() bool { return s.State != 'Z' && s.State != 'X' }

// Usage is what a process holds: memory, threads and open files.
type Usage struct {
	RSS     int64 // resident set size, bytes
	PeakRSS int64 // the largest RSS so far (VmHWM), bytes
	Threads int
	FDs     int // open file descriptors
}
