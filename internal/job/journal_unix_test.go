//go:build unix

package job

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

// journalRec is the record of an ended job numbered i.
func journalRec(i int) store.Job {
	code := i % 7
	return store.Job{ID: fmt.Sprintf("%08x", 0xa0000000+i), Cmd: fmt.Sprintf("echo %d", i), State: string(Done), ExitCode: &code,
		Created: time.UnixMilli(1_700_000_000_000 + int64(i)).UTC(), Ended: time.UnixMilli(1_700_000_000_500 + int64(i)).UTC(),
		StdoutBytes: int64(i), StdoutPath: fmt.Sprintf("/tmp/x/%d.out", i)}
}

// readJournalFile reads the records path holds, as the next daemon would.
func readJournalFile(t *testing.T, path string) map[string]store.Job {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _, _, bad := readJournalData(data)
	if bad != 0 {
		t.Errorf("%d bad entries in %s", bad, path)
	}
	got := map[string]store.Job{}
	for _, r := range recs {
		got[r.ID] = r
	}
	return got
}

func idsOf(m map[string]store.Job) string {
	var s []string
	for i := 0; i < 2000; i++ {
		if _, ok := m[journalRec(i).ID]; ok {
			s = append(s, fmt.Sprint(i))
		}
	}
	return strings.Join(s, ",")
}

func openTestJournal(t *testing.T, path string) (*journal, []store.Job) {
	t.Helper()
	jl, recs, bad, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("openJournal: %d bad entries", bad)
	}
	return jl, recs
}

