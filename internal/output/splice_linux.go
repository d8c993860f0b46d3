package output

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SpliceFrom moves up to max bytes that the pipe pipeFD holds now into
// the stream's file with splice(2), without their passing through this
// process: a writer that dies at any moment leaves each byte either in
// the pipe or in the file, for the next reader of the pipe to go on
// after the file's end (Continue). Only a stream that keeps no ring
// (Options.NoRing) and has a file takes its bytes so.
//
// It returns the bytes moved; 0 and nil at the pipe's end (no writer
// left, nothing in it); unix.EAGAIN when the pipe holds nothing now;
// ErrNoSplice, with nothing moved, when the stream's bytes must be read
// and written (Write) from now on: no file, a file that failed or a disk
// nearly full (the bytes are then counted as dropped), or a file
// splice(2) cannot write. Past the file's cap the bytes go to /dev/null,
// counted as dropped (spliceDropLocked; ErrNoSplice where it takes no
// splice(2)).
func (s *Stream) SpliceFrom(pipeFD int, max int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.follow {
		return 0, ErrClosed
	}
	if !s.noRing || s.path == "" || s.noSplice {
		return 0, ErrNoSplice
	}
	if s.f == nil && s.werr == nil {
		// No file before the first byte, as Write's: an empty stream
		// costs none.
		if n, err := unix.IoctlGetInt(pipeFD, unix.TIOCINQ); err == nil && n == 0 {
			fds := []unix.PollFd{{Fd: int32(pipeFD), Events: unix.POLLIN}}
			if k, _ := unix.Poll(fds, 0); k > 0 && fds[0].Revents&unix.POLLHUP != 0 && fds[0].Revents&unix.POLLIN == 0 {
				return 0, nil // the pipe's end
			}
			return 0, unix.EAGAIN
		}
	}
	// Up to the next look at the disk's room, if it is due: a short
	// job's output costs no statfs, as Write's (see firstDiskCheck).
	want := int64(max)
	if s.reserve > 0 && s.inFile < s.nextCheck {
		want = min(want, s.nextCheck-s.inFile)
	}
	room := s.fileRoomLocked(want)
	if room <= 0 {
		if s.f != nil && s.werr == nil && s.fileCap >= 0 && s.inFile >= s.fileCap {
			return s.spliceDropLocked(pipeFD, max)
		}
		return 0, ErrNoSplice
	}
	if s.fileFD == 0 {
		fd := -1
		if rc, err := s.f.SyscallConn(); err != nil || rc.Control(func(x uintptr) { fd = int(x) }) != nil || fd < 0 {
			s.noSplice = true
			return 0, ErrNoSplice
		}
		s.fileFD = fd + 1
	}
	n, err := s.spliceCountLocked(pipeFD, s.fileFD-1, int(room), &s.inFile)
	if !errors.Is(err, errSpliceFailed) {
		return n, err
	}
	if errors.Is(err, unix.EINVAL) {
		// Not a file splice(2) writes (some filesystems): Write.
		s.noSplice = true
		return 0, ErrNoSplice
	}
	s.werr = fmt.Errorf("write output file %q: %w", s.path, err)
	return 0, ErrNoSplice
}

// spliceDropLocked takes up to max bytes of a stream past its file's
// cap from the pipe into /dev/null: they are only counted (dropped; the
// stream keeps no ring), and never copied into this process, which a
// job pouring past its cap would otherwise keep busy reading what it
// throws away. ErrNoSplice where /dev/null takes no splice(2).
func (s *Stream) spliceDropLocked(pipeFD, max int) (int, error) {
	if devNull < 0 || s.noNullSplice {
		return 0, ErrNoSplice
	}
	n, err := s.spliceCountLocked(pipeFD, devNull, max, &s.dropped)
	if errors.Is(err, errSpliceFailed) {
		s.noNullSplice = true
		return 0, ErrNoSplice
	}
	return n, err
}

// errSpliceFailed wraps what splice(2) said when it moved nothing for
// another reason than the pipe's (spliceCountLocked).
var errSpliceFailed = errors.New("splice failed")

// spliceCountLocked moves up to max bytes the pipe pipeFD holds now to
// fd (again if a signal cut it short) and counts them in *into and the
// total: n > 0 bytes moved; 0 and nil at the pipe's end; unix.EAGAIN
// when it holds nothing now; else splice(2)'s error, wrapped in
// errSpliceFailed.
func (s *Stream) spliceCountLocked(pipeFD, fd, max int, into *int64) (int, error) {
	for {
		n, err := unix.Splice(pipeFD, nil, fd, nil, max, unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MOVE)
		switch {
		case n > 0:
			*into += n
			s.total += n
			s.wakeLocked()
			return int(n), nil
		case err == nil:
			return 0, nil // the pipe's end
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return 0, unix.EAGAIN
		}
		return 0, fmt.Errorf("%w: %w", errSpliceFailed, err)
	}
}

// devNull is a descriptor of /dev/null open for writing, shared by every
// stream (-1 if it cannot be opened). Opened as the process starts: a
// daemon's descriptors are the same before its first job as after.
var devNull = func() int {
	fd, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}()

// SpliceFrom is Stream.SpliceFrom into stream w's file, marked as Write
// marks. An index that flushes each mark (FlushEachMark: another process
// goes on from its file) has the mark in its file before the bytes are
// in theirs, once the pipe holds some; else the mark follows the bytes
// (a writer that dies between loses it, as it loses the marks it has
// not flushed: the merged view shows that chunk stream by stream).
func (w streamWriter) SpliceFrom(pipeFD int, max int) (int, error) {
	x := w.x
	x.mu.Lock()
	defer x.mu.Unlock()
	t0, t1 := x.streams[0].Stats().Total, x.streams[1].Stats().Total
	if x.eager {
		// FIONREAD (TIOCINQ on Linux): what the pipe holds.
		if n, err := unix.IoctlGetInt(pipeFD, unix.TIOCINQ); err == nil && n > 0 {
			x.markIfDueLocked(w.s, t0, t1)
		}
	}
	n, err := x.streams[w.s].SpliceFrom(pipeFD, max)
	if n > 0 {
		x.markIfDueLocked(w.s, t0, t1) // none again if marked above
	}
	return n, err
}
