package output

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/paths"
)

// An Interleave records the order in which the chunks of two streams (a
// job's stdout and stderr) arrived, so that a reader can merge them in
// arrival order later, reading each stream by ranges.
//
// It writes a mark, (stream, the offsets both streams have reached,
// time), when a chunk arrives on the other stream than the last chunk
// did, or on the same stream at least MarkEvery after the last mark.
// Every byte after mark k and before mark k+1 belongs to mark k's stream
// s and arrived between the two marks: the segment of mark k is
// [k.Off[s], (k+1).Off[s]) of stream s, or to the stream's end for the
// last mark. A job that writes to one stream only costs one mark per
// MarkEvery of output; one that alternates costs a mark per switch.
//
// Marks are 24-byte records (MarkSize) in a file of their own, written
// in batches; at most maxMarks of them: when the index is full, a last
// mark (Cut) records where both streams were, and from there on the
// order is unknown (a reader emits the rest of stdout, then of stderr).
//
// The two streams are written through Writer(0) and Writer(1) only, so
// that a chunk and its mark are recorded together. Methods are safe for
// concurrent use.
type Interleave struct {
	path    string
	streams [2]*Stream
	max     int64

	mu     sync.Mutex
	f      *os.File
	buf    []byte // marks not yet in the file
	n      int64  // marks in all (file and buf)
	last   int    // stream of the last mark; -1 before the first
	lastT  time.Time
	flushT time.Time // when marks were last written to the file
	full   bool
	werr   error
	eager  bool // every mark goes to the file at once (FlushEachMark)
	// kept: how many marks of another writer the file keeps
	// (ContinueInterleave); the file is not truncated, new marks go
	// after them.
	kept int64
	cont bool
}

// MarkSize is the size of one mark in an index file, three little-endian
// 64-bit words: stdout's offset with the stream in the top bit (0 stdout,
// 1 stderr) and the cut flag in the next; stderr's offset; the arrival
// time in Unix nanoseconds.
const MarkSize = 24

// MarkEvery is how long a stream writes without a new mark: the time of
// a line is known to within this (exactly, after a pause of this long).
const MarkEvery = time.Second

// DefaultMaxMarks bounds an index file: 6 MiB.
const DefaultMaxMarks = 1 << 18

// markBatch is how many marks wait in memory before they are written.
const markBatch = 256

// NewInterleave records the arrival order of stdout and stderr in the
// file path (created at the first mark, mode 0600, never through a
// symlink; an old file of that name is removed now). maxMarks <= 0 means
// DefaultMaxMarks.
func NewInterleave(path string, stdout, stderr *Stream, maxMarks int64) (*Interleave, error) {
	if maxMarks <= 0 {
		maxMarks = DefaultMaxMarks
	}
	if maxMarks < 1 {
		maxMarks = 1
	}
	if err := removeOld(path); err != nil {
		return nil, fmt.Errorf("remove old index file %q: %w", path, err)
	}
	return &Interleave{path: path, streams: [2]*Stream{stdout, stderr}, max: maxMarks, last: -1}, nil
}

