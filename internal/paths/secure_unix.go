//go:build unix

package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks Secure follows while resolving a state dir.
const maxLinks = 40

// Secure checks that dir is safe to use as a state dir, the way sshd's
// StrictModes checks a home directory:
//
//   - dir is a directory owned by the effective uid, and neither group
//     nor others may write to it (mode & 0o022 == 0);
//   - every directory above it, and every directory a symlink on the way
//     leads through, is owned by root or by the effective uid and is not
//     writable by group or others unless it has the sticky bit (so
//     /tmp/hive-x is fine and /srv/shared-0777/hive is not).
//
// A refusal is an *InsecureError (errors.Is(err, ErrInsecure)) naming the
// path, the rule and the fix. A dir that does not exist gives an error
// wrapping fs.ErrNotExist, after every directory above the first missing
// one was checked.
func Secure(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("state dir %q: %w", dir, err)
	}
	euid := os.Geteuid()
	fi, err := os.Lstat("/")
	if err != nil {
		return fmt.Errorf("state dir %q: %w", dir, err)
	}
	if dir == "/" {
		return checkStateDir(dir, "/", fi, euid)
	}
	if err := checkAncestor(dir, "/", fi, euid); err != nil {
		return err
	}
	// Resolve the path one component at a time, symlinks by hand, so
	// every directory that takes part in the resolution is checked: an
	// attacker who can write to any of them could swap what follows.
	resolved := "/"
	rest := strings.Split(dir[1:], "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return fmt.Errorf("state dir %q: %w", dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// The link's own directory (resolved) is checked already.
			if links++; links > maxLinks {
				return fmt.Errorf("state dir %q: more than %d symlinks on the way", dir, maxLinks)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("state dir %q: %w", dir, err)
			}
			if filepath.IsAbs(target) {
				resolved = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if done(rest) {
			if err := checkStateDir(dir, next, fi, euid); err != nil {
				return err
			}
		} else if err := checkAncestor(dir, next, fi, euid); err != nil {
			return err
		}
		resolved = next
	}
	return nil
}

// done reports whether no real component is left in rest.
func done(rest []string) bool {
	for _, c := range rest {
		if c != "" && c != "." {
			return false
		}
	}
	return true
}

// checkStateDir checks the state dir itself (real is its resolved path).
func checkStateDir(dir, real string, fi fs.FileInfo, euid int) error {
	bad := func(problem, fix string) error {
		return &InsecureError{What: "state dir", Path: dir, Problem: problem, Fix: fix}
	}
	if !fi.IsDir() {
		return bad(fmt.Sprintf("is %s, not a directory", kind(fi.Mode())), "remove it or choose another --state-dir")
	}
	if uid := owner(fi); uid != euid {
		return bad(fmt.Sprintf("owned by uid %d, not by you (uid %d)", uid, euid),
			"choose a state dir of your own (--state-dir or HIVE_STATE_DIR)")
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return bad(fmt.Sprintf("mode %04o lets group or others write to it", m), "chmod 700 "+real)
	}
	return nil
}

// checkAncestor checks a directory above the state dir (or one a symlink
// on the way goes through).
func checkAncestor(dir, anc string, fi fs.FileInfo, euid int) error {
	bad := func(problem, fix string) error {
		return &InsecureError{What: "state dir", Path: dir, Problem: problem, Fix: fix}
	}
	if !fi.IsDir() {
		return bad(fmt.Sprintf("%q on its path is %s, not a directory", anc, kind(fi.Mode())), "choose another --state-dir")
	}
	if uid := owner(fi); uid != 0 && uid != euid {
		return bad(fmt.Sprintf("%q on its path is owned by uid %d, neither root nor you (uid %d), who could replace what is in it", anc, uid, euid),
			"choose a state dir under directories that only you or root control")
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 && m&fs.ModeSticky == 0 {
		return bad(fmt.Sprintf("%q on its path has mode %04o: group or others may write to it and it has no sticky bit, so they could replace what is in it", anc, m.Perm()),
			"chmod go-w "+anc+" (or chmod +t), or choose another --state-dir")
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// kind names the type of a file, for errors.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}

func create(dir string) error {
	err := Secure(dir)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Secure stopped at the first missing component, after checking every
	// directory above it: creating below them is safe. MkdirAll does not
	// create through a dangling symlink (mkdir fails on it).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %q: %w", dir, err)
	}
	return Secure(dir)
}

// MkdirPrivate makes dir with mode 0700 if it does not exist (its parent
// must). An existing dir must be a directory, not a symlink, owned by the
// effective uid; group and other bits are removed from its mode. A
// refusal is an *InsecureError.
func MkdirPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create dir %q: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("dir %q: %w", dir, err)
	}
	bad := func(problem, fix string) error {
		return &InsecureError{What: "dir", Path: dir, Problem: problem, Fix: fix}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return bad(linkProblem(dir), "remove it: hive makes its own")
	}
	if !fi.IsDir() {
		return bad(fmt.Sprintf("is %s, not a directory", kind(fi.Mode())), "remove it: hive makes its own")
	}
	euid := os.Geteuid()
	if uid := owner(fi); uid != euid {
		return bad(fmt.Sprintf("owned by uid %d, not by you (uid %d)", uid, euid), "remove it: hive makes its own")
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("chmod 700 %q: %w", dir, err)
		}
	}
	return nil
}

func linkProblem(path string) string {
	if t, err := os.Readlink(path); err == nil {
		return fmt.Sprintf("is a symlink (to %q), and hive never follows links in its state dir", t)
	}
	return "is a symlink, and hive never follows links in its state dir"
}

// SecureSocket checks the path of a socket hive dials and would serve on
// (the holder's): missing, or a socket of this user. Anything else there
// (a regular file, a symlink, a socket of another user) is refused with
// an InsecureError naming it, and left as it is.
func SecureSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	bad := func(problem string) error {
		return &InsecureError{What: "socket", Path: path, Problem: problem, Fix: "hive leaves it as it is: remove it or move it away, then start hive again"}
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return bad(fmt.Sprintf("is %s, not a socket", kind(fi.Mode())))
	}
	if uid := owner(fi); uid != os.Geteuid() {
		return bad(fmt.Sprintf("owned by uid %d, not by you (uid %d)", uid, os.Geteuid()))
	}
	return nil
}
