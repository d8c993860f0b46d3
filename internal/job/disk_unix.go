//go:build linux || darwin || freebsd

package job

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// minFree is the free space below which the disk holding the store and
// the output files counts as full: no new job starts.
const minFree = 1 << 20

// diskFull returns an error if the filesystem of dir has less than minFree
// bytes free for this process (root may use the reserved blocks).
func diskFull(dir string) error {
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
	if free := uint64(avail) * uint64(st.Bsize); free < minFree {
		return fmt.Errorf("the disk holding %s is full (%d bytes free)", dir, free)
	}
	return nil
}
