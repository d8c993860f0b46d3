package job

import (
	"fmt"

	"github.com/hivetools/hive/internal/output"
)

// minFree is the free space below which the disk holding the store and
// the output files counts as full: no new job starts. Output files leave
// output.DefaultReserve of it free, for the records.
const minFree = 1 << 20

// diskFull returns an error if the filesystem of dir has less than minFree
// bytes free for this process (root may use the reserved blocks). Where
// that cannot be told, the store's own errors will.
func diskFull(dir string) error {
	if free, ok := output.DiskFree(dir); ok && free < minFree {
		return fmt.Errorf("the disk holding %s is full (%d bytes free)", dir, free)
	}
	return nil
}
