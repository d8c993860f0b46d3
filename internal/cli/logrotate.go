package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/hivetools/hive/internal/paths"
)

// rotatingLog bounds the daemon log a bridge-started daemon writes to
// (its stdout and stderr are daemon.log): past max bytes the file becomes
// daemon.log.1 (replacing the previous one) and a fresh daemon.log takes
// its place, also under the daemon's stdout and stderr, so what the
// runtime itself prints (a panic) lands there too. So the log keeps at
// most about 2*max bytes, whatever the daemon's uptime.
type rotatingLog struct {
	path    string
	max     int64
	size    int64
	w       *os.File   // where lines go (the daemon's stderr)
	targets []*os.File // files whose descriptors follow the new file
	midLine bool       // the last write did not end a line: no rotation yet
}

// newRotatingLog returns a rotating writer for path if w is that very file
// (a bridge started this daemon), else nil: a daemon run by hand writes
// where its stderr goes, untouched.
func newRotatingLog(path string, max int64, w *os.File, targets ...*os.File) *rotatingLog {
	if runtime.GOOS == "windows" {
		return nil // an open file cannot be renamed there
	}
	pfi, err := os.Lstat(path) // a symlink is never the daemon's own log
	if err != nil {
		return nil
	}
	same := func(f *os.File) bool {
		fi, err := f.Stat()
		return err == nil && fi.Mode().IsRegular() && os.SameFile(fi, pfi)
	}
	if !same(w) {
		return nil
	}
	r := &rotatingLog{path: path, max: max, size: pfi.Size(), w: w}
	for _, t := range targets {
		if same(t) {
			r.targets = append(r.targets, t)
		}
	}
	return r
}

func (r *rotatingLog) Write(p []byte) (int, error) {
	if r.size > 0 && r.size+int64(len(p)) > r.max && !r.midLine {
		if err := r.rotate(); err != nil {
			fmt.Fprintf(r.w, "log rotation failed: %v\n", err) // keep logging where we are
			r.size = 0                                         // and try again after max more bytes
		}
	}
	n, err := r.w.Write(p)
	r.size += int64(n)
	if n > 0 {
		r.midLine = p[n-1] != '\n'
	}
	return n, err
}

func (r *rotatingLog) rotate() error {
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return err
	}
	// Rename moves the name, not what a link points at; the new file is
	// 0600 and never opened through a link planted since.
	f, err := paths.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, t := range r.targets {
		if err := redirectFD(f, t); err != nil {
			return err
		}
	}
	r.size = 0
	return nil
}

var _ io.Writer = (*rotatingLog)(nil)
