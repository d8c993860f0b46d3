//go:build linux || darwin || freebsd

package job

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// minFree is the free space below which the disk holding the store and
// the output files counts as full: no new job starts.
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
// bytes free for this process (root may use the reserved blocks). A check
// that found at least roomy bytes free stands for roomyFor: a burst of
// starts makes one statfs, not one each.
func diskFull(dir string) error {
	now := time.Now()
	if r := lastRoomy.Load(); r != nil && r.dir == dir && now.Before(r.until) {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // unknown: the store's own errors will tell
	}
	// The fields' types differ between systems (FreeBSD's Bavail is
	// signed: it goes below 0 past the reserve).
	avail := max(int64(st.Bavail), 0)
	if os.Geteuid() == 0 {
		avail = int64(st.Bfree)
	}
	free := uint64(avail) * uint64(st.Bsize)
	if free < minFree {
		return fmt.Errorf("the disk holding %s is full (%d bytes free)", dir, free)
	}
	if free >= roomy {
		lastRoomy.Store(&roomyCheck{dir, now.Add(roomyFor)})
	}
	return nil
}