// ContinueInterleave goes on with the index file path where another
// writer left it (see Continue): its whole marks stay (a mark cut short
// is written over), the next chunk gets a mark of its own, and a full
// index stays full. stdout and stderr are the streams that writer's
// continue in (their totals go on from its).
func ContinueInterleave(path string, stdout, stderr *Stream, maxMarks int64) (*Interleave, error) {
	if maxMarks <= 0 {
		maxMarks = DefaultMaxMarks
	}
	x := &Interleave{path: path, streams: [2]*Stream{stdout, stderr}, max: max(maxMarks, 1), last: -1, cont: true}
	f, err := paths.OpenFile(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, fmt.Errorf("continue index file %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("continue index file %q: %w", path, err)
	}
	x.kept = fi.Size() / MarkSize
	x.n = x.kept
	if x.kept > 0 {
		var rec [MarkSize]byte
		if _, err := f.ReadAt(rec[:], (x.kept-1)*MarkSize); err != nil {
			return nil, fmt.Errorf("continue index file %q: %w", path, err)
		}
		x.full = binary.LittleEndian.Uint64(rec[:8])&(1<<62) != 0 || x.n >= x.max
	}
	return x, nil
}

// FlushEachMark writes every mark to the file before the chunk it marks
// reaches its stream: for an index another process reads while it is
// written (see LiveFileSnapshot).
func (x *Interleave) FlushEachMark() {
	x.mu.Lock()
	x.eager = true
	x.mu.Unlock()
}

// Path is the index file's path.
func (x *Interleave) Path() string { return x.path }

// Writer returns the writer of stream s (0 stdout, 1 stderr): each Write
// marks the chunk if needed, then writes it to the stream.
func (x *Interleave) Writer(s int) io.Writer { return streamWriter{x, s} }

type streamWriter struct {
	x *Interleave
	s int
}

func (w streamWriter) Write(p []byte) (int, error) { return w.x.write(w.s, p) }

func (x *Interleave) write(s int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.markIfDueLocked(s, x.streams[0].Stats().Total, x.streams[1].Stats().Total)
	return x.streams[s].Write(p)
}

// markIfDueLocked marks a chunk of stream s that begins where the
// streams' totals are t0 and t1, if the last mark was another stream's
// or a while ago (and the index is not full).
func (x *Interleave) markIfDueLocked(s int, t0, t1 int64) {
	if x.full {
		return
	}
	now := time.Now()
	if x.last != s || now.Sub(x.lastT) >= MarkEvery {
		cut := x.n+2 > x.max
		x.markLocked(s, cut, now, t0, t1)
		if cut { // full: no more marks
			x.full = true
			x.flushLocked()
		}
	}
}

func (x *Interleave) markLocked(s int, cut bool, t time.Time, t0, t1 int64) {
	var rec [MarkSize]byte
	w0 := uint64(t0) | uint64(s)<<63
	if cut {
		w0 |= 1 << 62
	}
	binary.LittleEndian.PutUint64(rec[:8], w0)
	binary.LittleEndian.PutUint64(rec[8:16], uint64(t1))
	binary.LittleEndian.PutUint64(rec[16:], uint64(t.UnixNano()))
	x.buf = append(x.buf, rec[:]...)
	x.n++
	x.last, x.lastT = s, t
	// In batches, and at least every MarkEvery: a daemon that dies loses
	// the marks of a second at most (a reader then shows what they would
	// have ordered stream by stream).
	if x.eager || len(x.buf) >= markBatch*MarkSize || t.Sub(x.flushT) >= MarkEvery {
		x.flushLocked()
		x.flushT = t
	}
}

// flushLocked writes the waiting marks. A file that fails keeps the
// marks written so far; later ones are lost (Err), and a reader then
// merges what is marked.
func (x *Interleave) flushLocked() {
	if len(x.buf) == 0 || x.werr != nil {
		x.buf = x.buf[:0]
		return
	}
	if x.f == nil {
		flag := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
		if x.cont {
			flag = os.O_CREATE | os.O_WRONLY
		}
		f, err := paths.OpenFile(x.path, flag)
		if err == nil && x.cont {
			_, err = f.Seek(x.kept*MarkSize, io.SeekStart)
			if err == nil {
				err = f.Truncate(x.kept * MarkSize) // a mark cut short goes
			}
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			x.werr = fmt.Errorf("create index file %q: %w", x.path, err)
			x.buf = x.buf[:0]
			return
		}
		x.f = f
	}
	if _, err := x.f.Write(x.buf); err != nil {
		x.werr = fmt.Errorf("write index file %q: %w", x.path, err)
	}
	x.buf = x.buf[:0]
}

// Snapshot writes the waiting marks to the file and returns how many
// marks it holds and the ends of both streams, as of one moment: no
// byte past those ends is covered by those marks, and every byte before
// them is.
func (x *Interleave) Snapshot() Snapshot {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.flushLocked()
	st0, st1 := x.streams[0].Stats(), x.streams[1].Stats()
	n := x.n
	if x.werr != nil {
		n = 0 // what the file holds is not known to be whole: no order
	}
	return Snapshot{Marks: n, Ends: [2]int64{st0.Total, st1.Total}, Full: x.full || x.werr != nil,
		Closed: st0.Closed && st1.Closed}
}

// Close writes the waiting marks and closes the file. The streams are
// closed by their owner.
func (x *Interleave) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.flushLocked()
	if x.f != nil {
		if err := x.f.Close(); err != nil && x.werr == nil {
			x.werr = fmt.Errorf("close index file %q: %w", x.path, err)
		}
		x.f = nil
	}
	return x.werr
}

// Err reports the first file error, if any.
func (x *Interleave) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.werr
}

// Snapshot is the state of an Interleave at one moment (see
// Interleave.Snapshot), or of an ended job's index file.
type Snapshot struct {
	Marks  int64    // marks in the file
	Ends   [2]int64 // the end offset of each stream
	Full   bool     // no marks after the last ones: the order past them is unknown
	Closed bool     // both streams are closed: nothing more comes
}

// Mark is one mark of an index file.
type Mark struct {
	Stream int      // 0 stdout, 1 stderr
	Off    [2]int64 // the offsets both streams had reached: Off[Stream] is the segment's first byte
	Time   time.Time
	Cut    bool // the index was full: the order from here on is unknown
}

// ReadMarks reads up to max marks of the index file f from mark from.
func ReadMarks(f io.ReaderAt, from int64, max int) ([]Mark, error) {
	if max <= 0 {
		return nil, nil
	}
	buf := make([]byte, max*MarkSize)
	n, err := f.ReadAt(buf, from*MarkSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read index marks at %d: %w", from, err)
	}
	n -= n % MarkSize
	out := make([]Mark, 0, n/MarkSize)
	for i := 0; i < n; i += MarkSize {
		w := binary.LittleEndian.Uint64(buf[i : i+8])
		out = append(out, Mark{Stream: int(w >> 63), Cut: w&(1<<62) != 0,
			Off:  [2]int64{int64(w &^ (3 << 62)), int64(binary.LittleEndian.Uint64(buf[i+8 : i+16]))},
			Time: time.Unix(0, int64(binary.LittleEndian.Uint64(buf[i+16:i+24])))})
	}
	return out, nil
}
