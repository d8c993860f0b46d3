package limits

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// prepareExec returns an exec of path: here through syscall.Exec (a raw
// execve is not how darwin's programs call the kernel), which allocates
// its arguments after the memory limits are set.
func prepareExec(path string, argv, env []string) (func() error, error) {
	return func() error { return syscall.Exec(path, argv, env) }, nil
}

// setrlimitRaw sets resource to *r.
func setrlimitRaw(resource int, r *unix.Rlimit) syscall.Errno {
	if err := unix.Setrlimit(resource, r); err != nil {
		if errno, ok := err.(syscall.Errno); ok {
			return errno
		}
		return syscall.EINVAL
	}
	return 0
}
