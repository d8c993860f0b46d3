package output

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stream continued from another writer's file goes on at its end, with
// that writer's counts: nothing of the file is lost, and what it dropped
// past the cap stays counted.
func TestContinue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.out")
	a, err := Create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("abc"))
	at := a.Stats() // the first writer dies here: no Close
	b, err := Continue(path, nil, at)
	if err != nil {
		t.Fatal(err)
	}
	b.Write([]byte("def"))
	b.Close()
	a.Close()
	if got, _ := os.ReadFile(path); string(got) != "abcdef" {
		t.Errorf("the file: %q, want abcdef", got)
	}
	if st := b.Stats(); st.Total != 6 || st.InFile != 6 || st.Dropped != 0 {
		t.Errorf("counts: %+v", st)
	}

	// Past the cap: the first writer dropped 2 bytes, the next drops on.
	capped := filepath.Join(dir, "c.out")
	c, _ := Create(capped, &Options{FileCap: 4})
	c.Write([]byte("abcdef"))
	d, err := Continue(capped, &Options{FileCap: 4}, c.Stats())
	if err != nil {
		t.Fatal(err)
	}
	d.Write([]byte("gh"))
	d.Close()
	c.Close()
	if got, _ := os.ReadFile(capped); string(got) != "abcd" {
		t.Errorf("the capped file: %q, want abcd", got)
	}
	if st := d.Stats(); st.Total != 8 || st.InFile != 4 || st.Dropped != 4 {
		t.Errorf("capped counts: %+v, want total 8, in file 4, dropped 4", st)
	}

	// Counts unknown (a writer that died without telling them): what the
	// file holds.
	e, err := Continue(path, nil, Stats{})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Total != 6 || st.InFile != 6 {
		t.Errorf("from the file alone: %+v", st)
	}
	e.Close()

	// No file yet (the first writer never wrote): made at the first write.
	f, err := Continue(filepath.Join(dir, "new.out"), nil, Stats{})
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "new.out")); string(got) != "x" {
		t.Errorf("a file the first writer never made: %q", got)
	}

	// A link planted at the path is refused, not followed.
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	link := filepath.Join(dir, "l.out")
	os.Symlink(victim, link)
	if _, err := Continue(link, nil, Stats{}); err == nil {
		t.Error("a stream continued through a symlink")
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the link's target: %q", got)
	}
}

// An index continued from another writer's keeps its marks and orders
// what comes next after them: merged, the two writers' chunks read in
// arrival order.
func TestContinueInterleave(t *testing.T) {
	j := newILJob(t, 0, nil)
	o, e := j.x.Writer(0), j.x.Writer(1)
	fmt.Fprint(o, "out0\n")
	fmt.Fprint(e, "err0\n")
	j.x.Snapshot() // its marks are in the file (the daemon's flush each mark)
	// The first writer dies; the next continues its streams and index.
	out, err := Continue(filepath.Join(j.dir, "j.out"), nil, j.out.Stats())
	if err != nil {
		t.Fatal(err)
	}
	errs, err := Continue(filepath.Join(j.dir, "j.err"), nil, j.err.Stats())
	if err != nil {
		t.Fatal(err)
	}
	x, err := ContinueInterleave(filepath.Join(j.dir, "j.idx"), out, errs, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(x.Writer(1), "err1\n") // the same stream as the last chunk: marked all the same
	fmt.Fprint(x.Writer(0), "out1\n")
	fmt.Fprint(x.Writer(1), "err2\n")
	x.Close()
	out.Close()
	errs.Close()
	j.x.Close()
	j.out.Close()
	j.err.Close()
	j2 := &ilJob{dir: j.dir, out: out, err: errs, x: x}
	if got, want := j2.files(t, MergeOptions{}), "out0\nerr0\nerr1\nout1\nerr2\n"; got != want {
		t.Errorf("merged across the two writers: %q, want %q", got, want)
	}
	if fi, _ := os.Stat(x.Path()); fi.Size() != 5*MarkSize {
		t.Errorf("index: %d bytes, want 5 marks", fi.Size())
	}
	// A mark cut short by the first writer's death is written over.
	idx := filepath.Join(j.dir, "j.idx")
	f, _ := os.OpenFile(idx, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(strings.Repeat("\xff", 10)))
	f.Close()
	out2, _ := Continue(filepath.Join(j.dir, "j.out"), nil, out.Stats())
	errs2, _ := Continue(filepath.Join(j.dir, "j.err"), nil, errs.Stats())
	x2, err := ContinueInterleave(idx, out2, errs2, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(x2.Writer(0), "out2\n")
	x2.Close()
	out2.Close()
	errs2.Close()
	j3 := &ilJob{dir: j.dir, out: out2, err: errs2, x: x2}
	if got, want := j3.files(t, MergeOptions{}), "out0\nerr0\nerr1\nout1\nerr2\nout2\n"; got != want {
		t.Errorf("after a mark cut short: %q, want %q", got, want)
	}
}
