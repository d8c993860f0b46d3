//go:build unix

package holder

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/output"
)

// Jobs a daemon starts itself and the holder keeps (protocol 3, OpKeep;
// docs/architecture.md, "the daemon forks, the holder keeps"): the
// daemon pumps and waits for them, and the holder holds their pidfds
// and duplicates of their pipes' read ends, and cgroups it lent the
// daemon for them (EvSpares). Once the daemon's process is gone (its
// connection ended and its pidfd says it exited), or it lets them go
// (OpTake), the holder takes each over (job.TakeHeld): from then on it
// is a held job like one the holder started.

// kept is a job a daemon keeps with the holder, until it is taken over
// or the daemon's ack of its end.
type kept struct {
	k                 wire.Kept
	pidfd, outR, errR int
	daemon            int          // the pid of the daemon that started it
	end               *wire.JobEnd // its end as the daemon told it (OpKeptEnd)
	stop              *keptStop    // its daemon stops it (OpStop)
}

// keptStop is a kept job's stop as its daemon told it: when the holder
// read it, its grace, whether any stop forced it.
type keptStop struct {
	at    time.Time
	grace time.Duration
	force bool
}

// defaultStopGrace is the time between SIGINT and SIGKILL of a stop
// (OpStop) that names none.
const defaultStopGrace = 10 * time.Second

// stopGrace is the grace a stop request asks, or defaultStopGrace.
func stopGrace(req wire.Request) time.Duration {
	if req.Grace != nil {
		return *req.Grace
	}
	return defaultStopGrace
}

// stopKeptLocked notes that kept job k's daemon stops it (OpStop): the
// first stop's time and grace, SIGKILL if any forces. The caller holds
// s.mu.
func stopKeptLocked(k *kept, req wire.Request) {
	if k.stop == nil {
		k.stop = &keptStop{at: time.Now(), grace: stopGrace(req)}
	}
	k.stop.force = k.stop.force || req.Force
}

// keeper is a daemon that may keep jobs with the holder: its pidfd,
// and the cgroups lent to it.
type keeper struct {
	pid   int
	pidfd *os.File
	lent  map[string]bool
	epoch int  // the cgroups' epoch when they were lent (JobCgroups.Epoch)
	gone  bool // it exited: its jobs were taken over
	watch bool // a goroutine waits for its exit
}

// spareLoan is how many cgroups a daemon that keeps jobs has at hand.
// Those its kept jobs took are lent again once half the loan is taken,
// together: one message to the daemon every spareLoan/2 jobs, not one a
// job (a message is a wake-up of the daemon, while the job it just
// started runs). A job is kept after its answer (job.keptLater), the
// holder lends once it has read the keep, and its worker makes spares
// workDelay after a poke: calls made back to back ran out of a loan of
// four (BenchmarkBackToBack: 16 % of one client's calls and 43 % of
// three clients' at once were then the holder's spawn, slower), of
// eight 0.5 % and 21 %, of sixteen none and 2 %. An empty cgroup costs
// the kernel a few KiB.
const spareLoan = 16

// fdConn reads a daemon's connection with the descriptors that come with
// its lines (SCM_RIGHTS) queued in order: a line that carries some takes
// them from the queue (they arrive with its first byte, before the line
// is read whole).
type fdConn struct {
	*net.UnixConn
	mu  sync.Mutex
	fds []int
	oob []byte
}

func (c *fdConn) Read(p []byte) (int, error) {
	n, oobn, _, _, err := c.ReadMsgUnix(p, c.oob)
	n = max(n, 0) // -1 with some errors
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(c.oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if fds, ferr := unix.ParseUnixRights(&m); ferr == nil {
					// Close-on-exec already: the net package receives
					// them so (MSG_CMSG_CLOEXEC, or its own fcntl where
					// there is no such flag); TestKeptFDsCloseOnExec.
					c.mu.Lock()
					c.fds = append(c.fds, fds...)
					over := len(c.fds) > maxQueuedFDs
					c.mu.Unlock()
					if over && err == nil {
						// Descriptors no keep line takes: a daemon that
						// cannot count, or one that would fill the
						// holder's table. Its connection ends.
						err = errors.New("a daemon sent more descriptors than its lines take")
					}
				}
			}
		}
	}
	return n, err
}

// maxQueuedFDs bounds the descriptors a connection has sent and no line
// has taken yet: a keep carries three.
const maxQueuedFDs = 3 * 64

// take takes n descriptors from the queue, in order.
func (c *fdConn) take(n int) ([]int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fds) < n {
		return nil, false
	}
	fds := append([]int(nil), c.fds[:n]...)
	c.fds = c.fds[n:]
	return fds, true
}

// closeAll closes what no line took.
func (c *fdConn) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

