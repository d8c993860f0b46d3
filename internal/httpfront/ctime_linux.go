package httpfront

import (
	"os"
	"syscall"
	"time"
)

// changeTime is the file's inode change time (zero if unknown).
func changeTime(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	}
	return time.Time{}
}
