package output

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
)

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return b
}

func readAll(t *testing.T, s *Stream, off int64, chunk int) ([]byte, int64) {
	t.Helper()
	var out []byte
	var skipped int64
	for {
		c, err := s.Read(off, chunk)
		if err != nil {
			t.Fatal(err)
		}
		skipped += c.Skipped
		out = append(out, c.Data...)
		if len(c.Data) == 0 {
			return out, skipped
		}
		off = c.Next
	}
}

func TestRingFileAndOffsets(t *testing.T) {
	tests := []struct {
		name    string
		ring    int
		cap     int64
		writes  []int
		dropped int64
		skipped int64 // bytes a read from 0 cannot get back
	}{
		{"fits in ring", 64, 1000, []int{10, 20}, 0, 0},
		{"wraps, file has all", 64, 1000, []int{50, 50, 50}, 0, 0},
		{"one write bigger than the ring", 16, 1000, []int{100}, 0, 0},
		{"past the cap, ring has the tail", 64, 100, []int{80, 80, 80}, 140, 76},
		{"memory only", 32, 0, []int{100}, 0, 68},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.out")
			if tt.cap == 0 {
				path = ""
			}
			s, err := Create(path, &Options{RingSize: tt.ring, FileCap: tt.cap})
			if err != nil {
				t.Fatal(err)
			}
			var all []byte
			for i, n := range tt.writes {
				p := fill(n, byte(i*7))
				all = append(all, p...)
				if w, _ := s.Write(p); w != n {
					t.Fatalf("wrote %d of %d", w, n)
				}
			}
			st := s.Stats()
			if st.Total != int64(len(all)) || st.Dropped != tt.dropped {
				t.Fatalf("stats %+v, want total %d dropped %d", st, len(all), tt.dropped)
			}
			got, skipped := readAll(t, s, 0, 7)
			if skipped != tt.skipped {
				t.Errorf("skipped %d, want %d", skipped, tt.skipped)
			}
			// What comes back is the stream minus exactly the skipped bytes.
			var want []byte
			if tt.skipped > 0 {
				kept := int64(len(all)) - int64(tt.ring)
				inFile := min(tt.cap, int64(len(all)))
				if path == "" {
					inFile = 0
				}
				want = append(append(want, all[:inFile]...), all[max(inFile, kept):]...)
			} else {
				want = all
			}
			if !bytes.Equal(got, want) {
				t.Errorf("read back %d bytes, want %d", len(got), len(want))
			}
			if tail := s.Tail(10); !bytes.Equal(tail, all[len(all)-10:]) {
				t.Errorf("tail %v", tail)
			}
			s.Close()
			c, _ := s.Read(st.Total, 10)
			if !c.EOF || c.Next != st.Total {
				t.Errorf("read at end after close: %+v", c)
			}
			if path != "" {
				b, _ := os.ReadFile(path)
				if int64(len(b)) != min(tt.cap, int64(len(all))) || !bytes.Equal(b, all[:len(b)]) {
					t.Errorf("file has %d bytes", len(b))
				}
			}
		})
	}
}

func TestReleaseKeepsTailAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.out")
	s, _ := Create(path, &Options{RingSize: 1 << 20})
	all := fill(200<<10, 3)
	s.Write(all)
	s.Release() // no-op while open
	s.Close()
	s.Release()
	got, skipped := readAll(t, s, 0, 50<<10)
	if skipped != 0 || !bytes.Equal(got, all) {
		t.Fatalf("after release: %d bytes, %d skipped", len(got), skipped)
	}
	if !bytes.Equal(s.Tail(4096), all[len(all)-4096:]) {
		t.Error("tail after release")
	}
}

func TestChangedWakesWaiters(t *testing.T) {
	s, _ := Create("", nil)
	ch := s.Changed()
	select {
	case <-ch:
		t.Fatal("changed before a write")
	default:
	}
	s.Write([]byte("x"))
	<-ch // closed by the write
	ch = s.Changed()
	s.Close()
	<-ch // closed by Close
	select {
	case <-s.Changed(): // nothing more can happen: ready at once
	default:
		t.Error("Changed after Close blocks")
	}
	if _, err := s.Write([]byte("y")); err != ErrClosed {
		t.Errorf("write after close: %v", err)
	}
}

func TestNoFileUntilFirstWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.out")
	os.WriteFile(path, []byte("stale"), 0o600)
	s, _ := Create(path, nil)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stale file kept: %v", err)
	}
	s.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("empty stream made a file: %v", err)
	}
	if _, err := s.Read(-1, 1); err == nil {
		t.Error("negative offset accepted")
	}
}

// Bytes the file never got stay readable after Release.
// A released stream keeps what its file lacks; a compacted one keeps at
// most compactMax of it: bytes past the cap of a job that ended long ago
// cost little memory, and the ones no longer held are skipped in reads
// and counted.
func TestReleaseKeepsBytesPastTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.out")
	s, _ := Create(path, &Options{RingSize: 1 << 20, FileCap: 1000})
	all := fill(100<<10, 5)
	s.Write(all)
	s.Close()
	s.Release()
	got, skipped := readAll(t, s, 0, 7000)
	if skipped != 0 || !bytes.Equal(got, all) {
		t.Fatalf("after release: %d bytes, %d skipped, want all %d", len(got), skipped, len(all))
	}
	m, _ := Create("", &Options{RingSize: 1 << 20})
	big := fill(1<<20, 6)
	m.Write(big)
	m.Close()
	m.Release()
	if got, _ := readAll(t, m, 0, 7000); !bytes.Equal(got, big) {
		t.Fatalf("memory-only stream lost bytes at release: %d of %d", len(got), len(big))
	}
	m.Compact()
	got, skipped = readAll(t, m, 0, 7000)
	if !bytes.Equal(got, big[len(big)-compactMax:]) || skipped != int64(len(big)-compactMax) {
		t.Fatalf("memory-only stream after Compact: %d bytes and %d skipped, want the last %d and %d skipped",
			len(got), skipped, compactMax, len(big)-compactMax)
	}
	if cap(m.ring) > compactMax+1 {
		t.Errorf("compacted ring holds %d bytes of memory, want at most %d", cap(m.ring), compactMax+1)
	}
}

// Release of a stream whose ring holds only bytes the file lacks keeps
// that ring as it is, rather than copying it.
func TestReleasePastTheCapKeepsTheRing(t *testing.T) {
	const size = 1 << 20
	s, _ := Create(filepath.Join(t.TempDir(), "s.out"), &Options{RingSize: size, FileCap: 1000})
	all := fill(3*size, 9)
	s.Write(all)
	s.Close()
	ring := &s.ring[0]
	s.Release()
	if &s.ring[0] != ring {
		t.Errorf("Release copied a ring it could not shrink")
	}
	if got, skipped := readAll(t, s, int64(2*size), 7000); skipped != 0 || !bytes.Equal(got, all[2*size:]) {
		t.Errorf("after release: %d bytes, %d skipped, want the last %d", len(got), skipped, size)
	}
}

// A symlink planted at a stream's path is never written or read through:
// the bytes stay countable and readable from memory, the file it points
// at keeps its content, and reads of released bytes fail instead of
// returning that file's content.
func TestSymlinkAtPathNotFollowed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	target := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(target, []byte("precious"), 0o644)
	path := filepath.Join(t.TempDir(), "s.out")

	s, _ := Create(path, nil)
	hivetest.Symlink(t, target, path) // after Create removed what was there
	s.Write([]byte("hello"))
	if err := s.Err(); !errors.Is(err, paths.ErrInsecure) {
		t.Errorf("write through a symlink: Err = %v, want a refusal", err)
	}
	if st := s.Stats(); st.Total != 5 || st.InFile != 0 || st.Dropped != 5 {
		t.Errorf("stats %+v: want 5 written, 0 in the file, 5 dropped", st)
	}
	if got := s.Tail(5); string(got) != "hello" {
		t.Errorf("tail %q, want hello from memory", got)
	}
	s.Close()

	os.Remove(path)
	r, _ := Create(path, &Options{RingSize: 1 << 10})
	all := fill(64<<10, 3)
	r.Write(all)
	r.Close()
	r.Release()
	os.Remove(path)
	hivetest.Symlink(t, target, path)
	if c, err := r.Read(0, 100); !errors.Is(err, paths.ErrInsecure) {
		t.Errorf("read of released bytes through a symlink: %q, %v; want a refusal", c.Data, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the symlink's target now holds %q", b)
	}
}

func TestFileIsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes on Windows")
	}
	path := filepath.Join(t.TempDir(), "s.out")
	s, _ := Create(path, nil)
	s.Write([]byte("x"))
	s.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("output file %v %v, want mode 0600", fi.Mode(), err)
	}
}

// Tail asked for more than the ring holds gives the ring's bytes, the
// last ones: not older bytes from the file that stop short of the end.
func TestTailLongerThanRing(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "s.out"), &Options{RingSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := fill(100, 3)
	s.Write(data)
	if got := s.Tail(50); !bytes.Equal(got, data[84:]) {
		t.Errorf("Tail(50) = %v, want the last 16 bytes %v", got, data[84:])
	}
	if got := s.Tail(5); !bytes.Equal(got, data[95:]) {
		t.Errorf("Tail(5) = %v, want %v", got, data[95:])
	}
}

// A ring past growLimit takes its full size at once and wraps in place:
// one allocation, not a doubling series plus a copy.
func TestBigRingGrowsOnce(t *testing.T) {
	const size = 1 << 20
	s, err := Create(filepath.Join(t.TempDir(), "s.out"), &Options{RingSize: size})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := fill(3*size, 7)
	var backing *byte
	for off := 0; off < len(all); off += 40 << 10 {
		s.Write(all[off:min(off+40<<10, len(all))])
		if off > growLimit {
			if cap(s.ring) != size {
				t.Fatalf("after %d bytes: ring capacity %d, want %d", off, cap(s.ring), size)
			}
			if backing == nil {
				backing = &s.ring[:1][0]
			} else if &s.ring[:1][0] != backing {
				t.Fatalf("after %d bytes: the ring was allocated again", off)
			}
		}
	}
	if got := s.Tail(size); !bytes.Equal(got, all[len(all)-size:]) {
		t.Errorf("Tail(%d): not the last bytes written", size)
	}
}

// A stream file leaves its reserve free on its disk: past that, bytes are
// counted dropped (Err says the disk is nearly full), Unkept counts what
// neither the file nor the ring holds, and reads skip it.
func TestReserveKeepsRoomOnTheDisk(t *testing.T) {
	dir := t.TempDir()
	free, ok := DiskFree(dir)
	if !ok || free < 64<<20 {
		t.Skipf("this system's free space cannot be told, or is small (%d B)", free)
	}
	const room = 4 << 20
	path := filepath.Join(dir, "x.out")
	s, err := Create(path, &Options{RingSize: 1 << 20, Reserve: free - room})
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("y"), 64<<10)
	const total = 64 << 20
	for n := 0; n < total; n += len(chunk) {
		s.Write(chunk)
	}
	s.Close()
	st := s.Stats()
	// Other work on this disk moves its free space: a wide band.
	if st.InFile < room/4 || st.InFile > 32<<20 || st.Dropped != total-st.InFile {
		t.Errorf("%+v: want the file stopped near %d B (the room left above the reserve) and the rest dropped", st, room)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "nearly full") {
		t.Errorf("Err %v: want it to say the disk is nearly full", err)
	}
	if got, want := s.Unkept(), total-st.InFile-(1<<20); got != want {
		t.Errorf("Unkept %d, want %d (neither in the file nor in the 1 MiB ring)", got, want)
	}
	c, err := s.Read(st.InFile, 1024)
	if err != nil || c.Skipped != s.Unkept() {
		t.Errorf("a read past the file: skipped %d (%v), want %d", c.Skipped, err, s.Unkept())
	}
	// Without a reserve the file takes it all.
	s2, _ := Create(filepath.Join(dir, "y.out"), &Options{Reserve: -1})
	s2.Write(chunk)
	s2.Close()
	if st := s2.Stats(); st.InFile != int64(len(chunk)) || s2.Unkept() != 0 {
		t.Errorf("no reserve: %+v, unkept %d", st, s2.Unkept())
	}
}
