package job

import (
	"time"

	"github.com/hivetools/hive/internal/store"
)

// MaxKept is maxKept, for the tests of package job_test.
var MaxKept = maxKept

// SetBeforeKeep has f run once a kept job's fork returned, before its
// leader is looked at (beforeKeep), until restore.
func SetBeforeKeep(f func(pid int)) (restore func()) {
	beforeKeep = f
	return func() { beforeKeep = nil }
}

// KeptAtEnd reports whether j was kept with its end (Keeper.KeepEnded).
func KeptAtEnd(j *Job) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.keptAtEnd
}

// PipesMadeAhead reports whether the next start's pipes are made
// (pipeSpare).
func PipesMadeAhead(m *Manager) bool { return !m.pipes.empty() }

// Kept reports whether j is kept by its holder now (beginKept,
// keepLate).
func Kept(j *Job) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.kept
}

// SetKeepLater sets keepLater to d until restore: a test of a job that
// ends before (or runs past) it does not race the clock.
func SetKeepLater(d time.Duration) (restore func()) {
	old := keepLater
	keepLater = d
	return func() { keepLater = old }
}

// SetLateKeepMade has f run once a put-off keep is made (lateKeepMade),
// until restore.
func SetLateKeepMade(f func()) (restore func()) {
	lateKeepMade = f
	return func() { lateKeepMade = nil }
}

// WriteJournal writes recs to the journal at path (sequence numbers 1,
// 2, ...), as a daemon that died before their commit would have left
// them; false where there is no journal.
func WriteJournal(path string, recs ...store.Job) (bool, error) {
	jl, _, _, err := openJournal(path)
	if err != nil || jl == nil {
		return false, err
	}
	defer jl.close()
	for i := range recs {
		if err := jl.append(&recs[i], uint64(i+1)); err != nil {
			return true, err
		}
	}
	return true, nil
}