// lend lends kp up to n spares and tells it so; the caller holds
// s.lendMu (one loan at a time, counted from what is lent). Spares lent
// before the generation was written to (a new epoch) are taken back
// first: the daemon drops them (Void) and gets new ones.
func (s *server) lend(sc *serverConn, kp *keeper, n int) {
	if s.o.Cgroups == nil {
		return
	}
	epoch := s.o.Cgroups.Epoch()
	s.mu.Lock()
	var void []string
	if epoch != kp.epoch {
		for p := range kp.lent {
			void = append(void, p)
		}
		kp.lent = map[string]bool{}
		kp.epoch = epoch
		n = spareLoan
	}
	s.mu.Unlock()
	if len(void) > 0 {
		s.o.Cgroups.Unlend(void)
	}
	if n <= 0 && len(void) == 0 {
		return
	}
	paths := s.o.Cgroups.Lend(n)
	s.mu.Lock()
	for _, p := range paths {
		kp.lent[p] = true
	}
	s.mu.Unlock()
	if len(paths) > 0 || len(void) > 0 {
		sc.send(wire.Message{Ev: wire.EvSpares, Spares: paths, Void: len(void) > 0})
	}
}

// killed answers OpKilled: whether a kept job's lent cgroup was written
// cgroup.kill (up to the wait asked), and lends anew if that renewed
// the spares.
func (s *server) killed(sc *serverConn, req wire.Request, pid int) {
	wait := cgroupKilledWait
	if req.Grace != nil {
		wait = min(max(*req.Grace, 0), time.Second)
	}
	killed := s.o.Cgroups.Killed(req.ID, wait)
	s.mu.Lock()
	kp := s.keepers[pid]
	s.mu.Unlock()
	if kp != nil {
		s.lendMu.Lock()
		s.lend(sc, kp, 0) // spares of a written generation go before the answer
		s.lendMu.Unlock()
	}
	sc.send(wire.Message{Re: req.Seq, Killed: killed})
}

// cgroupKilledWait is how long OpKilled waits by default.
const cgroupKilledWait = 100 * time.Millisecond

// keep keeps the job a keep line tells, with its descriptors; a keep
// that carries the job's end (protocol 6: it ended before it was kept)
// carries none, and is kept as a kept job whose end was told.
func (s *server) keep(sc *serverConn, fc *fdConn, req wire.Request, pid int) {
	fds, ok := []int{-1, -1, -1}, true
	if req.End == nil {
		fds, ok = fc.take(3)
	}
	var err error
	switch {
	case !ok:
		err = errdefs.New(errdefs.ErrInvalid, "keep: the line carries no pidfd and pipes")
	case req.Keep == nil || req.Keep.Spec.ID == "" || req.Keep.Start.Pid <= 0:
		err = errdefs.New(errdefs.ErrInvalid, "keep: the job's id and its leader's pid are required")
	case req.End != nil && req.End.ID != req.Keep.Spec.ID:
		err = errdefs.New(errdefs.ErrInvalid, fmt.Sprintf("keep: end.id %q: must be the kept job's id %q", req.End.ID, req.Keep.Spec.ID))
	case !s.keeps:
		err = errdefs.New(errdefs.ErrUnavailable, "keep: this holder keeps no job it did not start")
	}
	var kp *keeper
	if err == nil {
		id := req.Keep.Spec.ID
		s.mu.Lock()
		kp = s.keepers[pid]
		switch {
		case kp == nil || kp.gone:
			err = errdefs.New(errdefs.ErrInvalid, "keep: from no daemon that may keep jobs")
		case s.jobs[id] != nil || s.reserved[id]:
			err = errdefs.New(errdefs.ErrConflict, fmt.Sprintf("keep: %q is held already", id))
		case s.stop:
			err = errdefs.New(errdefs.ErrUnavailable, "keep: the holder is stopping")
		default:
			k := &kept{k: *req.Keep, pidfd: fds[0], outR: fds[1], errR: fds[2], daemon: pid}
			if req.End != nil {
				e := *req.End
				k.end = &e
			}
			s.jobs[id] = &held{k: k}
			if slot := req.Keep.Start.Cgroup; slot != "" && kp.lent[slot] {
				delete(kp.lent, slot)
				s.o.Cgroups.Adopt(id, slot)
			}
		}
		s.mu.Unlock()
	}
	if err != nil {
		closeFDs(fds)
		s.log.Warn("a job to keep was refused", "err", err)
		sc.send(wire.Message{Re: req.Seq, Error: err.Error(), Code: errdefs.Code(err)})
		return
	}
	if req.Keep.Start.Cgroup != "" {
		s.topUp(sc, kp)
	}
}

// topUp lends daemon kp, connected on sc, what its loan lacks once half
// of it is taken (one message every spareLoan/2 jobs, not every job),
// as much as the holder has: with none at hand (the holder's own spawns
// take them too), the worker's next spares are lent (OnSpares, topUpNow);
// lent only on a keep, a daemon left with none started every job through
// the holder's spawn from then on, and kept none again. A superseded
// connection's daemon is told nothing more.
func (s *server) topUp(sc *serverConn, kp *keeper) {
	if sc.superseded.Load() {
		return
	}
	s.lendMu.Lock()
	defer s.lendMu.Unlock()
	s.mu.Lock()
	n := spareLoan - len(kp.lent)
	gone := kp.gone
	s.mu.Unlock()
	if gone {
		return
	}
	if n < spareLoan/2 {
		n = 0 // lent again with the next: lend still voids a written generation's
	}
	s.lend(sc, kp, n)
}

