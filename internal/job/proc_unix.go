//go:build unix

package job

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
)

// stoppedWhat is what a stop ends, as a job's meaning says it: the
// whole process group (and, with cgroups, the job's cgroup).
const stoppedWhat = "its process group"

// jobSignal is a signal a stop sends a job's group.
type jobSignal = syscall.Signal

var (
	sigInt  = syscall.SIGINT
	sigKill = syscall.SIGKILL
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// attachTree has nothing to do here: the process group (and the cgroup)
// hold the job's processes from its start.
func attachTree(pid int) error { return nil }

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		syscall.Kill(-pgid, sig)
	}
}

// exitStatus is the exit code as bash reports it: 128+n after signal n.
func exitStatus(ps *os.ProcessState) (int, *int) {
	if ps == nil {
		return -1, nil
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		n := int(ws.Signal())
		return 128 + n, &n
	}
	return ps.ExitCode(), nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	if fi.Mode()&0o111 == 0 {
		return os.ErrPermission
	}
	return nil
}

func candidates(p string) []string { return []string{p} }

// cleanupGroup terminates what is left in group pgid after its leader
// exited: SIGTERM, up to grace, then SIGKILL. It returns how many
// processes were left.
func cleanupGroup(pgid int, grace time.Duration) int {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return 0 // the group is gone: no need to scan the process table
	}
	left := groupMembers(pgid)
	if len(left) == 0 {
		return 0
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if !waitGroupGone(pgid, grace) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		waitGroupGone(pgid, time.Second)
	}
	return len(left)
}

// waitGroupGone polls until no live process is in group pgid. The members
// are not our children (their parent was the leader), so there is nothing
// to wait on but the process table.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if syscall.Kill(-pgid, 0) == syscall.ESRCH || len(groupMembers(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// findOrphans finds, in one scan of the process table, what the jobs of a
// daemon that died left running, and returns them pinned with, for each,
// the id of the job it belongs to. Only processes proven to be a job's are
// taken:
//   - a job's leader, by its recorded pid and start time in this boot
//     (start times count from the boot: another boot's prove nothing);
//   - while that leader still holds its pid, the members of its group
//     (a live leader's group id is its own);
//   - any other process by the job's mark in its environment
//     (HIVE_JOB_OWNER=owner and HIVE_JOB_ID=<id>) where the job is one
//     of those left (ids in left) or one the store never recorded (not in
//     known: its daemon died before writing it). A process whose mark
//     names a job that ended normally is left alone: that daemon let it go
//     (a job may start a daemon of its own), and so does this one. PTY
//     sessions' processes (no HIVE_JOB_ID) are the pty package's.
func findOrphans(left []store.Job, known map[string]bool, owner, boot string) ([]proc.Pinned, []string) {
	var targets []proc.Pinned
	var jobOf []string
	add := func(p proc.Pinned, id string) { targets, jobOf = append(targets, p), append(jobOf, id) }
	leftIDs := map[string]bool{}
	type leader struct {
		id    string
		start uint64
	}
	leaders := map[int]leader{} // by pid (the group id), proven alive
	for _, rec := range left {
		leftIDs[rec.ID] = true
		if rec.State != string(Running) || rec.Pid <= 0 || rec.PidStart == 0 || boot == "" || rec.BootID != boot {
			continue
		}
		if p, ok := proc.Pin(rec.Pid, func(s proc.Stat) bool { return s.Start == rec.PidStart }); ok {
			add(p, rec.ID)
			leaders[rec.Pid] = leader{rec.ID, rec.PidStart}
		}
	}
	self := os.Getpid()
	ownerMark := EnvJobOwner + "=" + owner
	members := map[int][]proc.Pinned{} // by leader
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pid != self }) {
		if _, isLeader := leaders[st.Pid]; isLeader {
			continue
		}
		if _, ok := leaders[st.Pgrp]; ok {
			pgrp := st.Pgrp
			if p, ok := proc.Pin(st.Pid, func(s proc.Stat) bool { return s.Pgrp == pgrp }); ok {
				members[pgrp] = append(members[pgrp], p)
				continue
			}
		}
		if owner == "" {
			continue
		}
		id, ok := proc.Getenv(st.Pid, EnvJobID)
		if !ok || !(leftIDs[id] || !known[id]) {
			continue
		}
		if p, ok := proc.Pin(st.Pid, func(proc.Stat) bool { return proc.HasEnv(st.Pid, ownerMark) }); ok {
			add(p, id)
		}
	}
	// Members count only if their leader still held its pid after they
	// were read: the group id was then its own, not a reused number.
	for pgrp, ms := range members {
		l := leaders[pgrp]
		if st, ok := proc.Read(pgrp); ok && st.Start == l.start {
			for _, p := range ms {
				add(p, l.id)
			}
			continue
		}
		for _, p := range ms {
			p.Close()
		}
	}
	return targets, jobOf
}

// readToEnd reads what the pipe r, which has no deadline set, holds
// right now into s (readNow), with a buffer of the pumps' pool.
func readToEnd(r *os.File, s io.Writer) bool {
	bp := smallBufPool.Get().(*[]byte)
	defer smallBufPool.Put(bp)
	return readNow(r, s, *bp)
}

