package cli

import (
	"errors"
	"os"
)

// redirectFD: standard handles are not swapped under a running process
// here; the log is not rotated.
func redirectFD(f, t *os.File) error { return errors.New("log rotation is not supported on Windows") }
