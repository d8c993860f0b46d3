package reliability

import (
	"path/filepath"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/job"
)

// Row 25: answered, then daemon and holder die together. A daemon whose
// job record writes stall answers terminal_exec calls (their jobs kept
// by the holder at their end); daemon and holder are killed with -9 at
// once, before a record of those jobs is written, and a next daemon
// starts (with a new holder). Each answered job must be recorded as
// answered: the daemon writes each record to its journal (a file in the
// state dir) before the answer, and the next daemon puts what the store
// lacks. Before the journal, the holder kept the records until the
// commit: a kill of both lost them (a window of about a millisecond
// after each answer; here, with writes stalled, all of them).
func TestRow25AnsweredThenBothDie(t *testing.T) {
	dir, d, s := row23Daemon(t)
	n := count(5, 50)
	answered := execStalled(t, dir, s, n, "row25", 4)
	hp := hivetest.HolderPid(dir)
	if hp == 0 {
		t.Fatal("no holder runs")
	}
	s.Close()
	hivetest.Kill(hp)
	d.Kill()
	unstall(t, dir)

	// The next daemon puts the journal's records before it answers: no
	// wait, and no holder knows of the jobs now.
	d = startDaemon(t, dir)
	recorded, err := recordedAsAnswered(d, answered)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := job.ReadJournal(filepath.Join(dir, "jobs-journal")); err != nil || len(recs) != 0 {
		t.Errorf("the journal holds %d records once the next daemon committed them (%v)", len(recs), err)
	}
	figure(t, 25, "a daemon whose job record writes stall answered %d of %d terminal_exec calls (exit codes 0-3); daemon and holder killed with -9 together; the next daemon has %d of %d recorded as answered (done, exit code, bytes), from its journal", len(answered), n, recorded, len(answered))
}
