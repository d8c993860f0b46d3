package job

import (
	"os"

	"golang.org/x/sys/unix"
)

// outputPipe makes the pipe of one of a job's output streams: its read
// end, this process's, non-blocking and in the runtime's poller (the
// pumps read it there); its write end, the job's, blocking and out of the
// poller. os.Pipe puts both ends in the poller, and the write end, handed
// to the job and closed here once it has started, then costs a
// registration, a change to non-blocking and back before the fork, and a
// removal at its close: a handful of system calls on every start for
// nothing (BenchmarkOutputPipe).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	// A new pipe's read end has no status flag set: O_NONBLOCK is set
	// without reading them first (unix.SetNonblock's second call).
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
