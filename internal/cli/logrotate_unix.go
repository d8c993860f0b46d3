//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// redirectFD makes t's descriptor refer to f's open file.
func redirectFD(f, t *os.File) error {
	return unix.Dup2(int(f.Fd()), int(t.Fd()))
}
