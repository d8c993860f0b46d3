package job

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/output"
)

// minFree is the free space below which the disk holding the store and
// the output files counts as full: no new job starts. Output files leave
// output.DefaultReserve of it free, for the records.
const minFree = 1 << 20

// roomy is how much free space lets the next checks within roomyFor
// be skipped: no disk fills that much in that time (10 GiB/s).
const (
	roomy    = 1 << 30
	roomyFor = 100 * time.Millisecond
)

// lastRoomy is the last check that found roomy free space: its dir, and
// when it stops counting.
var lastRoomy atomic.Pointer[roomyCheck]

type roomyCheck struct {
	dir   string
	until time.Time
}

// diskFull returns an error if the filesystem of dir has less than minFree
// bytes free for this process (root may use the reserved blocks). Where
// that cannot be told, the store's own errors will. A check that found at
// least roomy bytes free stands for roomyFor: a burst of starts makes one
// statfs, not one each.
func diskFull(dir string) error {
	now := time.Now()
	if r := lastRoomy.Load(); r != nil && r.dir == dir && now.Before(r.until) {
		return nil
	}
	free, ok := output.DiskFree(dir)
	if !ok {
		return nil
	}
	if free < minFree {
		return fmt.Errorf("the disk holding %s is full (%d bytes free)", dir, free)
	}
	if free >= roomy {
		lastRoomy.Store(&roomyCheck{dir, now.Add(roomyFor)})
	}
	return nil
}
