// Package output keeps one output stream of a supervised process: every byte
// gets an absolute offset, the most recent bytes stay in a fixed-size ring in
// memory, and the whole stream (up to a cap) goes to a file on disk.
//
// Memory is bounded by the ring size whatever the process prints. Bytes past
// the file cap are counted as dropped; they are still visible through the
// ring while they are recent.
package output

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hivetools/hive/internal/paths"
)

// DefaultRingSize is the number of recent bytes kept in memory per stream.
const DefaultRingSize = 4 << 20

// DefaultFileCap is the default cap of a stream file.
const DefaultFileCap int64 = 1 << 30

// Options configures a Stream. A nil *Options means the defaults.
type Options struct {
	// RingSize is the number of recent bytes kept in memory.
	// If zero, DefaultRingSize is used.
	RingSize int
	// FileCap is the maximum number of bytes written to the file; bytes past
	// it are counted as dropped. If zero, DefaultFileCap is used; a negative
	// value means no cap.
	FileCap int64
	// NoRing keeps no bytes in memory: reads come from the file only (a
	// writer whose bytes are read by another process, from the file).
	NoRing bool
	// Reserve is the free space the file leaves on its disk: once the disk
	// has less, bytes are counted as dropped instead of written (Err says
	// why), so that the store on the same disk can still record the job
	// and others. If zero, DefaultReserve is used; a negative value means
	// none.
	Reserve int64
}

// DefaultReserve is the free space a stream file leaves on its disk: room
// for the records of the jobs that filled it (a job does not start with
// less than 1 MiB free; see internal/job).
const DefaultReserve int64 = 512 << 10

// firstDiskCheck is how much a stream writes to its file before it first
// looks at its disk's free space: a short job's output costs no statfs
// (its start made sure of 1 MiB free).
const firstDiskCheck = 128 << 10

// Stream is one output stream. It is safe for concurrent use: one writer and
// any number of readers and waiters.
type Stream struct {
	path    string
	fileCap int64
	reserve int64 // Options.Reserve; 0: none
	// nextCheck is the file size at which the disk's free space is looked
	// at next (see roomLocked).
	nextCheck int64

	mu       sync.Mutex
	size     int    // ring capacity
	ring     []byte // grows to size; once full, ring[off % size] holds byte at off
	ringBase int64  // offset of the oldest byte kept in ring (after Release)
	total    int64  // absolute offset of the next byte
	inFile   int64  // bytes written to the file
	dropped  int64  // bytes past the file cap
	f        *os.File
	werr     error // first file write error; later bytes are counted dropped
	closed   bool
	changed  chan struct{} // made by Changed, closed (and dropped) by the next Write or Close
	readFile *os.File      // lazily opened for reads older than the ring; closed by Release
	released bool          // after Release: reads open the file for each read only
	noRing   bool          // Options.NoRing: the ring stays empty
	// follow: the file is written by another process (Follow); the
	// counters come from Advance and from the file's size.
	follow bool
	// cont: the file holds another writer's bytes, kept (Continue).
	cont bool
	// noSplice: the file takes no splice(2) (SpliceFrom); fileFD is f's
	// descriptor plus one once SpliceFrom has read it (0: not yet).
	noSplice bool
	// noNullSplice: /dev/null takes no splice(2) (spliceDropLocked).
	noNullSplice bool
	fileFD       int
}

// ErrNoSplice is SpliceFrom's error when a stream's bytes must be read
// and written (Write) instead.
var ErrNoSplice = errors.New("output: this stream's bytes are written, not spliced")

// Create makes a stream whose file is path (created at the first write;
// an existing file of that name is removed now). An empty path keeps
// the stream in memory only: old bytes that leave the ring are then lost
// from reads, but never from the count.
func Create(path string, opts *Options) (*Stream, error) {
	s := newStream(path, opts)
	if path != "" {
		// The file is created at the first write: a stream that stays
		// empty costs no file. An old file of the same name goes now, so
		// a reused name never shows stale bytes.
		if err := removeOld(path); err != nil {
			return nil, fmt.Errorf("remove old output file %q: %w", path, err)
		}
	}
	return s, nil
}

