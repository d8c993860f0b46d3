package output

import (
	"bytes"
	"context"
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
	// KeptBelow returns where what is kept of stream s below end ends:
	// the bytes [KeptBelow(s, end), end) are kept nowhere (dropped past
	// a file's cap, or neither in the file nor in memory); it is end when
	// the byte before end is kept.
	KeptBelow(s int, end int64) int64
}

// Streams is the Source of two live streams.
type Streams [2]*Stream

func (ss Streams) Read(s int, off int64, max int) (Chunk, error) { return ss[s].Read(off, max) }

func (ss Streams) KeptBelow(s int, end int64) int64 { return ss[s].KeptBelow(end) }

// Files is the Source of two stream files (a nil file holds nothing).
// Bytes past a file's end (dropped past the cap) are not kept.
type Files [2]*os.File

func (fs Files) Read(s int, off int64, max int) (Chunk, error) {
	if fs[s] == nil {
		return Chunk{Offset: off, Next: off}, nil
	}
	if k := fs.KeptBelow(s, off+int64(max)); k < off+int64(max) {
		max = int(k - min(off, k)) // no buffer for what the file does not hold
	}
	if max <= 0 {
		return Chunk{Offset: off, Next: off}, nil
	}
	buf := make([]byte, max)
	n, err := fs[s].ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return Chunk{}, err
	}
	return Chunk{Data: buf[:n], Offset: off, Next: off + int64(n)}, nil
}

func (fs Files) KeptBelow(s int, end int64) int64 {
	if fs[s] == nil {
		return 0
	}
	fi, err := fs[s].Stat()
	if err != nil {
		return end // not known: read, and find nothing
	}
	return min(end, max(fi.Size(), 0))
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

	// The marks as checked (see markRange): marks [0, checked) are
	// sound; stop (if >= 0) is where the index ends for this Merger,
	// after a Cut or at a bad mark, which reads as cut (badCut).
	checked  int64
	prevOff  [2]int64 // the offsets of mark checked-1
	prevTime time.Time
	stop     int64
	cut      Mark
	badCut   bool
}

