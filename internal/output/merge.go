package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hivetools/hive/internal/paths"
)

// Source reads the two streams of a job by ranges, like Stream.Read: the
// live streams (Streams) or the files of an ended job (Files).
type Source interface {
	Read(s int, off int64, max int) (Chunk, error)
}

// Streams is the Source of two live streams.
type Streams [2]*Stream

func (ss Streams) Read(s int, off int64, max int) (Chunk, error) { return ss[s].Read(off, max) }

// Files is the Source of two stream files (a nil file holds nothing).
// Bytes past a file's end (dropped past the cap) are not kept.
type Files [2]*os.File

func (fs Files) Read(s int, off int64, max int) (Chunk, error) {
	if fs[s] == nil {
		return Chunk{Offset: off, Next: off}, nil
	}
	buf := make([]byte, max)
	n, err := fs[s].ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return Chunk{}, err
	}
	return Chunk{Data: buf[:n], Offset: off, Next: off + int64(n)}, nil
}

// MergeOptions says what a Merger shows.
type MergeOptions struct {
	// Stdout and Stderr select the streams; neither means both, merged
	// in arrival order.
	Stdout, Stderr bool
	// Timestamps prefixes each line with the time its first byte
	// arrived (RFC 3339, to within MarkEvery) and a space.
	Timestamps bool
	// Tail, if > 0, starts the output at the last Tail lines.
	Tail int
}

// A Merger writes a job's output, its two streams merged in arrival
// order (see Interleave), as a sequence of rounds: each round writes
// what the snapshot it is given adds, so a follower calls Round again
// after the streams change. It reads marks and bytes by ranges: memory
// stays bounded whatever the job printed. It is not safe for concurrent
// use; Close closes the index file.
type Merger struct {
	src     Source
	idxPath string
	idx     *os.File
	start   time.Time // the time shown when nothing better is known
	o       MergeOptions
	show    [2]bool

	next      int64    // the next mark to read
	cur       Mark     // the mark whose segment is being written
	haveCur   bool     // cur is set
	pos       [2]int64 // per stream, the next byte to write
	tailed    bool     // the tail start is set
	lineStart bool
}

// NewMerger merges src along the marks of the index file idxPath (a
// missing file: no order is known, stdout then stderr). start is the
// time shown for bytes of no mark (the job's start).
func NewMerger(src Source, idxPath string, start time.Time, o MergeOptions) *Merger {
	m := &Merger{src: src, idxPath: idxPath, start: start, o: o, lineStart: true}
	m.show = [2]bool{o.Stdout, o.Stderr}
	if !o.Stdout && !o.Stderr {
		m.show = [2]bool{true, true}
	}
	return m
}

// Skip starts the shown stream at offset off (one stream shown: an
// offset is within a stream). Call it before the first Round.
func (m *Merger) Skip(off int64) {
	for s := range 2 {
		if m.show[s] && !m.show[1-s] {
			m.pos[s] = off
		}
	}
}

// Close closes the index file.
func (m *Merger) Close() error {
	if m.idx != nil {
		return m.idx.Close()
	}
	return nil
}

// FileSnapshot is the snapshot of an ended job's index file: its marks,
// and the streams' ends from the job's record. A missing or unreadable
// index gives no marks.
func FileSnapshot(idxPath string, ends [2]int64) Snapshot {
	snap := Snapshot{Ends: ends, Closed: true, Full: true}
	if fi, err := os.Stat(idxPath); err == nil && fi.Mode().IsRegular() {
		snap.Marks = fi.Size() / MarkSize
		snap.Full = snap.Marks == 0
	}
	return snap
}

// markBatchRead is how many marks a Merger reads at once.
const markBatchRead = 1024

func (m *Merger) marks(from int64, n int) ([]Mark, error) {
	if m.idx == nil {
		f, err := paths.OpenFile(m.idxPath, os.O_RDONLY)
		if err != nil {
			return nil, fmt.Errorf("open index file %q: %w", m.idxPath, err)
		}
		m.idx = f
	}
	return ReadMarks(m.idx, from, n)
}

// Round writes what snap adds since the last round: every segment up to
// the snapshot's ends. A follower calls it again with a newer snapshot
// once the streams changed; the snapshots must come from the same
// Interleave (or FileSnapshot), each no older than the one before.
func (m *Merger) Round(w io.Writer, snap Snapshot) error {
	if snap.Marks == 0 && snap.Full {
		// No order is known: one cut at the start.
		if !m.haveCur {
			m.cur, m.haveCur = Mark{Cut: true, Time: m.start}, true
		}
	}
	if m.o.Tail > 0 && !m.tailed {
		m.tailed = true
		if err := m.setTail(snap); err != nil {
			return err
		}
	}
	for m.next < snap.Marks {
		batch, err := m.marks(m.next, int(min(snap.Marks-m.next, markBatchRead)))
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break // the file is shorter than its count said
		}
		for _, k := range batch {
			if m.haveCur && !m.cur.Cut {
				s := m.cur.Stream
				if err := m.emit(w, s, k.Off[s], m.cur.Time); err != nil {
					return err
				}
			}
			m.cur, m.haveCur = k, true
			m.next++
		}
	}
	if !m.haveCur {
		return nil
	}
	if m.cur.Cut {
		for s := range 2 {
			if err := m.emit(w, s, snap.Ends[s], m.cur.Time); err != nil {
				return err
			}
		}
		return nil
	}
	if err := m.emit(w, m.cur.Stream, snap.Ends[m.cur.Stream], m.cur.Time); err != nil {
		return err
	}
	if snap.Closed {
		// Nothing more comes: what no mark covers (an index whose last
		// marks were lost with a daemon that died) follows, so no byte
		// is left out. With a whole index there is none.
		if err := m.emit(w, 1-m.cur.Stream, snap.Ends[1-m.cur.Stream], m.cur.Time); err != nil {
			return err
		}
	}
	return nil
}

