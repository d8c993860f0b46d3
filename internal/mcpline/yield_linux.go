package mcpline

import "syscall"

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
func yieldToReader() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
