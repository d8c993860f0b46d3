package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

// A job's log is its two streams merged in arrival order, the order its
// interleave index (output.Interleave) recorded. A position in the log
// is a merged offset: the bytes of both streams before it, so the
// segment of index mark k starts at k.Off[0]+k.Off[1]. A reader asks
// from where the last answer ended; nothing is kept between requests.

// Segment is a part of one stream in a job's log.
type Segment struct {
	// Stream is 0 for stdout, 1 for stderr.
	Stream int `json:"s"`
	// At is when the segment's first byte arrived (Unix ms, to within
	// output.MarkEvery).
	At   int64  `json:"t"`
	Data string `json:"data"`
}

// Log is a range of a job's log.
type Log struct {
	// Offset is the merged offset of the first segment's first byte;
	// Next where to ask next; Total the bytes both streams have had.
	Offset int64 `json:"offset"`
	Next   int64 `json:"next"`
	Total  int64 `json:"total"`
	// Skipped counts bytes of the range kept nowhere (past the file cap,
	// or neither in memory nor in the file).
	Skipped int64 `json:"skipped,omitempty"`
	EOF     bool  `json:"eof"`
	// Line is the number of lines (newlines) before Offset when asked
	// for (?lines=1); -1 when not known (bytes before it are not kept,
	// or too many to count).
	Line     int64     `json:"line,omitempty"`
	Segments []Segment `json:"segments"`
}

// logSource is what a merged read of a job reads: its streams (live, or
// its files) and the snapshot of its index.
type logSource struct {
	src   output.Source
	snap  output.Snapshot
	idx   string
	start time.Time
	files output.Files
}

func (l *logSource) Close() {
	for _, f := range l.files {
		if f != nil {
			f.Close()
		}
	}
}

// openLog opens the log of the job in: the live streams while this
// daemon holds the job, else its files (never through a link).
func (d *Dashboard) openLog(in view.Job) *logSource {
	l := &logSource{idx: in.IndexPath, start: in.Started}
	if j, err := d.o.Service.LiveJob(in.ID); err == nil {
		out, errs := j.Stdout(), j.Stderr()
		if out != nil && errs != nil {
			l.src = output.Streams{out, errs}
			if x := j.Index(); x != nil {
				l.snap, l.idx = x.Snapshot(), x.Path()
			} else {
				// A held job's holder writes the index file: the ends first.
				a, b := out.Stats(), errs.Stats()
				l.snap = output.LiveFileSnapshot(in.IndexPath, [2]int64{a.Total, b.Total}, a.Closed && b.Closed)
			}
			return l
		}
	}
	for i, p := range []string{in.StdoutPath, in.StderrPath} {
		if p == "" {
			continue
		}
		if f, err := paths.OpenFile(p, os.O_RDONLY); err == nil {
			l.files[i] = f
		}
	}
	l.src = l.files
	l.snap = output.FileSnapshot(in.IndexPath, [2]int64{in.StdoutBytes, in.StderrBytes})
	l.snap.Closed = service.JobEnded(in)
	return l
}

// piece is a range [from, to) of stream s that begins at merged offset
// at and arrived at t.
type piece struct {
	s        int
	from, to int64
	at       int64
	t        time.Time
	other    int64 // the other stream's offset at the piece's start
}

// pieces walks a log's pieces in order from a merged offset.
type pieces struct {
	l     *logSource
	idx   *os.File
	n     int64 // marks to go by
	k     int64 // the next mark to read
	batch []output.Mark
	queue []piece
	ends  [2]int64
}

func newPieces(l *logSource) *pieces {
	p := &pieces{l: l, ends: l.snap.Ends, n: min(l.snap.Marks, output.DefaultMaxMarks)}
	if p.n > 0 {
		f, err := paths.OpenFile(l.idx, os.O_RDONLY)
		if err != nil {
			p.n = 0
		} else {
			p.idx = f
		}
	}
	return p
}

func (p *pieces) Close() {
	if p.idx != nil {
		p.idx.Close()
	}
}

// mark reads mark i (nil past the file's end).
func (p *pieces) mark(i int64) *output.Mark {
	if i >= p.n || p.idx == nil {
		return nil
	}
	ms, err := output.ReadMarks(p.idx, i, 1)
	if err != nil || len(ms) == 0 {
		return nil
	}
	return &ms[0]
}

