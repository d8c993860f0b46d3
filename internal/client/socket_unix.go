//go:build unix

package client

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/hivetools/hive/internal/paths"
)

// checkSocket refuses a hive.sock that is not a socket of the effective
// uid (a symlink, a file, another user's socket), before anything is
// sent to it. A missing socket is ErrNoDaemon.
func checkSocket(l paths.Layout) error {
	path := l.Socket()
	fi, err := os.Lstat(path)
	if err != nil { // missing, or the dir cannot be searched
		return noDaemon(l, err)
	}
	bad := func(problem string) error {
		return &paths.InsecureError{What: "socket", Path: path, Problem: problem + ": refusing to connect",
			Fix: "remove it (a hive daemon makes its own)"}
	}
	euid := os.Geteuid()
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		if t, err := os.Readlink(path); err == nil {
			return bad(fmt.Sprintf("is a symlink (to %q), not the daemon's socket", t))
		}
		return bad("is a symlink, not the daemon's socket")
	case m&fs.ModeSocket == 0:
		return bad("is not a socket")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != euid {
		return bad(fmt.Sprintf("owned by uid %d, not by you (uid %d)", st.Uid, euid))
	}
	return nil
}
