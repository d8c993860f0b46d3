package output

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SpliceFrom moves what a pipe holds into the file and counts it as
// Write does; an empty pipe is EAGAIN, its end 0; past the file's cap it
// moves the bytes to /dev/null and counts them dropped, as Write would.
// A stream that keeps a ring takes nothing so.
func TestSpliceFrom(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := p[0], os.NewFile(uintptr(p[1]), "w")
	defer unix.Close(r)
	path := filepath.Join(t.TempDir(), "out")
	s, err := Create(path, &Options{NoRing: true, FileCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.SpliceFrom(r, 1<<20); n != 0 || !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("an empty pipe: %d %v, want EAGAIN", n, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file before the first byte: %v", err)
	}
	changed := s.Changed()
	w.Write([]byte("hello "))
	if n, err := s.SpliceFrom(r, 1<<20); n != 6 || err != nil {
		t.Fatalf("6 bytes: %d %v", n, err)
	}
	select {
	case <-changed:
	default:
		t.Error("a splice woke no waiter")
	}
	w.Write([]byte("world, and more"))
	if n, err := s.SpliceFrom(r, 1<<20); n != 4 || err != nil {
		t.Fatalf("up to the cap of 10: %d %v, want 4", n, err)
	}
	if n, err := s.SpliceFrom(r, 1<<20); n != 11 || err != nil {
		t.Fatalf("past the cap: %d %v, want the 11 bytes left, dropped", n, err)
	}
	if k, err := unix.IoctlGetInt(r, unix.TIOCINQ); err != nil || k != 0 {
		t.Errorf("the pipe holds %d bytes (%v) past the cap: want them taken", k, err)
	}
	w.Write([]byte("!"))
	w.Close()
	if n, err := s.SpliceFrom(r, 1<<20); n != 1 || err != nil {
		t.Fatalf("a byte past the cap: %d %v", n, err)
	}
	if n, err := s.SpliceFrom(r, 1<<20); n != 0 || err != nil {
		t.Fatalf("the pipe's end past the cap: %d %v, want 0, nil", n, err)
	}
	if st := s.Stats(); st.Total != 22 || st.InFile != 10 || st.Dropped != 12 {
		t.Errorf("counts: %+v, want 22 in all, 10 in the file, 12 dropped", st)
	}
	s.Close()
	if b, _ := os.ReadFile(path); string(b) != "hello worl" {
		t.Errorf("the file: %q", b)
	}

	// Its end; and a stream with a ring.
	var q [2]int
	unix.Pipe2(q[:], unix.O_NONBLOCK|unix.O_CLOEXEC)
	unix.Close(q[1])
	defer unix.Close(q[0])
	path2 := filepath.Join(t.TempDir(), "out2")
	s2, _ := Create(path2, &Options{NoRing: true})
	if n, err := s2.SpliceFrom(q[0], 1<<20); n != 0 || err != nil {
		t.Errorf("the pipe's end: %d %v, want 0, nil", n, err)
	}
	if _, err := os.Lstat(path2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty stream has a file: %v", err)
	}
	s3, _ := Create(filepath.Join(t.TempDir(), "out3"), nil)
	if n, err := s3.SpliceFrom(q[0], 1<<20); n != 0 || !errors.Is(err, ErrNoSplice) {
		t.Errorf("a stream with a ring: %d %v, want ErrNoSplice", n, err)
	}
}

// BenchmarkPastCap drains a pipe that a writer keeps full, into a stream
// already at its file's cap: past the cap, SpliceFrom moves the bytes to
// /dev/null, never into the process; the read-and-write way (Write, what
// it did before) copies each byte in to drop it. One op is 64 MiB drained
// each way, in turn; "cpu-splice/read" is the ratio of the CPU time the
// draining thread took (RUSAGE_THREAD), the cost a daemon pumping a flood
// past its cap pays (the writer's is the job's).
func BenchmarkPastCap(b *testing.B) {
	const chunk, total = 1 << 20, 64 << 20
	threadCPU := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	drain := func(splice bool) time.Duration {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
		r, w := p[0], os.NewFile(uintptr(p[1]), "w")
		defer unix.Close(r)
		unix.FcntlInt(uintptr(r), unix.F_SETPIPE_SZ, 1<<20) // as a pump tunes a pouring job's pipe
		s, err := Create(filepath.Join(b.TempDir(), "out"), &Options{NoRing: true, FileCap: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		s.Write([]byte("x")) // at the cap
		go func() {
			buf := make([]byte, chunk)
			for n := 0; n < total; n += chunk {
				w.Write(buf)
			}
			w.Close()
		}()
		buf := make([]byte, chunk)
		c0 := threadCPU()
		for {
			var n int
			var err error
			if splice {
				n, err = s.SpliceFrom(r, chunk)
			} else if n, err = unix.Read(r, buf); n > 0 {
				s.Write(buf[:n])
			}
			if errors.Is(err, unix.EAGAIN) {
				// Wait for more, as a pump waits in the poller.
				unix.Poll([]unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}, -1)
				continue
			}
			if n == 0 || err != nil {
				break
			}
		}
		c := threadCPU() - c0
		if st := s.Stats(); st.Dropped != total {
			b.Fatalf("dropped %d, want %d", st.Dropped, total)
		}
		return c
	}
	var sp, rd time.Duration
	b.SetBytes(2 * total)
	for b.Loop() {
		sp += drain(true)
		rd += drain(false)
	}
	b.ReportMetric(float64(sp)/float64(rd), "cpu-splice/read")
}
