package job

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hivetools/hive/internal/store"
)

// The journal holds the records of ended jobs a caller may be told of
// before the record writer commits them (Options.Journal): a copy into a
// shared mapping of a file in the state dir, which wakes no process and
// makes no system call, where a holder's keep of the job's end woke the
// holder on the answer's path (and an append to a file cost a system
// call of 10-20 µs on ext4), and which a kill -9 of daemon and holder
// together does not take (the page cache has the bytes once copied). The
// next daemon puts what the store lacks (replayJournal) before it reads
// its records.
//
// The file holds two regions that take turns. A region is a header
// (magic, epoch) and entries; an entry is its length, a CRC-32 of the
// rest, the region's epoch, the record's sequence number (recordWriter's,
// past those of the file's earlier daemons: see base) and the record as
// JSON (store.Job), its length written last; a removed record's entry is
// its id alone (forget). A region
// is emptied by a new epoch in its header: the entries of the old one no
// longer count. Once a commit holds every record a region holds, the
// region is emptied; when the current region still holds a record the
// commit did not, the other (empty) one becomes the current one, so a
// steady flow of jobs cannot keep both from emptying. A record that does
// not fit is not journaled: its callers wait for its commit.
type journal struct {
	mu sync.Mutex
	// base is added to the sequence numbers of this daemon's records in
	// the file (the highest it held when opened), so that an entry's
	// number outranks those of a daemon before (an earlier entry of the
	// same job counts for less).
	base uint64
	m    journalMap
	data []byte // the mapped file: regions × journalRegion bytes
	reg  [journalRegions]region
	cur  int
	buf  []byte
	err  error // the journal takes no more records (closed)
}

type region struct {
	epoch uint64
	off   int    // where the next entry goes
	top   uint64 // the highest record sequence number the region holds; 0: none
}

const (
	journalRegions   = 2
	journalRegion    = 512 << 10 // bytes a region: about 800 records of short jobs
	journalHeader    = 64        // a region's header: magic, epoch
	journalEntryHead = 24        // an entry's: length, crc, epoch, seq
	journalSize      = journalRegions * journalRegion
)

var journalMagic = [8]byte{'h', 'i', 'v', 'e', 'j', 'n', 'l', '1'}

// errJournalFull is an append that does not fit in the current region.
var errJournalFull = errors.New("job journal: full")

// readJournalData reads the entries of a journal file's content: for
// each region whose header is sound, its entries of the region's epoch,
// up to the first that is not whole (never written, torn by a kill mid-
// copy, of another epoch). Among the records of one job the one of the
// highest sequence number counts (none, if that one says it was
// removed). bad counts the entries whose record does not parse as an
// ended job's. epochs are the regions' epochs (0: no sound header), ends
// where their entries end, top the highest sequence number read.
func readJournalData(data []byte) (recs []store.Job, epochs [journalRegions]uint64, ends [journalRegions]int, top uint64, bad int) {
	type got struct {
		rec store.Job
		seq uint64
	}
	at := map[string]int{}
	var all []got
	for r := 0; r < journalRegions && (r+1)*journalRegion <= len(data); r++ {
		var ok bool
		epochs[r], ends[r], ok = readRegion(data[r*journalRegion:(r+1)*journalRegion], func(seq uint64, body []byte) {
			top = max(top, seq)
			rec, ok := parseJournalRecord(body)
			if !ok {
				bad++
				return
			}
			if k, ok := at[rec.ID]; ok {
				if seq >= all[k].seq {
					all[k] = got{rec, seq}
				}
				return
			}
			at[rec.ID] = len(all)
			all = append(all, got{rec, seq})
		})
		if !ok {
			epochs[r], ends[r] = 0, 0
		}
	}
	for _, g := range all {
		if g.rec.State != journalRemoved {
			recs = append(recs, g.rec)
		}
	}
	return recs, epochs, ends, top, bad
}

// readRegion calls f with the sequence number and the body of each whole
// entry of reg of its epoch, in order, up to the first that is not, and
// returns the epoch and where that one begins; ok is false for a region
// without a sound header.
func readRegion(reg []byte, f func(seq uint64, body []byte)) (epoch uint64, end int, ok bool) {
	if len(reg) < journalHeader || [8]byte(reg[:8]) != journalMagic {
		return 0, 0, false
	}
	epoch = binary.LittleEndian.Uint64(reg[8:16])
	off := journalHeader
	for off+journalEntryHead <= len(reg) {
		n := int(binary.LittleEndian.Uint32(reg[off:]))
		e := off + journalEntryHead + n
		if n == 0 || e > len(reg) || e < off {
			break
		}
		rest := reg[off+8 : e]
		if binary.LittleEndian.Uint32(reg[off+4:]) != crc32.ChecksumIEEE(rest) || binary.LittleEndian.Uint64(rest) != epoch {
			break
		}
		f(binary.LittleEndian.Uint64(rest[8:]), rest[16:])
		off = align8(e)
	}
	return epoch, off, true
}