// sound reports whether mark m can follow offsets prev.
func (p *pieces) sound(m *output.Mark, prev [2]int64) bool {
	for s := range 2 {
		if m.Off[s] < prev[s] || m.Off[s] > p.ends[s] {
			return false
		}
	}
	return true
}

// cut queues the rest of the log from offsets off, where its order is
// not known: stdout, then stderr.
func (p *pieces) cut(off [2]int64, t time.Time) {
	p.n = p.k // no mark is read after a cut
	at := off[0] + off[1]
	p.queue = append(p.queue,
		piece{s: 0, from: off[0], to: p.ends[0], at: at, t: t, other: off[1]},
		piece{s: 1, from: off[1], to: p.ends[1], at: at + p.ends[0] - off[0], t: t, other: p.ends[0]})
}

// seek readies the walk at merged offset m: from the last mark that
// starts at or before it (found by halving: merged offsets of sound
// marks only grow). A walk reads a cut where a mark does not follow the
// one before (a corrupt or planted index); seek steps back over such
// marks, so reads from any offset agree with a read of the whole where
// the index goes wrong once.
func (p *pieces) seek(m int64) {
	lo, hi := int64(0), p.n-1
	found := int64(-1)
	for lo <= hi {
		mid := (lo + hi) / 2
		k := p.mark(mid)
		if k == nil {
			hi = mid - 1
			continue
		}
		if k.Off[0]+k.Off[1] <= m {
			found, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	// A mark that does not follow the one before it (or follows a cut)
	// is where a walk from the start reads a cut: start before it.
	for found > 0 {
		k, prev := p.mark(found), p.mark(found-1)
		if k == nil || prev == nil || prev.Cut || !p.sound(k, prev.Off) {
			found--
			continue
		}
		break
	}
	if found < 0 {
		p.k = 0
		p.cut([2]int64{}, p.l.start)
		return
	}
	p.k = found
}

// next returns the next piece, or false at the log's end.
func (p *pieces) next() (piece, bool) {
	if len(p.queue) > 0 {
		x := p.queue[0]
		p.queue = p.queue[1:]
		return x, true
	}
	if p.k >= p.n {
		return piece{}, false
	}
	k := p.mark(p.k)
	if k == nil || !p.sound(k, [2]int64{}) {
		p.cut([2]int64{}, p.l.start)
		return p.next()
	}
	p.k++
	if k.Cut {
		p.cut(k.Off, k.Time)
		return p.next()
	}
	s := k.Stream
	to := p.ends[s]
	if n := p.mark(p.k); n != nil {
		if !p.sound(n, k.Off) {
			// A bad mark (a corrupt or planted index): the order from k
			// on is not known.
			p.k--
			p.cut(k.Off, k.Time)
			return p.next()
		}
		to = n.Off[s]
	}
	return piece{s: s, from: k.Off[s], to: to, at: k.Off[0] + k.Off[1], t: k.Time, other: k.Off[1-s]}, true
}

// Limits of GET /api/jobs/{id}/log.
const (
	defaultLogRange = 256 << 10
	maxLogRange     = 1 << 20
	// maxLineCount bounds the bytes read to count the lines before a
	// range.
	maxLineCount = 64 << 20
)

// mergedLog is GET /api/jobs/{id}/log: a range of the job's log, its two
// streams merged in arrival order, as segments.
func (d *Dashboard) mergedLog(r *http.Request) (any, error) {
	v := r.URL.Query()
	limit := defaultLogRange
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLogRange {
			return nil, badRequest("limit %q: want a whole number of bytes from 1 to %d", s, maxLogRange)
		}
		limit = n
	}
	var off int64
	if s := v.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, badRequest("offset %q: want a whole number of bytes of the merged log (negative: from the end)", s)
		}
		off = n
	}
	lines := v.Get("lines") == "1"
	in, err := d.o.Service.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	l := d.openLog(in)
	defer l.Close()
	return readLog(l, off, limit, lines)
}

