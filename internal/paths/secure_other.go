//go:build !unix

package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Secure checks that dir exists. Ownership and mode bits are a unix
// matter: elsewhere the state dir's ACLs are the user's profile's.
func Secure(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return &InsecureError{What: "state dir", Path: dir, Problem: "is not a directory", Fix: "remove it or choose another --state-dir"}
	}
	return nil
}

func create(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %q: %w", dir, err)
	}
	return Secure(dir)
}

// MkdirPrivate makes dir if it does not exist and refuses a symlink or a
// file that is not a directory.
func MkdirPrivate(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create dir %q: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("dir %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return &InsecureError{What: "dir", Path: dir, Problem: "is a link or not a directory", Fix: "remove it: hive makes its own"}
	}
	return nil
}

// OpenFile is os.OpenFile with mode 0600 that refuses a symlink and a
// file that is not a regular file. The caller closes the file.
func OpenFile(path string, flag int) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, &InsecureError{What: "file", Path: path, Problem: "is a link or not a regular file", Fix: "remove it: hive makes its own"}
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &InsecureError{What: "file", Path: path, Problem: "is not a regular file", Fix: "remove it: hive makes its own"}
	}
	return f, nil
}

// SecureFile refuses an existing symlink or file that is not a regular
// file. A missing file is not an error.
func SecureFile(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &InsecureError{What: "file", Path: path, Problem: "is a link or not a regular file", Fix: "remove it: hive makes its own"}
	}
	return nil
}
