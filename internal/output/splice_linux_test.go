package output

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// SpliceFrom moves what a pipe holds into the file and counts it as
// Write does; an empty pipe is EAGAIN, its end 0; past the file's cap it
// says ErrNoSplice, moving nothing, and Write counts the rest dropped. A
// stream that keeps a ring takes nothing so.
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
	if n, err := s.SpliceFrom(r, 1<<20); n != 0 || !errors.Is(err, ErrNoSplice) {
		t.Fatalf("past the cap: %d %v, want ErrNoSplice", n, err)
	}
	rest := make([]byte, 64)
	n, _ := unix.Read(r, rest)
	s.Write(rest[:n])
	w.Close()
	if st := s.Stats(); st.Total != 21 || st.InFile != 10 || st.Dropped != 11 {
		t.Errorf("counts: %+v, want 21 in all, 10 in the file, 11 dropped", st)
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
