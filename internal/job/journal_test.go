package job

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// newRegion is an empty region of n bytes, of epoch.
func newRegion(n int, epoch uint64) []byte {
	reg := make([]byte, n)
	copy(reg, journalMagic[:])
	binary.LittleEndian.PutUint64(reg[8:], epoch)
	return reg
}

// FuzzJournalRegion: any bytes read as a region of the journal give whole
// entries only, never a panic; entries put into a region are read back
// as put, in order, and an entry of another epoch, or a region whose
// header is not the journal's, gives none.
func FuzzJournalRegion(f *testing.F) {
	seed := newRegion(512, 3)
	off, _ := putEntry(seed, journalHeader, 3, 7, []byte(`{"id":"0000abcd","state":"done"}`))
	putEntry(seed, off, 3, 8, []byte(`{"id":"0000abce","state":"failed","exit_code":2}`))
	f.Add(seed, []byte(`{"id":"0000abcf","state":"killed"}`), []byte("x"), uint64(9))
	f.Add([]byte("hivejnl1"), []byte{0}, []byte{}, uint64(0))
	f.Add(make([]byte, 100), []byte("a"), []byte("b"), uint64(1<<63))
	f.Fuzz(func(t *testing.T, data, body1, body2 []byte, seq uint64) {
		epoch, end, ok := readRegion(data, func(_ uint64, b []byte) {
			if len(b) == 0 {
				t.Fatal("an empty entry read")
			}
			parseJournalRecord(b)
		})
		if ok && (end < journalHeader || end > len(data)) || !ok && end != 0 {
			t.Fatalf("read up to %d of %d (ok %v, epoch %d)", end, len(data), ok, epoch)
		}
		reg := newRegion(4096, seq)
		type entry struct {
			seq  uint64
			body []byte
		}
		var put []entry
		off := journalHeader
		for i, b := range [][]byte{body1, body2} {
			next, ok := putEntry(reg, off, seq, seq+uint64(i), b)
			if !ok {
				if len(b) != 0 && off+journalEntryHead+len(b) <= len(reg) {
					t.Fatalf("an entry of %d bytes at %d does not fit in %d", len(b), off, len(reg))
				}
				break
			}
			put = append(put, entry{seq + uint64(i), b})
			off = next
		}
		var got []entry
		e, end, ok := readRegion(reg, func(s uint64, b []byte) { got = append(got, entry{s, bytes.Clone(b)}) })
		if !ok || e != seq || end != off || len(got) != len(put) {
			t.Fatalf("read back %d entries up to %d (epoch %d, ok %v), put %d up to %d", len(got), end, e, ok, len(put), off)
		}
		for i := range put {
			if got[i].seq != put[i].seq || !bytes.Equal(got[i].body, put[i].body) {
				t.Fatalf("entry %d read back as %d %q, put %d %q", i, got[i].seq, got[i].body, put[i].seq, put[i].body)
			}
		}
		// Another epoch's: none counts.
		binary.LittleEndian.PutUint64(reg[8:], seq+1)
		readRegion(reg, func(uint64, []byte) { t.Fatal("an entry of another epoch read") })
		reg[0] ^= 1
		if _, _, ok := readRegion(reg, func(uint64, []byte) { t.Fatal("an entry of a region without the journal's header read") }); ok {
			t.Fatal("a region without the journal's header read as one")
		}
	})
}
