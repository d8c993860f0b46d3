//go:build unix

package paths

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nobody is the uid (and gid) tests give files that are not ours.
const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes files owned by another uid (65534)")
	}
}

// tempDir is a private temp dir under /tmp (sticky), removed at the end.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hive-paths-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func mkdir(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask, with sticky
		t.Fatal(err)
	}
	return dir
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// wantInsecure fails unless err refuses with every piece of text in want.
func wantInsecure(t *testing.T, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, ErrInsecure) {
		t.Fatalf("err = %v, want a refusal (ErrInsecure)", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestSecure(t *testing.T) {
	tests := []struct {
		name string
		root bool
		// setup returns the state dir to check inside base.
		setup func(t *testing.T, base string) string
		want  []string // nil: accepted
	}{
		{name: "private dir", setup: func(t *testing.T, base string) string {
			return mkdir(t, filepath.Join(base, "s"), 0o700)
		}},
		{name: "0755 dir", setup: func(t *testing.T, base string) string {
			return mkdir(t, filepath.Join(base, "s"), 0o755)
		}},
		{name: "group-writable dir", setup: func(t *testing.T, base string) string {
			return mkdir(t, filepath.Join(base, "s"), 0o770)
		}, want: []string{"mode 0770 lets group or others write to it", "chmod 700 " + "BASE/s"}},
		{name: "world-writable sticky dir", setup: func(t *testing.T, base string) string {
			return mkdir(t, filepath.Join(base, "s"), fs.ModeSticky|0o777)
		}, want: []string{"mode 0777 lets group or others write"}},
		{name: "another uid's dir", root: true, setup: func(t *testing.T, base string) string {
			d := mkdir(t, filepath.Join(base, "s"), 0o700)
			chown(t, d, nobody)
			return d
		}, want: []string{`state dir "BASE/s"`, "owned by uid 65534, not by you (uid 0)", "choose a state dir of your own"}},
		{name: "a regular file", setup: func(t *testing.T, base string) string {
			p := filepath.Join(base, "s")
			os.WriteFile(p, nil, 0o600)
			return p
		}, want: []string{"is a regular file, not a directory"}},
		{name: "world-writable parent without sticky bit", setup: func(t *testing.T, base string) string {
			p := mkdir(t, filepath.Join(base, "shared"), 0o777)
			return mkdir(t, filepath.Join(p, "hive"), 0o700)
		}, want: []string{`state dir "BASE/shared/hive"`, `"BASE/shared" on its path has mode 0777`, "no sticky bit", "chmod go-w BASE/shared"}},
		{name: "group-writable grandparent", setup: func(t *testing.T, base string) string {
			p := mkdir(t, filepath.Join(base, "g"), 0o775)
			q := mkdir(t, filepath.Join(p, "q"), 0o755)
			return mkdir(t, filepath.Join(q, "hive"), 0o700)
		}, want: []string{`"BASE/g" on its path has mode 0775`}},
		{name: "world-writable sticky parent (like /tmp)", setup: func(t *testing.T, base string) string {
			p := mkdir(t, filepath.Join(base, "tmp"), fs.ModeSticky|0o777)
			return mkdir(t, filepath.Join(p, "hive-x"), 0o700)
		}},
		{name: "parent owned by another uid", root: true, setup: func(t *testing.T, base string) string {
			p := mkdir(t, filepath.Join(base, "theirs"), 0o755)
			d := mkdir(t, filepath.Join(p, "hive"), 0o700)
			chown(t, p, nobody)
			return d
		}, want: []string{`"BASE/theirs" on its path is owned by uid 65534, neither root nor you`}},
		{name: "symlink to a private dir", setup: func(t *testing.T, base string) string {
			d := mkdir(t, filepath.Join(base, "real"), 0o700)
			os.Symlink(d, filepath.Join(base, "link"))
			return filepath.Join(base, "link")
		}},
		{name: "relative symlink with ..", setup: func(t *testing.T, base string) string {
			a := mkdir(t, filepath.Join(base, "a"), 0o700)
			mkdir(t, filepath.Join(base, "real"), 0o700)
			os.Symlink("../real", filepath.Join(a, "link"))
			return filepath.Join(a, "link")
		}},
		{name: "symlink in a world-writable dir", setup: func(t *testing.T, base string) string {
			d := mkdir(t, filepath.Join(base, "real"), 0o700)
			w := mkdir(t, filepath.Join(base, "w"), 0o777)
			os.Symlink(d, filepath.Join(w, "link"))
			return filepath.Join(w, "link")
		}, want: []string{`"BASE/w" on its path has mode 0777`}},
		{name: "symlink through a world-writable dir", setup: func(t *testing.T, base string) string {
			w := mkdir(t, filepath.Join(base, "w"), 0o777)
			mkdir(t, filepath.Join(w, "real"), 0o700)
			os.Symlink(filepath.Join(w, "real"), filepath.Join(base, "link"))
			return filepath.Join(base, "link")
		}, want: []string{`"BASE/w" on its path has mode 0777`}},
		{name: "symlink to another uid's dir in a sticky dir", root: true, setup: func(t *testing.T, base string) string {
			tmp := mkdir(t, filepath.Join(base, "tmp"), fs.ModeSticky|0o777)
			d := mkdir(t, filepath.Join(tmp, "theirs"), 0o700)
			chown(t, d, nobody)
			os.Symlink(d, filepath.Join(tmp, "hive-x"))
			chown(t, filepath.Join(tmp, "hive-x"), nobody)
			return filepath.Join(tmp, "hive-x")
		}, want: []string{"owned by uid 65534, not by you"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				needRoot(t)
			}
			base := tempDir(t)
			dir := tc.setup(t, base)
			err := Secure(dir)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Secure(%s) = %v, want nil", dir, err)
				}
				return
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.ReplaceAll(w, "BASE", base)
			}
			wantInsecure(t, err, want...)
		})
	}
}