// Continue makes a stream that goes on with the file path where another
// writer left it (a holder of jobs taking over the pumps of the daemon
// that started a job): the file stays, what it holds (up to the cap) is
// the bytes in it so far, and at is what that writer counted (its total,
// which includes what it dropped past the cap; zero: only what the file
// holds). The next bytes go on at the file's end (up to the cap, as
// Create's). Nothing before them is in the ring.
func Continue(path string, opts *Options, at Stats) (*Stream, error) {
	if path == "" {
		return nil, errors.New("continue an output stream: no file")
	}
	s := newStream(path, opts)
	var size int64
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("continue output file %q: not a regular file", path)
		}
		size = fi.Size()
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("continue output file %q: %w", path, err)
	}
	if s.fileCap >= 0 {
		size = min(size, s.fileCap)
	}
	s.inFile = size
	s.total = max(at.Total, size+at.Dropped)
	s.dropped = s.total - size
	s.ringBase = s.total
	s.nextCheck = size + firstDiskCheck
	s.cont = true
	return s, nil
}

// newStream is a stream of opts, its file path (not opened yet).
func newStream(path string, opts *Options) *Stream {
	s := &Stream{path: path, reserve: DefaultReserve, nextCheck: firstDiskCheck}
	size := DefaultRingSize
	s.fileCap = DefaultFileCap
	if opts != nil {
		if opts.RingSize > 0 {
			size = opts.RingSize
		}
		if opts.FileCap != 0 {
			s.fileCap = opts.FileCap
		}
		s.noRing = opts.NoRing
		if opts.Reserve != 0 {
			s.reserve = max(opts.Reserve, 0)
		}
	}
	s.size = size
	return s
}

// removeOld removes the file path if there is one: one system call,
// which finds nothing for a new job's file (os.Remove tries a directory
// of that name too, a second call). A directory of that name is an error.
func removeOld(path string) error {
	if err := syscall.Unlink(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return &os.PathError{Op: "unlink", Path: path, Err: err}
	}
	return nil
}

// Follow makes a stream whose file another process writes (a holder of
// jobs, see internal/holder): it is read from the file, never written
// here. Its counters are what Advance last said, and for the bytes in the
// file also the file's size, read at each Read, so a read never lags the
// file. It keeps nothing in memory. The file is left as it is.
func Follow(path string, fileCap int64, at Stats) *Stream {
	if fileCap == 0 {
		fileCap = DefaultFileCap
	}
	s := &Stream{path: path, fileCap: fileCap, size: 1, noRing: true, follow: true}
	s.advanceLocked(at)
	return s
}

// Advance tells a following stream (Follow) the writer's counters; they
// only grow. Closed ends the stream. It wakes the waiters of Changed when
// something changed.
func (s *Stream) Advance(at Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.follow {
		return
	}
	if s.advanceLocked(at) {
		s.wakeLocked()
	}
}

func (s *Stream) advanceLocked(at Stats) bool {
	changed := false
	if at.InFile > s.inFile {
		s.inFile, changed = at.InFile, true
	}
	if at.Dropped > s.dropped {
		s.dropped, changed = at.Dropped, true
	}
	if t := max(at.Total, s.inFile+s.dropped); t > s.total {
		s.total, changed = t, true
	}
	if at.Closed && !s.closed {
		s.closed, changed = true, true
	}
	return changed
}

// refreshLocked brings a following stream's count of file bytes up to
// the file's size.
func (s *Stream) refreshLocked() {
	if !s.follow || s.closed || s.path == "" {
		return
	}
	if s.readFile == nil {
		f, err := paths.OpenFile(s.path, os.O_RDONLY)
		if err != nil {
			return // not created yet: nothing written
		}
		s.readFile = f
	}
	fi, err := s.readFile.Stat()
	if err != nil {
		return
	}
	n := fi.Size()
	if s.fileCap >= 0 {
		n = min(n, s.fileCap)
	}
	if n > s.inFile && s.advanceLocked(Stats{InFile: n}) {
		s.wakeLocked() // its waiters would miss the Advance that says the same later
	}
}

// Path is the stream file's path ("" for a memory-only stream).
func (s *Stream) Path() string { return s.path }

