package proc

import (
	"io/fs"
	"syscall"
)

// readFile reads a small /proc file. It is os.ReadFile without what a
// /proc file does not need: the fstat for its size (always 0 there) and
// the poller's fcntl and epoll calls (a regular file is never polled),
// four system calls fewer on every spawn's and every end's path.
func readFile(path string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if n > 0 {
			b = b[:len(b)+n]
		}
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
	}
}