// drainNow reads what the pipe r holds right now, without waiting for more.
func drainNow(r *os.File, s io.Writer, buf []byte) {
	r.SetReadDeadline(time.Time{})
	readNow(r, s, buf)
}

// readNow reads what the pipe r holds right now into s, without waiting
// for more, and reports whether it reached the pipe's end (every writer
// gone). A read that fails otherwise is an end too, as a pump's.
func readNow(r *os.File, s io.Writer, buf []byte) (ended bool) {
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), buf)
			switch {
			case n > 0:
				s.Write(buf[:n])
			case err == syscall.EINTR:
			case err == syscall.EAGAIN:
				return true // empty now: more may come
			default:
				ended = true // EOF, or a failed read
				return true
			}
		}
	})
	return ended
}

// splicer is a stream that takes its bytes straight from a pipe
// (output.Stream.SpliceFrom, and an index's writer of one).
type splicer interface {
	SpliceFrom(pipeFD, max int) (int, error)
}

// spliceMax is the most a splice moves at once: a tuned pipe's size.
const spliceMax = 1 << 20

// splicedReader moves what r holds into to's file (splicer.SpliceFrom)
// and returns how much, waiting as r.Read does, deadlines included:
// (0, io.EOF) at r's end, output.ErrNoSplice once to's bytes must be
// read and written. nil if to is no splicer or r has no raw descriptor.
func splicedReader(r *os.File, to io.Writer) func() (int, error) {
	sp, ok := to.(splicer)
	if !ok {
		return nil
	}
	rc, err := r.SyscallConn()
	if err != nil {
		return nil
	}
	return func() (int, error) {
		var n int
		var serr error
		if err := rc.Read(func(fd uintptr) bool {
			n, serr = sp.SpliceFrom(int(fd), spliceMax)
			return !errors.Is(serr, syscall.EAGAIN) // nothing yet: wait
		}); err != nil {
			return 0, err
		}
		if n == 0 && serr == nil {
			return 0, io.EOF
		}
		return n, serr
	}
}

// drainSpliced moves what r holds now into to's file without waiting (a
// stopped pump's last take, as drainNow): false, with nothing moved
// since, once to's bytes must be read and written (drainNow then).
func drainSpliced(r *os.File, to io.Writer) bool {
	sp, ok := to.(splicer)
	if !ok {
		return false
	}
	r.SetReadDeadline(time.Time{})
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	spliced := true
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := sp.SpliceFrom(int(fd), spliceMax)
			if errors.Is(err, output.ErrNoSplice) {
				spliced = false
				return true
			}
			if n <= 0 || err != nil {
				return true // done: empty (EAGAIN), EOF or an error
			}
		}
	})
	return spliced
}

// pooledReader reads r as r.Read does, deadlines included, into a buffer
// of pool (*bp) taken only once r has something to read: while it waits
// in the runtime's poller, *bp is nil. nil if r has no raw descriptor.
func pooledReader(r *os.File) func(pool *sync.Pool, bp **[]byte) (int, error) {
	rc, err := r.SyscallConn()
	if err != nil {
		return nil
	}
	return func(pool *sync.Pool, bp **[]byte) (int, error) {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			if *bp == nil {
				*bp = pool.Get().(*[]byte)
			}
			for {
				n, rerr = syscall.Read(int(fd), **bp)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				pool.Put(*bp) // nothing yet: wait holding nothing
				*bp = nil
				return false
			}
			return true
		})
		switch {
		case err != nil: // a deadline, or the file closed
			return 0, err
		case rerr != nil:
			return 0, rerr
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// bulkReader reads a pipe that pours (past bulkOutput) as r.Read does,
// deadlines included, but waits for data in poll(2) on the calling
// thread instead of in the runtime's poller: the writer's wake-up goes
// straight to the thread that reads, as a C reader's would. Through the
// poller each wake-up passes through another thread first; with the job
// and the reader on two CPUs that doubled the context switches and
// tripled the migrations of some 1 GiB captures (and their time). After
// bulkQuiet with nothing to read (or a failing poll) it returns
// errQuiet: the stream goes back to the poller, which waits for free.
func bulkReader(r *os.File) func([]byte) (int, error) {
	rc, err := r.SyscallConn()
	if err != nil {
		return nil
	}
	return func(buf []byte) (int, error) {
		for {
			var n int
			var rerr error
			quiet := false
			err := rc.Read(func(fd uintptr) bool {
				n, rerr = syscall.Read(int(fd), buf)
				if rerr == syscall.EAGAIN {
					fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
					k, perr := unix.Poll(fds, int(bulkQuiet/time.Millisecond))
					quiet = k == 0 || (perr != nil && perr != unix.EINTR)
				}
				return true
			})
			switch {
			case err != nil: // a deadline, or the file closed
				return 0, err
			case quiet:
				return 0, errQuiet
			case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
				continue
			case rerr != nil:
				return 0, rerr
			case n == 0:
				return 0, io.EOF
			}
			return n, nil
		}
	}
}
