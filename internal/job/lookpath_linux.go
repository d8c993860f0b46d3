package job

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyWatcher watches directories with inotify and calls onChange on
// any change in them.
type inotifyWatcher struct {
	fd       int
	f        *os.File // fd, in the poller (never f.Fd(): that would make it blocking)
	onChange func()
	done     chan struct{}

	mu   sync.Mutex
	dirs map[string]int // watched dir → watch descriptor (names of one dir share it)
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

func newDirWatcher(onChange func()) dirWatcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &inotifyWatcher{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), onChange: onChange,
		done: make(chan struct{}), dirs: map[string]int{}}
	go w.loop()
	return w
}

func (w *inotifyWatcher) add(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.dirs[dir]; ok {
		return true
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		return false
	}
	w.dirs[dir] = wd
	return true
}

func (w *inotifyWatcher) loop() {
	defer close(w.done)
	buf := make([]byte, 16<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_IGNORED != 0 {
				// The directory is gone (or moved): watch it again when
				// a PATH names it next.
				w.mu.Lock()
				for dir, wd := range w.dirs { // every name of it (symlinks)
					if wd == int(ev.Wd) {
						delete(w.dirs, dir)
					}
				}
				w.mu.Unlock()
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		w.onChange() // also on IN_Q_OVERFLOW: forget everything
	}
}

func (w *inotifyWatcher) close() {
	w.f.Close()
	<-w.done
}