// Write appends p. It never returns an error: a failing file write is
// remembered (see Err) and the bytes are counted as dropped from the file.
func (s *Stream) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.follow {
		return 0, ErrClosed
	}
	n := int64(len(p))
	// File first, up to the cap.
	toFile := s.fileRoomLocked(n)
	if toFile > 0 {
		w, err := s.f.Write(p[:toFile])
		s.inFile += int64(w)
		if err != nil {
			s.werr = fmt.Errorf("write output file %q: %w", s.path, err)
			toFile = int64(w)
		}
	}
	if s.path != "" {
		s.dropped += n - toFile
	}
	if !s.noRing {
		s.appendRing(p)
	}
	s.total += n
	s.wakeLocked()
	return len(p), nil
}

// fileRoomLocked is how much of n bytes go to the file now (its cap, the
// room on its disk); the file is created if it is not yet.
func (s *Stream) fileRoomLocked(n int64) int64 {
	if s.f == nil && s.path != "" && s.werr == nil {
		// 0600, never through a symlink planted at the path.
		flag := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
		if s.cont {
			flag = os.O_CREATE | os.O_WRONLY
		}
		f, err := paths.OpenFile(s.path, flag)
		if err == nil && s.cont {
			// On at the last writer's end (the file's size when the
			// stream was made, or its cap).
			if _, err = f.Seek(s.inFile, io.SeekStart); err != nil {
				f.Close()
			}
		}
		if err != nil {
			s.werr = fmt.Errorf("create output file %q: %w", s.path, err)
		} else {
			s.f = f
		}
	}
	toFile := n
	if s.f == nil || s.werr != nil {
		toFile = 0
	} else if s.fileCap >= 0 && s.inFile+toFile > s.fileCap {
		toFile = max(s.fileCap-s.inFile, 0)
	}
	if toFile > 0 && s.reserve > 0 && s.inFile+toFile > s.nextCheck {
		toFile = s.roomLocked(toFile)
	}
	return toFile
}

// roomLocked is how much of want bytes the file may take without leaving
// less than the reserve free on its disk; once that is nothing, the
// stream stops writing its file (werr says why). The disk is looked at
// again after an eighth of the room it had is written (at least 64 KiB,
// never more than the room): other writers share it, and a nearly full
// disk is looked at more often.
func (s *Stream) roomLocked(want int64) int64 {
	free, ok := DiskFree(filepath.Dir(s.path))
	if !ok {
		s.nextCheck = math.MaxInt64 // unknown here: the write's own error will tell
		return want
	}
	room := free - s.reserve
	if room <= 0 {
		s.werr = fmt.Errorf("output file %q: the disk holding it is nearly full (%d bytes free, %d kept for the records): output past %d bytes dropped", s.path, free, s.reserve, s.inFile)
		return 0
	}
	step := max(room/8, 64<<10)
	s.nextCheck = s.inFile + min(step, room)
	return min(want, room)
}

// growLimit is how far a ring grows by append before it takes its full
// size at once.
const growLimit = 64 << 10

func (s *Stream) appendRing(p []byte) {
	size := int64(s.size)
	if len(s.ring) < s.size {
		// Still growing: ring holds exactly [ringBase, total).
		if need := len(s.ring) + len(p); need <= s.size {
			if need > cap(s.ring) && need > growLimit {
				// A big stream: the ring takes its full size now, not in
				// doublings that each leave the one before as garbage.
				full := make([]byte, len(s.ring), s.size)
				copy(full, s.ring)
				s.ring = full
			}
			s.ring = append(s.ring, p...)
			return
		}
		// Switch to the circular layout at full size: in place when the
		// ring has the room and its bytes are where that layout wants
		// them (nothing was released: byte at off is at index off).
		if cap(s.ring) >= s.size && s.ringBase == 0 {
			s.ring = s.ring[:s.size]
		} else {
			full := make([]byte, size)
			for i := range s.ring {
				full[(s.ringBase+int64(i))%size] = s.ring[i]
			}
			s.ring = full
		}
	}
	if int64(len(p)) > size {
		skip := int64(len(p)) - size
		p = p[skip:]
		// Pretend the skipped bytes were written: they only advance the offset.
		start := (s.total + skip) % size
		n := copy(s.ring[start:], p)
		copy(s.ring, p[n:])
		return
	}
	start := s.total % size
	n := copy(s.ring[start:], p)
	copy(s.ring, p[n:])
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("output stream closed")

// Close marks the end of the stream and closes its file. It wakes every
// waiter. Reads keep working after Close.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.wakeLocked()
	if s.f != nil {
		if err := s.f.Close(); err != nil && s.werr == nil {
			s.werr = fmt.Errorf("close output file %q: %w", s.path, err)
		}
	}
	return nil
}

