//go:build unix

package search

import (
	"io"
	"syscall"
)

// rawFile reads a file through its descriptor, without the runtime poller
// registration and finalizer an *os.File costs (regular files never block
// in the poller sense anyway). Not safe for concurrent use.
type rawFile struct{ fd int }

func openRead(path string) (*rawFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &rawFile{fd: fd}, nil
	}
}

func (f *rawFile) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(f.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if n < 0 {
			n = 0
		}
		if err == nil && n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, err
	}
}

func (f *rawFile) Close() error { return syscall.Close(f.fd) }