// readLog reads up to limit bytes of l's log from merged offset off
// (negative: from the end).
func readLog(l *logSource, off int64, limit int, lines bool) (Log, error) {
	total := l.snap.Ends[0] + l.snap.Ends[1]
	if off < 0 {
		off = max(0, total+off)
	}
	off = min(off, total)
	out := Log{Offset: off, Next: off, Total: total, Segments: []Segment{}}
	p := newPieces(l)
	defer p.Close()
	p.seek(off)
	first := true
	left := limit
	for left > 0 {
		x, ok := p.next()
		if !ok {
			break
		}
		end := x.at + x.to - x.from
		if end <= off || x.to <= x.from {
			continue
		}
		at := x.from + (off - x.at)
		if first && lines {
			var o [2]int64
			o[x.s], o[1-x.s] = at, x.other
			out.Line = countLines(l.src, o)
		}
		first = false
		for at < x.to && left > 0 {
			c, err := l.src.Read(x.s, at, min(int(x.to-at), left))
			if err != nil {
				return out, fmt.Errorf("read %s: %w", streamName(x.s), err)
			}
			if c.Next <= at { // kept nowhere (past the file's cap)
				out.Skipped += x.to - at
				at = x.to
				break
			}
			if c.Offset > at {
				out.Skipped += min(c.Offset, x.to) - at
			}
			data := c.Data
			if hi := c.Offset + int64(len(data)); hi > x.to {
				data = data[:max(0, x.to-c.Offset)]
			}
			if len(data) > 0 {
				if n := len(out.Segments); n > 0 && out.Segments[n-1].Stream == x.s && at == c.Offset && out.Segments[n-1].At == x.t.UnixMilli() {
					out.Segments[n-1].Data += string(data)
				} else {
					out.Segments = append(out.Segments, Segment{Stream: x.s, At: x.t.UnixMilli(), Data: string(data)})
				}
				left -= len(data)
			}
			at = min(c.Next, x.to)
		}
		off = x.at + (at - x.from)
	}
	// A range that stops within a piece never splits a UTF-8 character.
	if n := len(out.Segments); n > 0 && off < total {
		seg := &out.Segments[n-1]
		cut, next := text([]byte(seg.Data), off, false)
		seg.Data, off = cut, next
		if seg.Data == "" {
			out.Segments = out.Segments[:n-1]
		}
	}
	out.Next = off
	out.EOF = l.snap.Closed && off >= total
	return out, nil
}

func streamName(s int) string {
	if s == 1 {
		return "stderr"
	}
	return "stdout"
}

// countLines counts the newlines of each stream s before o[s]: the lines
// of the merged log before the point where the streams are at o. -1 if
// some of those bytes are kept nowhere, or they are more than
// maxLineCount.
func countLines(src output.Source, o [2]int64) int64 {
	if o[0]+o[1] > maxLineCount {
		return -1
	}
	var n int64
	for s := range 2 {
		for at := int64(0); at < o[s]; {
			c, err := src.Read(s, at, int(min(o[s]-at, 1<<20)))
			if err != nil || c.Next <= at || c.Offset > at {
				return -1
			}
			data := c.Data
			if int64(len(data)) > o[s]-at {
				data = data[:o[s]-at]
			}
			n += int64(bytes.Count(data, []byte{'\n'}))
			at = c.Next
		}
	}
	return n
}

// raw is GET /api/jobs/{id}/raw: the job's output as it was written,
// as plain text (never HTML): ?stream=stdout or stderr, else both merged
// in arrival order.
func (d *Dashboard) raw(w http.ResponseWriter, r *http.Request) {
	var o output.MergeOptions
	switch s := r.URL.Query().Get("stream"); s {
	case "":
	case "stdout":
		o.Stdout = true
	case "stderr":
		o.Stderr = true
	default:
		answer(w, nil, badRequest("stream %q: want stdout or stderr (none: both merged)", s))
		return
	}
	in, err := d.o.Service.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		answer(w, nil, err)
		return
	}
	l := d.openLog(in)
	defer l.Close()
	m := output.NewMerger(l.src, l.idx, in.Started, o)
	defer m.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", "inline")
	rc := http.NewResponseController(w)
	if err := m.Round(r.Context(), deadlineWriter{w, rc, d.o.WriteTimeout}, l.snap); err != nil && !errors.Is(err, r.Context().Err()) {
		d.log.Debug("dashboard: raw output", "job", in.ID, "err", err)
	}
}

// deadlineWriter gives each write of a long answer its own deadline.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
	d  time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.w.Write(p)
}