// emit writes stream s from where it is to end, and moves it there.
func (m *Merger) emit(w io.Writer, s int, end int64, t time.Time) error {
	off := m.pos[s]
	if m.haveCur && !m.cur.Cut && m.cur.Stream == s {
		off = max(off, m.cur.Off[s])
	}
	for off < end {
		ch, err := m.src.Read(s, off, int(min(end-off, 256<<10)))
		if err != nil {
			return err
		}
		if ch.Next <= off {
			break // not kept (past a file's cap): skipped
		}
		// What was read, within [off, end) (bytes no longer kept were
		// skipped: Data starts at ch.Offset).
		data := ch.Data
		if lo := ch.Offset; lo >= end {
			data = nil
		} else if hi := lo + int64(len(data)); hi > end {
			data = data[:end-lo]
		}
		if m.show[s] && len(data) > 0 {
			if err := m.write(w, data, t); err != nil {
				return err
			}
		}
		off = min(ch.Next, end)
	}
	m.pos[s] = max(m.pos[s], end)
	return nil
}

// write writes data, with a timestamp at each line's start if asked.
func (m *Merger) write(w io.Writer, data []byte, t time.Time) error {
	if !m.o.Timestamps {
		_, err := w.Write(data)
		return err
	}
	stamp := t.UTC().Format(time.RFC3339Nano) + " "
	var b bytes.Buffer
	for len(data) > 0 {
		if m.lineStart {
			b.WriteString(stamp)
			m.lineStart = false
		}
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			b.Write(data)
			break
		}
		b.Write(data[:i+1])
		data = data[i+1:]
		m.lineStart = true
	}
	_, err := w.Write(b.Bytes())
	return err
}

// segment is a part of one stream, in arrival order with the others.
type segment struct {
	s        int
	from, to int64
	other    int64 // the other stream's offset at the segment's start
}

// setTail sets where the output starts: after the Tail-th newline from
// the end of the shown streams (a newline that ends the output does not
// count), found by reading the segments backwards from the end.
func (m *Merger) setTail(snap Snapshot) error {
	need := m.o.Tail
	last := true // the next byte looked at is the last of the output
	found := func(seg segment, at int64) {
		m.pos[seg.s] = at
		m.pos[1-seg.s] = seg.other
	}
	look := func(seg segment) (bool, error) {
		if !m.show[seg.s] {
			return false, nil
		}
		end := seg.to
		const block = 64 << 10
		for end > seg.from {
			from := max(seg.from, end-block)
			buf, err := m.readRange(seg.s, from, end)
			if err != nil {
				return false, err
			}
			for i := len(buf) - 1; i >= 0; i-- {
				if buf[i] == '\n' && !last {
					need--
					if need == 0 {
						found(seg, from+int64(i)+1)
						return true, nil
					}
				}
				last = false
			}
			end = from
		}
		return false, nil
	}
	ends := snap.Ends
	n := snap.Marks
	if n == 0 && snap.Full { // no order: stdout then stderr
		for _, seg := range []segment{{1, 0, ends[1], ends[0]}, {0, 0, ends[0], 0}} {
			if ok, err := look(seg); ok || err != nil {
				return err
			}
		}
		return nil
	}
	for n > 0 {
		from := max(n-markBatchRead, 0)
		batch, err := m.marks(from, int(n-from))
		if err != nil {
			return err
		}
		for i := len(batch) - 1; i >= 0; i-- {
			k := batch[i]
			var segs []segment
			if k.Cut {
				segs = []segment{{1, k.Off[1], ends[1], ends[0]}, {0, k.Off[0], ends[0], k.Off[1]}}
			} else {
				s := k.Stream
				segs = []segment{{s, k.Off[s], ends[s], k.Off[1-s]}}
			}
			for _, seg := range segs {
				if ok, err := look(seg); ok || err != nil {
					return err
				}
			}
			ends = k.Off
		}
		n = from
	}
	return nil
}

// readRange reads [from, to) of stream s; bytes no longer kept read as
// zeros (never newlines).
func (m *Merger) readRange(s int, from, to int64) ([]byte, error) {
	buf := make([]byte, to-from)
	off := from
	for off < to {
		ch, err := m.src.Read(s, off, int(to-off))
		if err != nil {
			return nil, err
		}
		if ch.Next <= off {
			break
		}
		if ch.Offset >= from && ch.Offset < to {
			copy(buf[ch.Offset-from:], ch.Data)
		}
		off = ch.Next
	}
	return buf, nil
}
