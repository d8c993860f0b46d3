package output

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawMark is a mark as its three words in an index file.
type rawMark [3]uint64

func outMark(o0, o1 int64) rawMark { return rawMark{uint64(o0), uint64(o1), 1} }
func errMark(o0, o1 int64) rawMark { return rawMark{uint64(o0) | 1<<63, uint64(o1), 1} }
func cutMark(o0, o1 int64) rawMark { return rawMark{uint64(o0) | 1<<62, uint64(o1), 1} }

// endedJob writes the files of an ended job: its two streams and an
// index file of the given marks (nil: no index file).
func endedJob(t *testing.T, out, errs string, marks []rawMark) (Files, string, [2]int64) {
	t.Helper()
	dir := t.TempDir()
	var fs Files
	for i, body := range []string{out, errs} {
		p := filepath.Join(dir, []string{"j.out", "j.err"}[i])
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		fs[i] = f
	}
	idx := filepath.Join(dir, "j.idx")
	if marks != nil {
		var b []byte
		for _, k := range marks {
			for _, w := range k {
				b = binary.LittleEndian.AppendUint64(b, w)
			}
		}
		if err := os.WriteFile(idx, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fs, idx, [2]int64{int64(len(out)), int64(len(errs))}
}

// mergeWithin merges src in one round, failing the test if that takes
// more than a generous bound: a round that spins on a planted mark
// would not end for years.
func mergeWithin(t *testing.T, src Source, idx string, snap Snapshot, o MergeOptions) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		m := NewMerger(src, idx, time.Time{}, o)
		defer m.Close()
		var b bytes.Buffer
		err := m.Round(ctx, &b, snap)
		done <- result{b.String(), err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Round: %v", r.err)
		}
		return r.s
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Fatal("Round did not end: it walks a range no source keeps")
		return ""
	}
}

// TestMergerBadMarks: an index file with marks no Interleave writes (a
// corrupt or planted file) is merged as if it were cut at the first bad
// mark: every byte shown once, in order as far as the sound marks tell,
// and quickly, whatever offsets the bad mark claims.
func TestMergerBadMarks(t *testing.T) {
	const out, errs = "a\nb\n", "E\n"
	good := []rawMark{outMark(0, 0), errMark(4, 0)}
	for _, tt := range []struct {
		name string
		bad  rawMark
	}{
		{"an offset near 2^62", outMark(1<<62-1, 2)},
		{"past the stream's end", outMark(100, 2)},
		{"lower than the mark before", outMark(2, 2)},
		{"a reserved bit of stderr's word", rawMark{4, 1<<63 | 1, 1}},
		{"stderr's offset near 2^62", errMark(4, 1<<62-1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs, idx, ends := endedJob(t, out, errs, append(append([]rawMark{}, good...), tt.bad, outMark(4, 2)))
			snap := FileSnapshot(idx, ends)
			for _, c := range []struct {
				o    MergeOptions
				want string
			}{
				{MergeOptions{}, "a\nb\nE\n"},
				{MergeOptions{Tail: 1}, "E\n"},
				{MergeOptions{Tail: 2}, "b\nE\n"},
				{MergeOptions{Tail: 3}, "a\nb\nE\n"},
				{MergeOptions{Stdout: true, Tail: 5}, "a\nb\n"},
			} {
				if got := mergeWithin(t, fs, idx, snap, c.o); got != c.want {
					t.Errorf("%+v: %q, want %q", c.o, got, c.want)
				}
			}
		})
	}
	t.Run("marks after a cut", func(t *testing.T) {
		// A cut is the last mark an Interleave writes; one after it is
		// not believed (here it would put stderr first).
		fs, idx, ends := endedJob(t, out, errs, []rawMark{outMark(0, 0), cutMark(2, 0), errMark(2, 0), outMark(2, 2)})
		snap := FileSnapshot(idx, ends)
		for _, tail := range []int{0, 3} {
			if got := mergeWithin(t, fs, idx, snap, MergeOptions{Tail: tail}); got != "a\nb\nE\n" {
				t.Errorf("tail %d: %q", tail, got)
			}
		}
	})
}

