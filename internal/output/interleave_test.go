package output

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// job is two streams written through an Interleave, as a job's pumps do.
type ilJob struct {
	dir      string
	out, err *Stream
	x        *Interleave
}

func newILJob(t *testing.T, maxMarks int64, opts *Options) *ilJob {
	t.Helper()
	dir := t.TempDir()
	j := &ilJob{dir: dir}
	var err error
	if j.out, err = Create(filepath.Join(dir, "j.out"), opts); err != nil {
		t.Fatal(err)
	}
	if j.err, err = Create(filepath.Join(dir, "j.err"), opts); err != nil {
		t.Fatal(err)
	}
	if j.x, err = NewInterleave(filepath.Join(dir, "j.idx"), j.out, j.err, maxMarks); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j *ilJob) close() {
	j.x.Close()
	j.out.Close()
	j.err.Close()
}

// live merges the live streams in one round.
func (j *ilJob) live(t *testing.T, o MergeOptions) string {
	t.Helper()
	m := NewMerger(Streams{j.out, j.err}, j.x.Path(), time.Time{}, o)
	defer m.Close()
	var b bytes.Buffer
	if err := m.Round(context.Background(), &b, j.x.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// files merges the files of the ended job, as a later daemon does.
func (j *ilJob) files(t *testing.T, o MergeOptions) string {
	t.Helper()
	var fs Files
	for i, n := range []string{"j.out", "j.err"} {
		if f, err := os.Open(filepath.Join(j.dir, n)); err == nil {
			defer f.Close()
			fs[i] = f
		}
	}
	m := NewMerger(fs, j.x.Path(), time.Time{}, o)
	defer m.Close()
	var b bytes.Buffer
	ends := [2]int64{j.out.Stats().Total, j.err.Stats().Total}
	if err := m.Round(context.Background(), &b, FileSnapshot(j.x.Path(), ends)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestInterleaveMergesInArrivalOrder(t *testing.T) {
	j := newILJob(t, 0, nil)
	o, e := j.x.Writer(0), j.x.Writer(1)
	var want strings.Builder
	for i := range 5 {
		fmt.Fprintf(o, "out%d\n", i)
		fmt.Fprintf(e, "err%d\n", i)
		fmt.Fprintf(&want, "out%d\nerr%d\n", i, i)
	}
	fmt.Fprint(o, "a")
	fmt.Fprint(o, "b\n") // the same stream again: no mark
	want.WriteString("ab\n")
	if got := j.live(t, MergeOptions{}); got != want.String() {
		t.Errorf("live merged:\n%q\nwant\n%q", got, want.String())
	}
	j.close()
	if fi, err := os.Stat(j.x.Path()); err != nil || fi.Size() != 11*MarkSize {
		t.Errorf("index: %v %v, want 11 marks (one per switch)", fi, err)
	}
	for _, tt := range []struct {
		name string
		o    MergeOptions
		want string
	}{
		{"merged", MergeOptions{}, want.String()},
		{"stdout", MergeOptions{Stdout: true}, "out0\nout1\nout2\nout3\nout4\nab\n"},
		{"stderr", MergeOptions{Stderr: true}, "err0\nerr1\nerr2\nerr3\nerr4\n"},
		{"tail 3", MergeOptions{Tail: 3}, "out4\nerr4\nab\n"},
		{"tail 2 of stderr", MergeOptions{Stderr: true, Tail: 2}, "err3\nerr4\n"},
		{"tail past the start", MergeOptions{Tail: 100}, want.String()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := j.files(t, tt.o); got != tt.want {
				t.Errorf("from files: %q, want %q", got, tt.want)
			}
			if got := j.live(t, tt.o); got != tt.want {
				t.Errorf("live: %q, want %q", got, tt.want)
			}
		})
	}
}

// A follower sees each round's additions once, in order.
func TestMergerFollows(t *testing.T) {
	j := newILJob(t, 0, nil)
	m := NewMerger(Streams{j.out, j.err}, j.x.Path(), time.Time{}, MergeOptions{})
	defer m.Close()
	var b bytes.Buffer
	o, e := j.x.Writer(0), j.x.Writer(1)
	fmt.Fprint(o, "1\n")
	m.Round(context.Background(), &b, j.x.Snapshot())
	fmt.Fprint(o, "2\n")
	m.Round(context.Background(), &b, j.x.Snapshot())
	fmt.Fprint(e, "3\n")
	fmt.Fprint(o, "4\n")
	m.Round(context.Background(), &b, j.x.Snapshot())
	m.Round(context.Background(), &b, j.x.Snapshot())
	fmt.Fprint(e, "5\n")
	j.close()
	m.Round(context.Background(), &b, j.x.Snapshot())
	if b.String() != "1\n2\n3\n4\n5\n" {
		t.Errorf("followed %q", b.String())
	}
}

// A full index cuts: the marked part keeps its order, the rest comes
// stdout first; no byte is lost and the file stays at its bound.
func TestInterleaveFull(t *testing.T) {
	j := newILJob(t, 4, nil)
	o, e := j.x.Writer(0), j.x.Writer(1)
	for i := range 4 {
		fmt.Fprintf(o, "o%d\n", i)
		fmt.Fprintf(e, "e%d\n", i)
	}
	j.close()
	if fi, _ := os.Stat(j.x.Path()); fi.Size() != 4*MarkSize {
		t.Errorf("index of %d bytes, want 4 marks", fi.Size())
	}
	want := "o0\ne0\no1\n" + "o2\no3\n" + "e1\ne2\ne3\n"
	if got := j.files(t, MergeOptions{}); got != want {
		t.Errorf("full index: %q, want %q", got, want)
	}
	if got := j.files(t, MergeOptions{Tail: 4}); got != "o3\ne1\ne2\ne3\n" {
		t.Errorf("tail of a full index: %q", got)
	}
}

// Without an index (a job of an older hive) the streams come one after
// the other.
func TestMergerWithoutIndex(t *testing.T) {
	j := newILJob(t, 0, nil)
	fmt.Fprint(j.out, "o1\no2\n") // not through the Interleave: no marks
	fmt.Fprint(j.err, "e1\n")
	j.close()
	os.Remove(j.x.Path())
	if got := j.files(t, MergeOptions{}); got != "o1\no2\ne1\n" {
		t.Errorf("no index: %q", got)
	}
	if got := j.files(t, MergeOptions{Tail: 2}); got != "o2\ne1\n" {
		t.Errorf("no index, tail 2: %q", got)
	}
}

func TestMergerTimestamps(t *testing.T) {
	j := newILJob(t, 0, nil)
	fmt.Fprint(j.x.Writer(0), "a\nb\n")
	fmt.Fprint(j.x.Writer(1), "c\n")
	j.close()
	got := j.files(t, MergeOptions{Timestamps: true})
	re := regexp.MustCompile(`^(\d{4}-\d\d-\d\dT[0-9:.]+Z a\n)(\d{4}-\d\d-\d\dT[0-9:.]+Z b\n)(\d{4}-\d\d-\d\dT[0-9:.]+Z c\n)$`)
	if !re.MatchString(got) {
		t.Errorf("timestamps: %q", got)
	}
}

// Past a file's cap the dropped bytes are skipped, never invented.
func TestMergerPastCap(t *testing.T) {
	j := newILJob(t, 0, &Options{FileCap: 4, RingSize: 16})
	fmt.Fprint(j.x.Writer(0), "0123456789")
	fmt.Fprint(j.x.Writer(1), "e\n")
	j.close()
	if got := j.files(t, MergeOptions{}); got != "0123e\n" {
		t.Errorf("past the cap, from files: %q", got)
	}
}

// An index that lost its last marks (the daemon died before writing
// them) still shows every byte: the marked part in order, then the rest.
func TestMergerTruncatedIndex(t *testing.T) {
	j := newILJob(t, 0, nil)
	o, e := j.x.Writer(0), j.x.Writer(1)
	fmt.Fprint(o, "o1\n")
	fmt.Fprint(e, "e1\n")
	fmt.Fprint(o, "o2\n")
	fmt.Fprint(e, "e2\n")
	j.close()
	if err := os.Truncate(j.x.Path(), 2*MarkSize); err != nil {
		t.Fatal(err)
	}
	if got := j.files(t, MergeOptions{}); got != "o1\ne1\ne2\no2\n" {
		t.Errorf("truncated index: %q, want every byte, the marked ones in order", got)
	}
}