// topUpNow tops up the loan of the daemon connected now (OnSpares).
func (s *server) topUpNow() {
	s.mu.Lock()
	sc := s.conn
	var kp *keeper
	if sc != nil {
		kp = s.keepers[sc.pid]
	}
	s.mu.Unlock()
	if kp != nil {
		s.topUp(sc, kp)
	}
}

// forget drops kept job id, k (its daemon recorded its end, or told it
// before it died): the descriptors close, its cgroup goes.
func (s *server) forget(id string, k *kept) {
	closeFDs([]int{k.pidfd, k.outR, k.errR})
	s.o.Cgroups.End(id, 0, false)
}

// closeFDs closes fds, but the -1 of a keep that carried none.
func closeFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// takeOver makes the kept job id a held one (job.TakeHeld) from the
// counts at; the caller holds s.mu. It returns the job to wait for.
func (s *server) takeOverLocked(id string, h *held, at [2]output.Stats) *job.HeldProc {
	k := h.k
	h.k, h.record = nil, k.k.Record
	if k.end != nil {
		// It ended, and its daemon told how: that end it is (the next
		// daemon records what this one answered).
		s.forget(id, k)
		h.end, h.start = k.end, &k.k.Start
		return nil
	}
	var endCgroup func(time.Duration) int
	if k.k.Start.Cgroup != "" {
		endCgroup = func(grace time.Duration) int { return s.o.Cgroups.End(id, grace, true) }
	}
	p, err := job.TakeHeld(k.k.Spec, k.k.Start, k.pidfd, k.outR, k.errR, at, endCgroup, s.log, func() { s.wrote(id, false) })
	if err != nil {
		s.log.Warn("could not take over a kept job", "job", id, "err", err)
		end := wire.JobEnd{ID: id, Error: "the holder could not take it over from the daemon that started it: " + err.Error(), Ended: time.Now()}
		h.end, h.start = &end, &k.k.Start
		return nil
	}
	if st := k.stop; st != nil {
		p.GoOnStopping(st.at, st.force, st.grace)
	}
	h.p = p
	return p
}

// takeOver takes over the kept jobs of daemon pid (all of them when
// ids is nil), each from its counts in at (none: from its files).
func (s *server) takeOver(pid int, ids map[string][2]output.Stats) int {
	type started struct {
		id string
		h  *held
		p  *job.HeldProc
	}
	var taken []started
	var told []wire.JobEnd
	s.mu.Lock()
	for id, h := range s.jobs {
		if h.k == nil || h.k.daemon != pid {
			continue
		}
		at, ok := ids[id]
		if ids != nil && !ok {
			continue
		}
		if p := s.takeOverLocked(id, h, at); p != nil {
			taken = append(taken, started{id, h, p})
		} else if h.end != nil {
			told = append(told, *h.end)
		}
	}
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		for _, e := range told {
			conn.send(wire.Message{Ev: wire.EvEnd, ID: e.ID, End: &e})
		}
	}
	for _, t := range taken {
		go func() { s.ended(t.id, t.h, t.p.Wait()) }()
	}
	if len(taken) > 0 {
		s.log.Info("took over the jobs a daemon started", "daemon", pid, "jobs", len(taken))
	}
	return len(taken)
}

// keptEnd keeps the end of a kept job its daemon tells (OpKeptEnd).
func (s *server) keptEnd(req wire.Request) {
	if req.End == nil {
		return
	}
	e := *req.End
	s.mu.Lock()
	if h := s.jobs[req.ID]; h != nil && h.k != nil {
		e.ID = req.ID
		h.k.end = &e
	}
	s.mu.Unlock()
}

// take answers OpTake: the daemon lets the jobs listed go.
func (s *server) take(sc *serverConn, req wire.Request, pid int) {
	ids := map[string][2]output.Stats{}
	for _, x := range req.Take {
		ids[x.ID] = [2]output.Stats{x.Stdout.Stats(false), x.Stderr.Stats(false)}
	}
	s.takeOver(pid, ids)
	sc.send(wire.Message{Re: req.Seq})
}

// keepsOfLocked reports whether daemon pid keeps a job with the holder.
func (s *server) keepsOfLocked(pid int) bool {
	for _, h := range s.jobs {
		if h.k != nil && h.k.daemon == pid {
			return true
		}
	}
	return false
}

// closeKeepers ends the waits for the daemons that keep jobs: the holder
// ends.
func (s *server) closeKeepers() {
	s.mu.Lock()
	kps := s.keepers
	s.keepers = map[int]*keeper{}
	s.mu.Unlock()
	for _, kp := range kps {
		kp.pidfd.Close()
	}
}

// The holder's client is what a job.Manager keeps its jobs with.
var _ job.Keeper = (*Client)(nil)
