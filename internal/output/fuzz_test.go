package output

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// opReader hands out the fuzz input byte by byte (zeros once it is used up).
type opReader struct{ b []byte }

func (r *opReader) more() bool { return len(r.b) > 0 }

func (r *opReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// scaled maps a byte to a size: 0..127 as is, above in steps of step.
func scaled(b byte, step int) int {
	if b < 128 {
		return int(b)
	}
	return int(b-127) * step
}

// maxFuzzTotal bounds the bytes one input writes.
const maxFuzzTotal = 4 << 20

// FuzzStream interprets the input as a stream's configuration (ring
// size, file cap, memory only or not) and a sequence of operations
// (write, read, Tail, Close, Release), and checks each answer against a
// model: the plain bytes written so far.
//
//   - Read returns exactly the model's bytes at [Offset, Next), at least
//     one byte when it starts before the end, Next ≤ Total; it skips
//     (Skipped, Offset = asked + Skipped) only bytes that are in neither
//     the ring (the last RingSize bytes) nor the file (the first
//     min(Total, cap) bytes); EOF exactly when closed and Next is the end.
//   - Tail(n) is a suffix of the model, of at least min(n, Total, ring,
//     16 KiB) bytes.
//   - Stats: Total is the bytes written, InFile min(Total, cap) and
//     Dropped the rest (0 and 0 for a memory-only stream).
func FuzzStream(f *testing.F) {
	for _, seed := range [][]byte{
		{16, 100, 1, 0, 80, 1, 0, 80, 2, 1, 0, 0, 50, 1, 0, 0, 200, 3, 1, 0, 0, 50},
		{0x40, 0, 1, 0, 255, 7, 4, 200, 1, 0, 0, 255, 2, 3, 4, 255, 1, 0, 0, 255},
		{0xc8, 200, 1, 0, 250, 1, 0, 250, 0, 250, 2, 3, 4, 255, 1, 40, 0, 255},
		{8, 0, 0, 0, 100, 9, 1, 128, 0, 20, 2, 1, 0, 0, 20, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &opReader{b: in}
		ring := 1 + scaled(r.byte(), 2048) // 1..128, then 2049..262145 (past growLimit)
		fileCap := int64(-1)
		if b := r.byte(); b != 0 {
			fileCap = int64(scaled(b, 512))
		}
		path := ""
		if r.byte()%4 != 0 {
			path = filepath.Join(t.TempDir(), "s.out")
		}
		s, err := Create(path, &Options{RingSize: ring, FileCap: fileCap})
		if err != nil {
			t.Fatal(err)
		}
		var model []byte
		closed, released, compacted := false, false, false
		inFile := func() int64 {
			switch {
			case path == "":
				return 0
			case fileCap < 0:
				return int64(len(model))
			}
			return min(int64(len(model)), fileCap)
		}
		check := func(off int64, max int) {
			t.Helper()
			c, err := s.Read(off, max)
			if err != nil {
				t.Fatalf("Read(%d, %d): %v", off, max, err)
			}
			total := int64(len(model))
			if c.Next > total || c.Offset > c.Next || int64(len(c.Data)) != c.Next-c.Offset || len(c.Data) > max {
				t.Fatalf("Read(%d, %d) of %d: offset %d, next %d, %d bytes", off, max, total, c.Offset, c.Next, len(c.Data))
			}
			if c.EOF != (closed && c.Next == total) {
				t.Fatalf("Read(%d, %d) of %d (closed %v): next %d, EOF %v", off, max, total, closed, c.Next, c.EOF)
			}
			if off >= total {
				if c.Offset != total || c.Next != total || c.Skipped != 0 {
					t.Fatalf("Read(%d, %d) past the end %d: %+v", off, max, total, c)
				}
				return
			}
			if c.Skipped < 0 || c.Offset != off+c.Skipped {
				t.Fatalf("Read(%d, %d): offset %d, skipped %d", off, max, c.Offset, c.Skipped)
			}
			memStart := total - int64(ring) // the oldest byte the ring may hold
			if compacted && total-compactMax > memStart {
				memStart = total - compactMax
			}
			if c.Skipped > 0 && (off < inFile() || c.Offset > memStart) {
				t.Fatalf("Read(%d, %d) of %d (ring %d, %d in file) skipped [%d, %d), bytes still kept", off, max, total, ring, inFile(), off, c.Offset)
			}
			if len(c.Data) == 0 {
				t.Fatalf("Read(%d, %d) of %d: no data before the end", off, max, total)
			}
			if !bytes.Equal(c.Data, model[c.Offset:c.Next]) {
				t.Fatalf("Read(%d, %d): bytes [%d, %d) differ from what was written", off, max, c.Offset, c.Next)
			}
		}
		checkStats := func() {
			t.Helper()
			st := s.Stats()
			total := int64(len(model))
			want := Stats{Total: total, InFile: inFile(), Closed: closed}
			if path != "" {
				want.Dropped = total - want.InFile
			}
			if st != want {
				t.Fatalf("Stats %+v, want %+v (ring %d, cap %d, path %q)", st, want, ring, fileCap, path)
			}
		}
		for r.more() {
			switch r.byte() % 6 {
			case 0, 5: // write
				n, seed := scaled(r.byte(), 256), r.byte()
				if len(model)+n > maxFuzzTotal {
					continue
				}
				p := make([]byte, n)
				for i := range p {
					p[i] = seed + byte(i*13)
				}
				w, err := s.Write(p)
				switch {
				case closed && n > 0:
					if w != 0 || !errors.Is(err, ErrClosed) {
						t.Fatalf("Write after Close: %d, %v", w, err)
					}
				case w != n || err != nil:
					t.Fatalf("Write(%d bytes): %d, %v", n, w, err)
				default:
					model = append(model, p...)
				}
			case 1: // read
				hi, lo := r.byte(), r.byte()
				span := int64(len(model)) + 16
				off := (int64(hi)<<8 | int64(lo)) * span >> 16
				check(off, 1+scaled(r.byte(), 512))
			case 2:
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				closed = true
			case 3:
				if r.byte()%2 == 0 {
					s.Release()
				} else {
					s.Compact()
					compacted = compacted || closed
				}
				released = released || closed
			case 4: // tail
				n := 1 + scaled(r.byte(), 512)
				tail := s.Tail(n)
				total := len(model)
				want := min(n, total, ring)
				if released {
					want = min(want, releaseKeep)
				}
				if len(tail) < want || len(tail) > n || !bytes.HasSuffix(model, tail) {
					t.Fatalf("Tail(%d) of %d (ring %d, released %v): %d bytes, suffix %v", n, total, ring, released, len(tail), bytes.HasSuffix(model, tail))
				}
			}
			checkStats()
		}
		// At the end: closed, and a read from 0 to the end gets every kept
		// byte and ends with EOF.
		s.Close()
		closed = true
		checkStats()
		for off := int64(0); ; {
			c, _ := s.Read(off, 1<<20)
			check(off, 1<<20)
			if c.EOF {
				break
			}
			off = c.Next
		}
		s.Release() // closes the read handle
	})
}
