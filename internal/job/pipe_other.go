//go:build !linux

package job

import "os"

// outputPipe makes the pipe of one of a job's output streams (see the
// Linux one): here os.Pipe.
func outputPipe() (r, w *os.File, err error) { return os.Pipe() }