// putEntry writes an entry of body (its epoch and seq) into reg at off,
// its length last (see append), and returns where the next one goes; ok
// is false, and nothing is written, if it does not fit.
func putEntry(reg []byte, off int, epoch, seq uint64, body []byte) (next int, ok bool) {
	e := off + journalEntryHead + len(body)
	if e > len(reg) || len(body) == 0 {
		return off, false
	}
	ent := reg[off:e]
	binary.LittleEndian.PutUint64(ent[8:], epoch)
	binary.LittleEndian.PutUint64(ent[16:], seq)
	copy(ent[journalEntryHead:], body)
	binary.LittleEndian.PutUint32(ent[4:], crc32.ChecksumIEEE(ent[8:]))
	// A next entry's place is cleared first, so that a reader stops
	// there whatever it held before (an entry of an older epoch stops it
	// too; this is for bytes of another entry's body).
	next = align8(e)
	if next+4 <= len(reg) {
		binary.LittleEndian.PutUint32(reg[next:], 0)
	}
	// The length last: until it is there the entry does not count.
	storeUint32(ent[0:4], uint32(len(body)))
	return next, true
}

// ReadJournal reads the records of the journal at path, as the next
// daemon would: the last of each ended job's.
func ReadJournal(path string) ([]store.Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	recs, _, _, _, _ := readJournalData(data)
	return recs, nil
}

func align8(n int) int { return (n + 7) &^ 7 }

// journalRemoved is the state of the entry that says a job's record
// was removed from the store (journal.forget): the job's earlier entries
// no longer count.
const journalRemoved = "removed"

// parseJournalRecord reads an entry's record: an ended job's, or a
// removed one's (journalRemoved: its id alone).
func parseJournalRecord(b []byte) (store.Job, bool) {
	var rec store.Job
	if json.Unmarshal(b, &rec) != nil || rec.ID == "" {
		return store.Job{}, false
	}
	if rec.State == journalRemoved {
		return store.Job{ID: rec.ID, State: journalRemoved}, true
	}
	if !State(rec.State).Terminal() {
		return store.Job{}, false
	}
	return rec, true
}

// append copies rec, the record of seq, into the current region. An
// error (a record that does not fit, a closed journal) leaves it out:
// the caller waits for its commit.
func (jl *journal) append(rec *store.Job, seq uint64) error {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	if jl.err != nil {
		return jl.err
	}
	b, ok := rec.AppendJSON(jl.buf[:0])
	if !ok {
		m, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		b = append(jl.buf[:0], m...)
	}
	if cap(b) <= 64<<10 {
		jl.buf = b
	}
	r := &jl.reg[jl.cur]
	base := jl.cur * journalRegion
	next, ok := putEntry(jl.data[base:base+journalRegion], r.off, r.epoch, jl.base+seq, b)
	if !ok {
		return errJournalFull
	}
	r.off = next
	r.top = max(r.top, seq)
	return nil
}

// forget notes that the record of id was removed from the store, after
// a commit of every put up to seq: should the journal still hold an
// entry of it (its region holds another not committed), the entry no
// longer counts. Nothing is written when the journal holds nothing.
func (jl *journal) forget(id string, seq uint64) {
	jl.mu.Lock()
	held := false
	for _, r := range jl.reg {
		held = held || r.off > journalHeader
	}
	jl.mu.Unlock()
	if held {
		jl.append(&store.Job{ID: id, State: journalRemoved}, seq)
	}
}

// committed empties the regions whose records are all committed (every
// put up to upTo is), and makes an empty region the current one if the
// current one still holds records that are not.
func (jl *journal) committed(upTo uint64) {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	if jl.data == nil {
		return
	}
	for i := range jl.reg {
		if r := &jl.reg[i]; r.top != 0 && r.top <= upTo {
			jl.emptyLocked(i)
		}
	}
	jl.turnLocked()
}

// turnLocked makes a region that holds no record the current one, if the
// current one holds records not committed and there is one.
func (jl *journal) turnLocked() {
	if jl.reg[jl.cur].top == 0 {
		return
	}
	for i := range jl.reg {
		if jl.reg[i].top == 0 {
			jl.cur = i
			return
		}
	}
}

// emptyLocked gives region i a new epoch: what it held no longer counts.
func (jl *journal) emptyLocked(i int) {
	r := &jl.reg[i]
	r.epoch++
	base := i * journalRegion
	binary.LittleEndian.PutUint32(jl.data[base+journalHeader:], 0)
	storeUint64(jl.data[base+8:base+16], r.epoch)
	r.off, r.top = journalHeader, 0
}

// held marks the regions that hold records (what a replay put and could
// not commit yet) as holding them up to seq, so that they are emptied
// only once seq is committed; new records go on in one that holds none,
// if there is one, else after those of the current one.
func (jl *journal) held(seq uint64) {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	for i := range jl.reg {
		if r := &jl.reg[i]; r.off > journalHeader {
			r.top = max(r.top, seq)
		}
	}
	jl.turnLocked()
}

// emptyAll empties every region: at New, once what they hold is
// committed.
func (jl *journal) emptyAll() {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	if jl.data == nil {
		return
	}
	for i := range jl.reg {
		jl.emptyLocked(i)
	}
	jl.cur = 0
}

// close unmaps and closes the file; later appends fail.
func (jl *journal) close() {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	if jl.data != nil {
		jl.m.close(jl.data)
		jl.data = nil
	}
	jl.err = errors.New("job journal: closed")
}

// storeUint32 and storeUint64 write v little-endian into b (aligned to
// its size) with one store: a process killed in the middle leaves the
// old value or the new, never a mix.
func storeUint32(b []byte, v uint32) {
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], v)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), *(*uint32)(unsafe.Pointer(&t)))
}

func storeUint64(b []byte, v uint64) {
	var t [8]byte
	binary.LittleEndian.PutUint64(t[:], v)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&b[0])), *(*uint64)(unsafe.Pointer(&t)))
}