// NewMerger merges src along the marks of the index file idxPath (a
// missing file: no order is known, stdout then stderr). start is the
// time shown for bytes of no mark (the job's start).
func NewMerger(src Source, idxPath string, start time.Time, o MergeOptions) *Merger {
	m := &Merger{src: src, idxPath: idxPath, start: start, o: o, lineStart: true, stop: -1, prevTime: start}
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
// index gives no marks; a longer one than an Interleave writes
// (DefaultMaxMarks) is read that far.
func FileSnapshot(idxPath string, ends [2]int64) Snapshot {
	snap := Snapshot{Ends: ends, Closed: true, Full: true}
	if fi, err := os.Stat(idxPath); err == nil && fi.Mode().IsRegular() {
		snap.Marks = min(fi.Size()/MarkSize, DefaultMaxMarks)
		snap.Full = snap.Marks == 0
	}
	return snap
}

// LiveFileSnapshot is the snapshot of the index file of a job whose
// streams another process writes (Interleave.FlushEachMark), with the
// streams' ends read before it is called: every byte before those ends
// was marked before it was written, so the file covers it; marks past
// the ends (of bytes not written yet at that moment) are left out.
func LiveFileSnapshot(idxPath string, ends [2]int64, closed bool) Snapshot {
	snap := FileSnapshot(idxPath, ends)
	snap.Closed = closed
	if closed || snap.Marks == 0 {
		return snap
	}
	f, err := paths.OpenFile(idxPath, os.O_RDONLY)
	if err != nil {
		return Snapshot{Ends: ends, Full: true}
	}
	defer f.Close()
	const tail = 16
	from := max(snap.Marks-tail, 0)
	ms, err := ReadMarks(f, from, int(snap.Marks-from))
	if err != nil {
		return Snapshot{Ends: ends, Full: true}
	}
	n := len(ms)
	for n > 0 && (ms[n-1].Off[0] > ends[0] || ms[n-1].Off[1] > ends[1]) {
		n--
	}
	snap.Marks = from + int64(n)
	snap.Full = n > 0 && ms[n-1].Cut
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

// count is how many marks of snap the Merger goes by: all of them, or
// as far as the first Cut or bad mark, once markRange has found it.
func (m *Merger) count(snap Snapshot) int64 {
	n := min(snap.Marks, DefaultMaxMarks)
	if m.stop >= 0 {
		n = min(n, m.stop)
	}
	return n
}

// markRange reads up to n marks from mark from (no further than
// m.checked: marks are checked in order) and checks each new one: its
// offsets within snap's ends, no lower than the mark before, the
// reserved bits clear. A bad mark (a corrupt or planted index file)
// reads as a Cut where the mark before it was: the order from there on
// is unknown, and no later mark is read. A short file ends the marks
// where it ends.
func (m *Merger) markRange(snap Snapshot, from int64, n int) ([]Mark, error) {
	if from > m.checked {
		return nil, fmt.Errorf("index marks read at %d, past the %d checked", from, m.checked)
	}
	if m.stop >= 0 {
		n = int(min(int64(n), max(m.stop-from, 0)))
	}
	batch, err := m.marks(from, n)
	if err != nil {
		return nil, err
	}
	if len(batch) < n && m.stop < 0 && from+int64(len(batch)) >= m.checked {
		m.stop = from + int64(len(batch)) // the file is shorter than its count said
	}
	for j := range batch {
		i := from + int64(j)
		if i < m.checked {
			if m.badCut && i == m.stop-1 {
				batch[j] = m.cut
			}
			continue
		}
		k := batch[j]
		m.checked = i + 1
		if !soundMark(k, m.prevOff, snap.Ends) {
			m.cut = Mark{Cut: true, Off: m.prevOff, Time: m.prevTime}
			m.badCut, m.stop = true, i+1
			batch[j] = m.cut
			return batch[:j+1], nil
		}
		m.prevOff, m.prevTime = k.Off, k.Time
		if k.Cut {
			m.stop = i + 1 // nothing is marked after a cut
			return batch[:j+1], nil
		}
	}
	return batch, nil
}

// soundMark reports whether k can follow a mark at offsets prev in
// streams that end at ends.
func soundMark(k Mark, prev, ends [2]int64) bool {
	for s := range 2 {
		if k.Off[s]>>62 != 0 || k.Off[s] < prev[s] || k.Off[s] > ends[s] {
			return false
		}
	}
	return true
}

// Round writes what snap adds since the last round: every segment up to
// the snapshot's ends. A follower calls it again with a newer snapshot
// once the streams changed; the snapshots must come from the same
// Interleave (or FileSnapshot), each no older than the one before. It
// returns ctx's error, having written part of the round, once ctx is
// done (the client went away).
func (m *Merger) Round(ctx context.Context, w io.Writer, snap Snapshot) error {
	if snap.Marks == 0 && snap.Full {
		// No order is known: one cut at the start.
		if !m.haveCur {
			m.cur, m.haveCur = Mark{Cut: true, Time: m.start}, true
		}
	}
	if m.o.Tail > 0 && !m.tailed {
		m.tailed = true
		if err := m.setTail(ctx, snap); err != nil {
			return err
		}
	}
	for m.next < m.count(snap) {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := m.markRange(snap, m.next, int(min(m.count(snap)-m.next, markBatchRead)))
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break // the file is shorter than its count said
		}
		for _, k := range batch {
			if m.haveCur && !m.cur.Cut {
				s := m.cur.Stream
				if err := m.emit(ctx, w, s, k.Off[s], m.cur.Time); err != nil {
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
			if err := m.emit(ctx, w, s, snap.Ends[s], m.cur.Time); err != nil {
				return err
			}
		}
		return nil
	}
	if err := m.emit(ctx, w, m.cur.Stream, snap.Ends[m.cur.Stream], m.cur.Time); err != nil {
		return err
	}
	if snap.Closed {
		// Nothing more comes: what no mark covers (an index whose last
		// marks were lost with a daemon that died) follows, so no byte
		// is left out. With a whole index there is none.
		if err := m.emit(ctx, w, 1-m.cur.Stream, snap.Ends[1-m.cur.Stream], m.cur.Time); err != nil {
			return err
		}
	}
	return nil
}

// emit writes stream s from where it is to end, and moves it there.
func (m *Merger) emit(ctx context.Context, w io.Writer, s int, end int64, t time.Time) error {
	off := m.pos[s]
	if m.haveCur && !m.cur.Cut && m.cur.Stream == s {
		off = max(off, m.cur.Off[s])
	}
	for off < end {
		if err := ctx.Err(); err != nil {
			return err
		}
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
func (m *Merger) setTail(ctx context.Context, snap Snapshot) error {
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
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if k := m.src.KeptBelow(seg.s, end); k < end {
				// Kept nowhere (dropped past the cap): no newline there.
				end, last = max(k, seg.from), false
				continue
			}
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
	// Check every mark first (in order: each against the one before), so
	// the walk back goes by sound marks only.
	for m.checked < m.count(snap) {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := m.markRange(snap, m.checked, int(min(m.count(snap)-m.checked, markBatchRead)))
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
	}
	ends := snap.Ends
	n := m.count(snap)
	if n == 0 && snap.Full { // no order: stdout then stderr
		for _, seg := range []segment{{1, 0, ends[1], ends[0]}, {0, 0, ends[0], 0}} {
			if ok, err := look(seg); ok || err != nil {
				return err
			}
		}
		return nil
	}
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		from := max(n-markBatchRead, 0)
		batch, err := m.markRange(snap, from, int(n-from))
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