func TestSecureMissing(t *testing.T) {
	base := tempDir(t)
	err := Secure(filepath.Join(base, "a", "b"))
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInsecure) {
		t.Errorf("missing dir under a private one: %v, want ErrNotExist", err)
	}
	w := mkdir(t, filepath.Join(base, "w"), 0o777)
	wantInsecure(t, Secure(filepath.Join(w, "a", "b")), `"`+w+`" on its path has mode 0777`)
}

func TestCreate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	base := tempDir(t)
	dir := filepath.Join(base, "a", "b", "hive")
	if err := (Layout{Dir: dir}).Create(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), dir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode() != fs.ModeDir|0o700 {
			t.Errorf("%s: %v %v, want a 0700 dir", d, fi.Mode(), err)
		}
	}
	if err := (Layout{Dir: dir}).Create(); err != nil {
		t.Errorf("second Create: %v", err)
	}

	w := mkdir(t, filepath.Join(base, "w"), 0o777)
	wantInsecure(t, Layout{Dir: filepath.Join(w, "x", "hive")}.Create(), "mode 0777")
	if ents, _ := os.ReadDir(w); len(ents) != 0 {
		t.Errorf("Create under an unsafe parent made %v", ents)
	}
	g := mkdir(t, filepath.Join(base, "g"), 0o770)
	wantInsecure(t, Layout{Dir: g}.Create(), "mode 0770", "chmod 700 "+g)
}

func TestMkdirPrivate(t *testing.T) {
	base := tempDir(t)
	d := filepath.Join(base, "bash-tasks")
	if err := MkdirPrivate(d); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("made %v %v, want a 0700 dir", fi.Mode(), err)
	}
	loose := mkdir(t, filepath.Join(base, "pty"), 0o755)
	if err := MkdirPrivate(loose); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(loose); fi.Mode().Perm() != 0o700 {
		t.Errorf("existing 0755 dir left %v, want 0700", fi.Mode())
	}
	outside := tempDir(t)
	link := filepath.Join(base, "reminders")
	os.Symlink(outside, link)
	wantInsecure(t, MkdirPrivate(link), "is a symlink (to "+`"`+outside+`"`, "remove it")
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	wantInsecure(t, MkdirPrivate(file), "is a regular file, not a directory")
}