// countingSource counts the reads of a Source.
type countingSource struct {
	Source
	reads int
}

func (c *countingSource) Read(s int, off int64, max int) (Chunk, error) {
	c.reads++
	return c.Source.Read(s, off, max)
}

// TestMergerTailSkipsDropped: the tail of an ended job whose last GiB
// was dropped past the file cap is found by jumping over the dropped
// range, not by reading it block by block (16384 reads of 64 KiB).
func TestMergerTailSkipsDropped(t *testing.T) {
	fs, idx, ends := endedJob(t, "1\n2\n3\n4\n", "", []rawMark{outMark(0, 0)})
	ends[0] += 1 << 30 // counted, not in the file
	src := &countingSource{Source: fs}
	// The dropped bytes end the output without a newline: they are its
	// last line, and are not shown.
	got := mergeWithin(t, src, idx, FileSnapshot(idx, ends), MergeOptions{Tail: 3})
	if got != "3\n4\n" {
		t.Errorf("tail 3: %q, want the file's last two lines", got)
	}
	if src.reads > 8 {
		t.Errorf("%d reads for a tail past 1 GiB dropped, want a few", src.reads)
	}
}

// TestStreamKeptBelow: what a stream keeps is its file up to the cap and
// its ring; between them nothing.
func TestStreamKeptBelow(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "s.out"), &Options{RingSize: 1 << 10, FileCap: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write([]byte(strings.Repeat("x", 10<<10)))
	total := s.Stats().Total
	for _, c := range []struct{ end, want int64 }{
		{50, 50},                               // in the file
		{100, 100},                             // the file's end
		{5000, 100},                            // dropped, gone from the ring
		{total - 1<<10, 100},                   // the ring's start
		{total - 1<<10 + 1, total - 1<<10 + 1}, // in the ring
		{total, total},
		{total + 10, total}, // not written yet
	} {
		if got := s.KeptBelow(c.end); got != c.want {
			t.Errorf("KeptBelow(%d) = %d, want %d", c.end, got, c.want)
		}
	}
}

// TestMergerStopsWithCtx: a round whose client went away (its context is
// done) stops with the context's error.
func TestMergerStopsWithCtx(t *testing.T) {
	fs, idx, ends := endedJob(t, "1\n2\n", "e\n", []rawMark{outMark(0, 0), errMark(4, 0)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tail := range []int{0, 1} {
		m := NewMerger(fs, idx, time.Time{}, MergeOptions{Tail: tail})
		var b bytes.Buffer
		if err := m.Round(ctx, &b, FileSnapshot(idx, ends)); !errors.Is(err, context.Canceled) {
			t.Errorf("tail %d: Round after the client went: %v, %q; want context.Canceled", tail, err, b.String())
		}
		m.Close()
	}
}

// BenchmarkTailPastDropped: `hive logs --tail 3` of an ended job whose
// file holds 4 KiB and whose last GiB was dropped past the cap, against
// the baseline, in the same run, of the same tail with nothing dropped.
// Metric: ratio (dropped over baseline; 1 means the dropped GiB costs
// nothing).
func BenchmarkTailPastDropped(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "j.out")
	if err := os.WriteFile(p, bytes.Repeat([]byte("a line of output\n"), 4<<10/17), 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	idx := filepath.Join(dir, "j.idx") // none: stdout, then stderr
	tail := func(ends [2]int64) time.Duration {
		t0 := time.Now()
		m := NewMerger(Files{f, nil}, idx, time.Time{}, MergeOptions{Tail: 3})
		if err := m.Round(context.Background(), io.Discard, FileSnapshot(idx, ends)); err != nil {
			b.Fatal(err)
		}
		m.Close()
		return time.Since(t0)
	}
	var tDropped, tBase time.Duration
	for b.Loop() {
		tDropped += tail([2]int64{fi.Size() + 1<<30, 0})
		tBase += tail([2]int64{fi.Size(), 0})
	}
	b.ReportMetric(float64(tDropped)/float64(tBase), "ratio")
}