// What is appended is read back whole, by another process's read of the
// file (what the next daemon does) as by a reopen; once a commit holds
// every record of a region the region no longer counts; a region that
// still holds records a commit did not is left for the other one, and
// emptied once a later commit holds them.
func TestJournalRegions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs-journal")
	jl, recs := openTestJournal(t, path)
	if len(recs) != 0 {
		t.Fatalf("a new journal holds %d records", len(recs))
	}
	for i := 1; i <= 3; i++ {
		r := journalRec(i)
		if err := jl.append(&r, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	got := readJournalFile(t, path)
	if idsOf(got) != "1,2,3" {
		t.Fatalf("read back: %s, want 1,2,3", idsOf(got))
	}
	want := journalRec(2)
	if g := got[want.ID]; g.Cmd != want.Cmd || *g.ExitCode != *want.ExitCode || !g.Ended.Equal(want.Ended) || g.StdoutBytes != want.StdoutBytes {
		t.Errorf("record 2 read back as %+v, want %+v", g, want)
	}
	// A commit of puts up to 2: record 3 is not in it, so the region
	// stays, and the next records go to the other one.
	jl.committed(2)
	r4 := journalRec(4)
	if err := jl.append(&r4, 4); err != nil {
		t.Fatal(err)
	}
	if g := idsOf(readJournalFile(t, path)); g != "1,2,3,4" {
		t.Fatalf("after a commit up to 2: %s, want 1,2,3,4 (3 is not committed)", g)
	}
	jl.committed(3)
	if g := idsOf(readJournalFile(t, path)); g != "4" {
		t.Fatalf("after a commit up to 3: %s, want 4", g)
	}
	r5 := journalRec(5)
	if err := jl.append(&r5, 5); err != nil {
		t.Fatal(err)
	}
	jl.close()
	if err := jl.append(&r5, 6); err == nil {
		t.Error("an append after close did not fail")
	}
	// Reopened (a next daemon): what counted still does, and new
	// records go after it.
	jl, recs = openTestJournal(t, path)
	defer jl.close()
	if len(recs) != 2 {
		t.Fatalf("reopened: %d records, want 4 and 5", len(recs))
	}
	r6 := journalRec(6)
	if err := jl.append(&r6, 1); err != nil {
		t.Fatal(err)
	}
	if g := idsOf(readJournalFile(t, path)); g != "4,5,6" {
		t.Fatalf("after a reopen and an append: %s, want 4,5,6", g)
	}
	// A record removed from the store while its region is kept for
	// another's: its entry no longer counts.
	jl.forget(journalRec(5).ID, 2)
	if g := idsOf(readJournalFile(t, path)); g != "4,6" {
		t.Fatalf("after 5 was forgotten: %s, want 4,6", g)
	}
	jl.emptyAll()
	if g := idsOf(readJournalFile(t, path)); g != "" {
		t.Fatalf("emptied: %s left", g)
	}
	// Nothing to forget in an empty journal: nothing written.
	jl.forget(journalRec(7).ID, 1)
	if jl.reg[0].off != journalHeader || jl.reg[1].off != journalHeader {
		t.Errorf("a forget in an empty journal wrote an entry: regions at %d and %d", jl.reg[0].off, jl.reg[1].off)
	}
}

// An entry cut short (a daemon killed in the middle of its copy: its
// length not written yet), or whose bytes changed, ends what is read of
// its region: the entries before it count, none after it.
func TestJournalTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs-journal")
	jl, _ := openTestJournal(t, path)
	var offs []int
	for i := 1; i <= 3; i++ {
		offs = append(offs, jl.reg[jl.cur].off)
		r := journalRec(i)
		if err := jl.append(&r, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	base := jl.cur * journalRegion
	// A flipped byte in the second entry's record.
	jl.data[base+offs[1]+journalEntryHead+5] ^= 0x20
	if g := idsOf(readJournalFile(t, path)); g != "1" {
		t.Errorf("a changed byte in entry 2: %s read, want 1", g)
	}
	jl.data[base+offs[1]+journalEntryHead+5] ^= 0x20
	// The third's length never written.
	binary.LittleEndian.PutUint32(jl.data[base+offs[2]:], 0)
	if g := idsOf(readJournalFile(t, path)); g != "1,2" {
		t.Errorf("entry 3 without its length: %s read, want 1,2", g)
	}
	// A length past the region's end.
	binary.LittleEndian.PutUint32(jl.data[base+offs[2]:], journalRegion)
	if g := idsOf(readJournalFile(t, path)); g != "1,2" {
		t.Errorf("entry 3 longer than the region: %s read, want 1,2", g)
	}
	jl.close()
}

// A region that is full takes no more: the append fails (its caller
// waits for the commit), and once a commit holds what filled it the
// journal takes records again.
func TestJournalFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs-journal")
	jl, _ := openTestJournal(t, path)
	defer jl.close()
	n := 0
	for ; ; n++ {
		r := journalRec(n)
		r.Cmd = strings.Repeat("x", 4000)
		err := jl.append(&r, uint64(n+1))
		if errors.Is(err, errJournalFull) {
			break
		}
		if err != nil || n > journalRegion/4000 {
			t.Fatalf("append %d: %v", n, err)
		}
	}
	if n < journalRegion/4400 { // 4000 bytes of command, the rest of the record and the entry's head
		t.Errorf("full after %d records of 4 KB in a %d-byte region", n, journalRegion)
	}
	jl.committed(uint64(n))
	r := journalRec(n)
	if err := jl.append(&r, uint64(n+1)); err != nil {
		t.Fatalf("after the commit: %v", err)
	}
	if got := readJournalFile(t, path); len(got) != 1 {
		t.Errorf("after the commit and one append: %d records", len(got))
	}
}

// The journal is a file of the state dir like the others: a symlink in
// its place (to a file a write through it would change) is refused,
// never followed; a file of the wrong size (not one of this layout) is
// read as far as it holds whole entries and set to the layout's.
func TestJournalFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jobs-journal")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openJournal(path); !errors.Is(err, paths.ErrInsecure) {
		t.Errorf("a symlink at the journal's place: %v, want refused as insecure", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the symlink's target changed: %q", b)
	}
	os.Remove(path)
	if err := os.WriteFile(path, []byte("not a journal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jl, recs := openTestJournal(t, path)
	defer jl.close()
	if len(recs) != 0 {
		t.Errorf("a file of another content: %d records", len(recs))
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != journalSize {
		t.Errorf("its size: %v %v, want %d", fi.Size(), err, journalSize)
	}
	r := journalRec(1)
	if err := jl.append(&r, 1); err != nil {
		t.Fatal(err)
	}
	if g := idsOf(readJournalFile(t, path)); g != "1" {
		t.Errorf("read back: %s", g)
	}
}
