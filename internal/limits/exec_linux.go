package limits

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prepareExec makes the arguments of an execve(2) of path now, and
// returns the call, which neither allocates nor enters the Go runtime's
// scheduler (see execWithRlimits). The soft limit of open files is the
// one set here: the runtime's raise was undone by a Setrlimit before.
func prepareExec(path string, argv, env []string) (func() error, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	a, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, err
	}
	e, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, err
	}
	return func() error {
		_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&e[0])))
		return errno
	}, nil
}

// setrlimitRaw sets resource to *r by a raw system call (no allocation,
// no scheduler): prlimit64 on this process.
func setrlimitRaw(resource int, r *unix.Rlimit) syscall.Errno {
	_, _, errno := unix.RawSyscall6(unix.SYS_PRLIMIT64, 0, uintptr(resource), uintptr(unsafe.Pointer(r)), 0, 0, 0)
	return errno
}
