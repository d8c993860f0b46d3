//go:build unix

package job

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

// journalMap is the journal's file, mapped.
type journalMap struct{ f *os.File }

func (m journalMap) close(data []byte) {
	unix.Munmap(data)
	m.f.Close()
}

// openJournal opens (creating) the journal's file at path, maps it, and
// returns the records it holds (see readJournalData); bad counts the
// entries that are not an ended job's record. A region without a sound
// header gets one.
func openJournal(path string) (jl *journal, recs []store.Job, bad int, err error) {
	f, err := paths.OpenFile(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("job journal: %w", err)
	}
	fail := func(err error) (*journal, []store.Job, int, error) {
		f.Close()
		return nil, nil, 0, fmt.Errorf("job journal %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if fi.Size() != journalSize {
		// Made now (sparse: its blocks come as regions fill), or not
		// one of this layout's: its records are read as far as they are
		// whole.
		if err := f.Truncate(journalSize); err != nil {
			return fail(err)
		}
	}
	data, err := unix.Mmap(int(f.Fd()), 0, journalSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	recs, epochs, ends, top, bad := readJournalData(data)
	jl = &journal{m: journalMap{f}, data: data, base: top}
	for i := range jl.reg {
		r := &jl.reg[i]
		if epochs[i] == 0 {
			base := i * journalRegion
			copy(data[base:], journalMagic[:])
			binary.LittleEndian.PutUint32(data[base+journalHeader:], 0)
			storeUint64(data[base+8:base+16], 1)
			r.epoch, r.off = 1, journalHeader
			continue
		}
		r.epoch, r.off = epochs[i], ends[i]
	}
	return jl, recs, bad, nil
}