// stamp is what a test records of a file outside the state dir to show
// it was not touched.
type stamp struct {
	data  string
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

func stampOf(t *testing.T, path string) stamp {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	return stamp{string(b), fi.Size(), fi.ModTime(), fi.Mode()}
}

// outsideFile makes a 0644 file with content in a dir of its own, with an
// mtime in the past so any write would show.
func outsideFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(tempDir(t), "precious")
	if err := os.WriteFile(p, []byte("precious content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o644)
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(p, past, past)
	return p
}

func TestOpenFile(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := tempDir(t)
	target := outsideFile(t)
	before := stampOf(t, target)
	flags := os.O_CREATE | os.O_TRUNC | os.O_WRONLY

	t.Run("creates 0600", func(t *testing.T) {
		p := filepath.Join(dir, "new")
		f, err := OpenFile(p, flags)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if fi, _ := os.Stat(p); fi.Mode() != 0o600 {
			t.Errorf("created %v with umask 0, want 0600", fi.Mode())
		}
		fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK != 0 {
			t.Errorf("descriptor flags %#x %v: want blocking", fl, err)
		}
		fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
		if err != nil || fd&unix.FD_CLOEXEC == 0 {
			t.Errorf("descriptor flags %#x %v: want close-on-exec", fd, err)
		}
	})
	t.Run("fixes an open mode and truncates", func(t *testing.T) {
		p := filepath.Join(dir, "loose")
		os.WriteFile(p, []byte("old"), 0o644)
		os.Chmod(p, 0o4666)
		f, err := OpenFile(p, flags)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if fi, _ := os.Stat(p); fi.Mode() != 0o600 || fi.Size() != 0 {
			t.Errorf("after open: %v, %d bytes; want 0600, truncated", fi.Mode(), fi.Size())
		}
	})
	t.Run("appends without truncating", func(t *testing.T) {
		p := filepath.Join(dir, "log")
		os.WriteFile(p, []byte("a\n"), 0o600)
		f, err := OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("b\n")
		f.Close()
		if b, _ := os.ReadFile(p); string(b) != "a\nb\n" {
			t.Errorf("log holds %q", b)
		}
	})
	refusals := []struct {
		name  string
		setup func(p string) // makes p
		want  string
	}{
		{"symlink to a file outside", func(p string) { os.Symlink(target, p) }, "is a symlink (to " + `"` + target + `")`},
		{"dangling symlink", func(p string) { os.Symlink(target+".new", p) }, "is a symlink"},
		{"hard link to a file outside", func(p string) { os.Link(target, p) }, "has 2 hard links"},
		{"named pipe", func(p string) { syscall.Mkfifo(p, 0o600) }, "is a named pipe, not a regular file"},
		{"directory", func(p string) { os.Mkdir(p, 0o700) }, "is a directory, not a regular file"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			tc.setup(p)
			for _, fl := range []int{flags, os.O_RDONLY, os.O_RDWR | os.O_APPEND} {
				f, err := OpenFile(p, fl)
				if err == nil {
					f.Close()
				}
				wantInsecure(t, err, `file "`+p+`"`, tc.want, "remove it")
			}
			if after := stampOf(t, target); after != before {
				t.Errorf("file outside touched: %+v, was %+v", after, before)
			}
			if _, err := os.Lstat(target + ".new"); err == nil {
				t.Errorf("a dangling symlink's target was created")
			}
		})
	}
	t.Run("another uid's file", func(t *testing.T) {
		needRoot(t)
		p := filepath.Join(dir, "theirs")
		os.WriteFile(p, []byte("theirs"), 0o644)
		chown(t, p, nobody)
		_, err := OpenFile(p, flags)
		wantInsecure(t, err, "owned by uid 65534, not by you (uid 0)")
		if b, _ := os.ReadFile(p); string(b) != "theirs" {
			t.Errorf("another uid's file was truncated: %q", b)
		}
	})
	t.Run("missing without O_CREATE", func(t *testing.T) {
		_, err := OpenFile(filepath.Join(dir, "nope"), os.O_RDONLY)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want ErrNotExist", err)
		}
	})
}

func TestSecureFile(t *testing.T) {
	dir := tempDir(t)
	if err := SecureFile(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(dir, "hive.db")
	os.WriteFile(p, []byte("db"), 0o644)
	os.Chmod(p, 0o644)
	if err := SecureFile(p); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	if b, _ := os.ReadFile(p); string(b) != "db" {
		t.Errorf("content changed to %q", b)
	}
	target := outsideFile(t)
	before := stampOf(t, target)
	os.Symlink(target, p+"-wal")
	wantInsecure(t, SecureFile(p+"-wal"), "is a symlink")
	if after := stampOf(t, target); after != before {
		t.Errorf("file outside touched: %+v, was %+v", after, before)
	}
}

func TestReplaceFile(t *testing.T) {
	dir := tempDir(t)
	target := outsideFile(t)
	before := stampOf(t, target)
	p := filepath.Join(dir, "hyperhive-status")
	os.Symlink(target, p)
	if err := ReplaceFile(p, []byte("busy")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after replace: %v %v, want a 0600 regular file", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(p); string(b) != "busy" {
		t.Errorf("status holds %q", b)
	}
	if after := stampOf(t, target); after != before {
		t.Errorf("the symlink's target was written: %+v, was %+v", after, before)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d entries, want only the status file (no temp files)", len(ents))
	}
}