// releaseKeep is how many of the last bytes Release keeps in memory.
const releaseKeep = 16 << 10

// compactMax bounds what Compact keeps of the bytes a released stream's
// file lacks (past its cap, after a write error, or a memory-only
// stream). Those bytes were counted as dropped from the file already;
// past this bound reads skip them, and count them in Skipped.
const compactMax = 64 << 10

// Release shrinks the ring of a closed stream to its last 16 KiB, plus
// every byte its file lacks (those exist only here), and closes the read
// handle; older bytes are then served from the file. It is a no-op on an
// open stream.
func (s *Stream) Release() { s.release(-1) }

// Compact is Release keeping at most 64 KiB in all of the bytes the file
// lacks: for streams of jobs that ended a while ago, so that hundreds of
// them cost little memory whatever they printed. It is a no-op on an open
// stream.
func (s *Stream) Compact() { s.release(compactMax) }

// release is Release keeping at most limit bytes past what the file holds
// (limit < 0: no limit).
func (s *Stream) release(limit int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		return
	}
	s.released = true
	if s.readFile != nil {
		s.readFile.Close()
		s.readFile = nil
	}
	start := max(s.total-int64(releaseKeep), s.ringStart())
	if s.path == "" || s.werr != nil {
		start = s.ringStart()
	} else if s.inFile < start {
		start = max(s.inFile, s.ringStart())
	}
	if limit >= 0 {
		start = max(start, s.total-limit)
	}
	if start == s.ringStart() && len(s.ring) == cap(s.ring) {
		// Nothing to drop and no spare room (a stream past its cap keeps
		// its whole ring): a copy would only hold the ring twice for a
		// while, 4 MiB per stream at the end of every flood.
		return
	}
	keep := s.total - start
	tail := make([]byte, keep)
	s.copyRing(tail, start)
	s.ring, s.ringBase = tail, start
	s.size = max(len(tail), 1)
	// A grown ring of exactly size bytes is circular; keep it linear by
	// making size one larger than what is held.
	if len(tail) == s.size {
		s.size++
	}
}

// ringStart is the offset of the oldest byte held in the ring.
func (s *Stream) ringStart() int64 {
	if s.noRing {
		return s.total
	}
	if len(s.ring) < s.size {
		return s.ringBase
	}
	return max64(s.total-int64(s.size), 0)
}

// copyRing copies ring bytes starting at offset off into buf.
// The caller checks that [off, off+len(buf)) is held.
func (s *Stream) copyRing(buf []byte, off int64) {
	if len(buf) == 0 {
		return
	}
	if len(s.ring) < s.size {
		copy(buf, s.ring[off-s.ringBase:])
		return
	}
	size := int64(s.size)
	start := off % size
	n := copy(buf, s.ring[start:])
	copy(buf[n:], s.ring)
}

// Stats is a snapshot of a stream's counters.
type Stats struct {
	Total   int64 // bytes written; the next byte's offset
	InFile  int64 // bytes in the file
	Dropped int64 // bytes not written to the file (past the cap or after a write error)
	Closed  bool
}

// Stats returns the current counters.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLocked()
	return Stats{Total: s.total, InFile: s.inFile, Dropped: s.dropped, Closed: s.closed}
}

// Unkept is how many of the bytes written can no longer be read: not in
// the file (past its cap, or after a write error or a full disk) and out
// of the ring (or never in one).
func (s *Stream) Unkept() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ringStart := s.total // where the bytes the ring holds begin
	if !s.noRing && !s.follow {
		ringStart = s.ringBase
		if len(s.ring) >= s.size {
			ringStart = max(s.ringBase, s.total-int64(s.size))
		}
	}
	if ringStart <= s.inFile {
		return 0
	}
	return ringStart - s.inFile
}

