package job

import (
	"os"
	"testing"
	"time"
)

// An output pipe works as a job's: what the job writes to the write end
// (blocking, as the job gets it) is read from the read end through the
// runtime's poller (a read with a deadline waits there), and the read
// end ends with EOF once the write end is closed.
func TestOutputPipe(t *testing.T) {
	r, w, err := outputPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatalf("the read end is not in the poller: %v", err)
	}
	buf := make([]byte, 8)
	if _, err := r.Read(buf); !os.IsTimeout(err) {
		t.Fatalf("read of an empty pipe = %v, want a timeout", err)
	}
	if err := w.SetWriteDeadline(time.Now()); err == nil {
		t.Error("the write end is in the poller")
	}
	r.SetReadDeadline(time.Time{})
	if _, err := w.Write([]byte("out\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "out\n" {
		t.Fatalf("read %q, %v; want \"out\\n\"", buf[:n], err)
	}
	if n, err := r.Read(buf); n != 0 || err == nil {
		t.Errorf("read after the write end closed = %d, %v; want EOF", n, err)
	}
}

// BenchmarkOutputPipe makes a job's two output pipes as newCmd does and
// uses their ends as a start does (the write ends' descriptors taken for
// the child, then closed; the read ends closed at the end), with
// outputPipe and, taking turns, with os.Pipe. Metrics: pipe-ns, ospipe-ns
// (the means) and ratio (pipe / ospipe).
func BenchmarkOutputPipe(b *testing.B) {
	use := func(mk func() (*os.File, *os.File, error)) time.Duration {
		t0 := time.Now()
		var rs [2]*os.File
		for k := range rs {
			r, w, err := mk()
			if err != nil {
				b.Fatal(err)
			}
			_ = w.Fd() // as os.StartProcess takes it for the child
			w.Close()
			rs[k] = r
		}
		for _, r := range rs {
			r.Close()
		}
		return time.Since(t0)
	}
	var mine, theirs time.Duration
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			mine += use(outputPipe)
			theirs += use(os.Pipe)
		} else {
			theirs += use(os.Pipe)
			mine += use(outputPipe)
		}
	}
	b.ReportMetric(float64(mine.Nanoseconds())/float64(b.N), "pipe-ns")
	b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N), "ospipe-ns")
	b.ReportMetric(float64(mine)/float64(theirs), "ratio")
}
