//go:build unix

package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// OpenFile opens a file hive keeps in its state dir, the way os.OpenFile
// would with mode 0600, except that it never follows a symlink
// (O_NOFOLLOW), never blocks on a named pipe, and refuses a file that is
// not a regular file, is owned by another uid, or has more than one hard
// link: each could point hive's writes at a file outside the dir. It
// checks what it opened (fstat), so a swap between the checks and the
// open is caught too. An existing file with group or other bits (or
// setuid, setgid, sticky) gets mode 0600. O_TRUNC truncates only after
// the checks pass. The descriptor is close-on-exec and blocking.
//
// A refusal is an *InsecureError (errors.Is(err, ErrInsecure)); other
// errors are *fs.PathError as from os.OpenFile. The caller closes the
// file.
func OpenFile(path string, flag int) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil {
		if err := checkFile(path, fi.Mode(), owner(fi), nlink(fi)); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0 {
		return nil, err
	}
	trunc := flag&os.O_TRUNC != 0
	flag = flag&^os.O_TRUNC | syscall.O_NOFOLLOW | syscall.O_CLOEXEC | syscall.O_NONBLOCK
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flag, 0o600)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		if err == syscall.ELOOP { // made a symlink since the Lstat
			return nil, checkFile(path, fs.ModeSymlink, 0, 0)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := secureFD(path, fd, trunc); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// secureFD checks an open descriptor of path, fixes its mode, truncates
// it if asked and makes it blocking.
func secureFD(path string, fd int, trunc bool) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := checkFile(path, statMode(uint32(st.Mode)), int(st.Uid), uint64(st.Nlink)); err != nil {
		return err
	}
	if st.Mode&0o7077 != 0 {
		if err := syscall.Fchmod(fd, 0o600); err != nil {
			return &fs.PathError{Op: "chmod 600", Path: path, Err: err}
		}
	}
	// An empty file (one O_CREATE just made) is not truncated: a truncate
	// to 0 makes ext4 (auto_da_alloc) write back the whole file at its
	// close, in the closing process: 0.4-0.6 s at the end of a 1 GiB job.
	if trunc && st.Size > 0 {
		if err := syscall.Ftruncate(fd, 0); err != nil {
			return &fs.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		return &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return nil
}

// SecureFile applies OpenFile's rules to an existing file without keeping
// it open: a symlink, a file that is not regular, owned by another uid or
// hard-linked elsewhere is refused (*InsecureError), and group and other
// bits are removed from its mode. A missing file is not an error. It
// opens the file only when its mode needs fixing.
func SecureFile(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := checkFile(path, fi.Mode(), owner(fi), nlink(fi)); err != nil {
		return err
	}
	if fi.Mode()&(fs.ModePerm&0o077|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == 0 {
		return nil
	}
	f, err := OpenFile(path, os.O_RDONLY)
	if err != nil {
		return err
	}
	return f.Close()
}

// checkFile applies OpenFile's rules to what Lstat or Fstat saw.
func checkFile(path string, mode fs.FileMode, uid int, links uint64) error {
	bad := func(problem string) error {
		return &InsecureError{What: "file", Path: path, Problem: problem, Fix: "remove it: hive makes its own"}
	}
	euid := os.Geteuid()
	switch {
	case mode&fs.ModeSymlink != 0:
		return bad(linkProblem(path))
	case !mode.IsRegular():
		return bad(fmt.Sprintf("is %s, not a regular file", kind(mode)))
	case uid != euid:
		return bad(fmt.Sprintf("owned by uid %d, not by you (uid %d)", uid, euid))
	case links > 1:
		return bad(fmt.Sprintf("has %d hard links: another name for it exists, maybe outside the state dir", links))
	}
	return nil
}

func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// statMode maps the type bits of a stat mode onto fs.FileMode.
func statMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
