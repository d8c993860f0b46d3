//go:build !linux

package output

// SpliceFrom is Linux's (splice(2)): here every stream's bytes are read
// and written (Write).
func (s *Stream) SpliceFrom(pipeFD int, max int) (int, error) { return 0, ErrNoSplice }

// SpliceFrom: see Stream.SpliceFrom.
func (w streamWriter) SpliceFrom(pipeFD int, max int) (int, error) { return 0, ErrNoSplice }