// Err reports the first file error, if any.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

// Changed returns a channel that is closed at the next Write or at Close
// (already closed once the stream is). Waiters select on it instead of
// polling. A write with no waiter allocates nothing.
func (s *Stream) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return closedChan
	}
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wakeLocked wakes the waiters of Changed.
func (s *Stream) wakeLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// Chunk is the answer of Read.
type Chunk struct {
	Data []byte
	// Offset is the offset of Data[0]. It is larger than the asked offset
	// when the asked bytes are no longer kept (see Skipped).
	Offset int64
	// Next is the offset to ask for next.
	Next int64
	// Skipped counts asked-for bytes that are no longer kept anywhere.
	Skipped int64
	// EOF is true when the stream is closed and Next is its end.
	EOF bool
}

// Read returns up to max bytes starting at offset off. Bytes still in the
// ring come from memory, older bytes from the file; bytes kept in neither are
// skipped and counted. An offset past the end returns no data with Next at
// the end.
func (s *Stream) Read(off int64, max int) (Chunk, error) {
	if off < 0 {
		return Chunk{}, fmt.Errorf("offset %d: must be >= 0", off)
	}
	if max <= 0 {
		return Chunk{}, fmt.Errorf("max %d: must be > 0", max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLocked()
	c := Chunk{Offset: off}
	if off >= s.total {
		c.Offset, c.Next, c.EOF = s.total, s.total, s.closed
		return c, nil
	}
	ringStart := s.ringStart()
	if off < ringStart {
		// Older than the ring: from the file if it has them.
		if off < s.inFile {
			end := min(off+int64(max), s.inFile, ringStart)
			buf := make([]byte, end-off)
			if err := s.readFileAt(buf, off); err != nil {
				return Chunk{}, err
			}
			c.Data, c.Next = buf, end
			c.EOF = s.closed && c.Next == s.total
			return c, nil
		}
		c.Skipped = ringStart - off
		off = ringStart
		c.Offset = off
	}
	end := min(off+int64(max), s.total)
	buf := make([]byte, end-off)
	s.copyRing(buf, off)
	c.Data, c.Next = buf, end
	c.EOF = s.closed && c.Next == s.total
	return c, nil
}

// KeptBelow returns where the bytes kept of the stream below end (in its
// file or in memory) end: [KeptBelow(end), end) is kept nowhere (dropped
// past the file's cap and gone from the ring, or not written yet).
func (s *Stream) KeptBelow(end int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLocked()
	e := min(end, s.total)
	if e <= s.inFile || e > s.ringStart() {
		return e
	}
	return s.inFile
}

// readFileAt reads buf from the file at off. A live stream keeps the
// file open for the next read; a released one holds no descriptor, so it
// opens the file for this read only.
func (s *Stream) readFileAt(buf []byte, off int64) error {
	f := s.readFile
	if f == nil {
		var err error
		if f, err = paths.OpenFile(s.path, os.O_RDONLY); err != nil {
			return fmt.Errorf("open output file %q: %w", s.path, err)
		}
		if s.released {
			defer f.Close()
		} else {
			s.readFile = f
		}
	}
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read output file %q at %d: %w", s.path, off, err)
	}
	return nil
}

// Tail returns the last n bytes kept in memory (fewer if fewer were written
// or the ring is smaller).
func (s *Stream) Tail(n int) []byte {
	if n <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noRing {
		// From the file: its last n bytes.
		s.refreshLocked()
		from := max(s.inFile-int64(n), 0)
		buf := make([]byte, s.inFile-from)
		if len(buf) == 0 || s.readFileAt(buf, from) != nil {
			return nil
		}
		return buf
	}
	// From the ring only: a read further back would come from the file
	// and stop where the ring begins, short of the end.
	from := max64(s.total-int64(n), s.ringStart())
	buf := make([]byte, s.total-from)
	s.copyRing(buf, from)
	return buf
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
