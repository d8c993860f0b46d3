//go:build unix

package holder

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/pty"
)

// ClientOptions configures Open.
type ClientOptions struct {
	// Socket is the holder's socket (<state>/holder.sock). Required.
	Socket string
	// Command is the argv that starts a holder when none answers; nil
	// starts none (Open then fails).
	Command []string
	// Log receives a started holder's output (the daemon's log file).
	Log string
	// Build is the daemon's build, said in its hello.
	Build  string
	Logger *slog.Logger
	// Timeout bounds the answer to one request (held, quit, pty_close).
	// If zero, 30 s.
	Timeout time.Duration
	// SpawnTimeout bounds the answer to a spawn (a job's or a PTY
	// session's) and to a stop, which a holder gives at once (a fork, a
	// signal: well under a millisecond), and the writes of acks. If
	// zero, 3 s. A call the holder has not answered by then fails with
	// an error wrapping ErrNotAnswering, unless the holder is seen
	// working (see working): then it waits a bound more, and so on up to
	// Timeout. A spawn the holder makes after its caller gave up is
	// undone (see Client.late); a holder that reads the spawn after
	// Timeout refuses it (wire.Request.Deadline).
	SpawnTimeout time.Duration
}

// Client is a daemon's connection to its holder (job.Holder). When the
// holder dies, the sink hears HolderLost, and the next Spawn starts a new
// holder.
type Client struct {
	o   ClientOptions
	log *slog.Logger

	mu    sync.Mutex
	conn  net.Conn
	w     *bufio.Writer
	hello wire.Hello // the holder's
	proto int        // the version spoken on conn
	// envSent are the environments defined on conn (wire.JobSpec.EnvRef):
	// a next spawn names them.
	envSent map[string]bool
	// keeps: the holder on conn keeps jobs this daemon starts itself
	// (protocol 3, wire.Hello.Keeps); spares are the cgroups it lent
	// for them, not taken yet.
	keeps  bool
	spares []string
	lends  atomic.Int64 // the holder's messages lending spares (Lends)
	// out are the spares taken (Spare) and not used yet: one whose job
	// did not start is given back (Unspare) unless voided since.
	out map[string]bool
	// sentHook, if set (by tests), sees each request's line as it is
	// written, under mu.
	sentHook func([]byte)
	// keepHook, if set (by tests), sees each keep's message (the acks
	// that go with it, then the keep line) as it is written, under mu.
	keepHook func([]byte)
	seq      uint64
	pending  map[uint64]chan reply
	sink     job.HeldSink
	early    []wire.Message // events before Listen
	ptySink  pty.PTYSink
	ptyEarly []wire.Message // events of sessions before ListenPTY

	// abandoned are the spawns whose callers stopped waiting (by seq,
	// under mu), on the connection they went on: should the answer
	// come, what the holder started is undone (late).
	abandoned map[uint64]abandonedCall

	// Acks not written yet (see Ack), under ackMu, which is taken after
	// mu, never before.
	ackMu     sync.Mutex
	acks      []string
	ackArmed  bool          // a flushAcks is due
	ackTimer  *time.Timer   // runs flushAcks; stopped when a request takes the acks
	ackWait   time.Duration // ackLinger, unless a test set another
	ackClosed bool
	dead      bool // the connection is gone: the next call dials anew
	closed    bool
	quiting   bool       // a quit was asked: its end is no loss
	lostPid   int        // the holder last found gone (afterLoss), under mu
	dialMu    sync.Mutex // one reconnect at a time
	// redialErr is the last failed redial (under dialMu), at redialAt.
	redialErr error
	redialAt  time.Time

	// Events go to the sinks in order from a queue of their own, so the
	// reader never waits for a sink (which may wait for a lock whose
	// holder waits for an answer only the reader can deliver).
	qmu     sync.Mutex
	qcond   *sync.Cond
	queue   []func()
	qclosed bool
	qdone   chan struct{}
}

// Open connects to the holder of o.Socket, starting one with o.Command if
// none answers. A holder of an incompatible protocol gives an error
// wrapping ErrIncompatible: it is left as it is, its jobs running.
func Open(o ClientOptions) (*Client, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.SpawnTimeout <= 0 {
		o.SpawnTimeout = 3 * time.Second
	}
	c := &Client{o: o, log: o.Logger, pending: map[uint64]chan reply{}, abandoned: map[uint64]abandonedCall{}, qdone: make(chan struct{})}
	c.qcond = sync.NewCond(&c.qmu)
	if err := c.connect(); err != nil {
		return nil, err
	}
	go c.dispatch()
	return c, nil
}

// Info is the holder's hello.
func (c *Client) Info() wire.Hello {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// connect dials the holder (starting one if none answers) and says hello.
// A file at the holder's socket or lock that is not what hive makes (a
// regular file planted there, a symlink) is refused first, named, and
// left as it is: a holder started over it could not serve. A holder
// started here that exits before it answers fails the connect at once,
// with its status and where its log is.
func (c *Client) connect() error {
	if err := checkFiles(c.o.Socket); err != nil {
		return err
	}
	_, err := c.dial()
	if err != nil && c.o.Command != nil && !errors.Is(err, ErrIncompatible) && !errors.Is(err, errRefused) && !errors.Is(err, errClosed) {
		var exited <-chan error
		if exited, err = c.start(); err == nil {
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err = c.dial()
				if err == nil || errors.Is(err, ErrIncompatible) || errors.Is(err, errRefused) || errors.Is(err, errClosed) || time.Now().After(deadline) {
					break
				}
				select {
				case werr := <-exited:
					// It may have exited because another holder won
					// the lock: that one answers.
					if _, err = c.dial(); err == nil {
						return nil
					}
					if werr != nil {
						return c.startFailed(werr)
					}
					// It exited 0: another holder held the lock, one on
					// its way out (it no longer listens) or one starting.
					// Another try, until the deadline.
					time.Sleep(20 * time.Millisecond)
					if exited, err = c.start(); err != nil {
						return err
					}
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
	}
	return err
}

// checkFiles refuses a holder socket that is not a socket of this user,
// and a lock file beside it that is a link or not a regular file of
// this user (paths.SecureSocket, paths.SecureFile).
func checkFiles(socket string) error {
	if err := paths.SecureSocket(socket); err != nil {
		return fmt.Errorf("the holder of the jobs: %w", err)
	}
	if err := paths.SecureFile(socket + ".lock"); err != nil {
		return fmt.Errorf("the holder of the jobs: %w", err)
	}
	return nil
}

// startFailed is the error of a holder that exited at its start (werr:
// how): its own words are in its log.
func (c *Client) startFailed(werr error) error {
	how := "exited"
	if werr != nil {
		how = werr.Error()
	}
	if c.o.Log != "" {
		return fmt.Errorf("the holder of the jobs could not start (%s): its error is in %s", how, c.o.Log)
	}
	return fmt.Errorf("the holder of the jobs could not start (%s)", how)
}

// errRefused is a holder that answered, but not to this daemon.
var errRefused = errors.New("the holder refused the connection")

// dial connects and exchanges hellos; on success the connection is c's.
func (c *Client) dial() (net.Conn, error) {
	conn, err := net.DialTimeout("unix", c.o.Socket, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %v", errRefused, err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := readLine(r)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("the holder's hello: %w", err)
	}
	var m wire.Message
	if err := json.Unmarshal(line, &m); err != nil || m.Hello == nil {
		conn.Close()
		return nil, fmt.Errorf("%w: its first line is no hello: %q", errRefused, line)
	}
	if m.Error != "" {
		conn.Close()
		return nil, fmt.Errorf("%w: %s", errRefused, m.Error)
	}
	me := wire.Hello{Proto: wire.Proto, Min: wire.MinProto, Build: c.o.Build, Pid: os.Getpid(), Keeps: keepWanted()}
	proto, err := compatible(me, *m.Hello)
	if err != nil {
		conn.Close()
		return nil, err
	}
	w := bufio.NewWriter(conn)
	b, _ := json.Marshal(wire.Request{Op: wire.OpHello, Hello: &me})
	w.Write(append(b, '\n'))
	if err := w.Flush(); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	c.mu.Lock()
	if c.closed { // Close came during the dial: nothing may outlive it
		c.mu.Unlock()
		conn.Close()
		return nil, errClosed
	}
	c.conn, c.w, c.hello, c.dead = conn, w, *m.Hello, false
	c.proto, c.envSent = proto, nil
	c.keeps, c.spares, c.out = proto >= 4 && m.Hello.Keeps && m.Hello.Instance != "" && me.Keeps, nil, nil
	c.mu.Unlock()
	go c.read(conn, r)
	return conn, nil
}

// start starts a holder, detached: its own session, not this process's
// to wait for beyond its start (proc.Start registers it with the
// daemon's reaper, and a goroutine reaps it should it end while the
// daemon runs).
func (c *Client) start() (exited <-chan error, err error) {
	var out *os.File
	if c.o.Log != "" {
		if f, err := paths.OpenFile(c.o.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY); err == nil {
			out = f
			defer f.Close()
		}
	}
	cmd := exec.Command(c.o.Command[0], c.o.Command[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = holderEnv(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := proc.StartOwn(cmd); err != nil { // with the daemon's timer slack
		return nil, fmt.Errorf("start the holder of the jobs: %w", err)
	}
	c.log.Info("started the holder of the jobs", "pid", cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- proc.Wait(cmd) }()
	return done, nil
}

// holderEnv is env without hive's marks: a holder started by a daemon
// that a job started must not be taken for that job's.
func holderEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "HIVE_" && (hasPrefix(kv, job.EnvJobID+"=") || hasPrefix(kv, job.EnvJobOwner+"=") || hasPrefix(kv, "HIVE_PTY_ID=") || hasPrefix(kv, EnvHolder+"=")) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// read delivers the holder's lines until the connection ends.
func (c *Client) read(conn net.Conn, r *bufio.Reader) {
	for {
		line, err := readLine(r)
		if err != nil {
			break
		}
		var m wire.Message
		if err := json.Unmarshal(line, &m); err != nil {
			c.log.Warn("a bad line from the holder", "err", err)
			continue
		}
		if m.Ev == wire.EvSpares {
			c.lends.Add(1)
			c.mu.Lock()
			if c.conn == conn {
				if m.Void {
					c.spares, c.out = nil, nil
				}
				c.spares = append(c.spares, m.Spares...)
			}
			c.mu.Unlock()
			continue
		}
		if m.Ev != "" {
			c.event(m)
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.Re]
		delete(c.pending, m.Re)
		a, late := c.abandoned[m.Re]
		delete(c.abandoned, m.Re)
		c.mu.Unlock()
		switch {
		case ch != nil:
			ch <- reply{m: m}
		case late:
			c.enqueue(func() { c.late(a.req, m) })
		}
	}
	conn.Close()
	c.mu.Lock()
	// The answers of the spawns given up on this connection never come
	// now: the resync after the reconnect finds what they started.
	for seq, a := range c.abandoned {
		if a.conn == conn {
			delete(c.abandoned, seq)
		}
	}
	if c.conn != conn {
		c.mu.Unlock()
		return
	}
	c.dead = true
	closed := c.closed || c.quiting
	for seq, ch := range c.pending {
		ch <- reply{m: wire.Message{Re: seq}, err: errConnLost}
		delete(c.pending, seq)
	}
	pid := c.hello.Pid
	c.mu.Unlock()
	if closed {
		return
	}
	c.log.Warn("the connection to the holder of the jobs ended: reconnecting", "pid", pid)
	c.enqueue(func() { c.afterLoss(pid) })
}

// errConnLost fails the calls in flight when the connection ends.
var errConnLost = errors.New("the connection to the holder of the jobs ended")

// afterLoss runs (on the event queue) once the connection ended: the
// same holder, if it still answers, gets a new connection and the sinks
// are told to catch up with what it holds (events may have been lost);
// a holder that is gone makes its jobs and sessions lost.
func (c *Client) afterLoss(pid int) {
	var err error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		c.dialMu.Lock()
		c.mu.Lock()
		dead, closed := c.dead, c.closed
		c.mu.Unlock()
		if closed {
			c.dialMu.Unlock()
			return
		}
		if !dead { // a spawn reconnected meanwhile
			c.dialMu.Unlock()
			break
		}
		_, err = c.dial()
		c.dialMu.Unlock()
		// Lost only once the holder is gone: a holder that cannot be
		// reached for a while (no descriptor left here, a stray client's
		// connection) still runs the jobs.
		if err == nil || errors.Is(err, ErrIncompatible) || processGone(pid) {
			break
		}
		time.Sleep(wait)
	}
	c.mu.Lock()
	same := err == nil && !c.dead && c.hello.Pid == pid
	sink, ptySink := c.sink, c.ptySink
	if !same {
		c.lostPid = pid
	}
	c.mu.Unlock()
	if same {
		c.log.Info("reconnected to the holder of the jobs", "pid", pid)
		if r, ok := sink.(interface{ HeldResync() }); ok {
			r.HeldResync()
		}
		if r, ok := ptySink.(interface{ PTYResync() }); ok {
			r.PTYResync()
		}
		return
	}
	c.log.Error("the holder of the jobs is gone", "pid", pid, "err", err)
	if sink != nil {
		sink.HolderLost()
	}
	if ptySink != nil {
		ptySink.PTYHolderLost()
	}
}

// processGone tells whether no process has pid any more (or only a
// zombie: the holder is dead either way).
func processGone(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	if st, ok := proc.Read(pid); ok {
		return !st.Alive()
	}
	return false // no /proc here, or it went between the two looks (the next look says)
}

// enqueue adds f to the event queue.
func (c *Client) enqueue(f func()) {
	c.qmu.Lock()
	c.queue = append(c.queue, f)
	c.qmu.Unlock()
	c.qcond.Signal()
}

// dispatch runs the event queue until Close.
func (c *Client) dispatch() {
	defer close(c.qdone)
	for {
		c.qmu.Lock()
		for len(c.queue) == 0 && !c.qclosed {
			c.qcond.Wait()
		}
		if len(c.queue) == 0 {
			c.qmu.Unlock()
			return
		}
		f := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.qmu.Unlock()
		f()
	}
}

func (c *Client) event(m wire.Message) { c.enqueue(func() { c.deliver(m) }) }

func (c *Client) deliver(m wire.Message) {
	if isPTY(m.ID) {
		c.mu.Lock()
		sink := c.ptySink
		if sink == nil {
			c.ptyEarly = append(c.ptyEarly, m)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		deliverPTY(sink, m)
		return
	}
	c.mu.Lock()
	sink := c.sink
	if sink == nil {
		c.early = append(c.early, m)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	deliver(sink, m)
}

func deliver(sink job.HeldSink, m wire.Message) {
	switch m.Ev {
	case wire.EvProgress:
		if m.Stdout != nil && m.Stderr != nil {
			sink.HeldProgress(m.ID, *m.Stdout, *m.Stderr)
		}
	case wire.EvEnd:
		if m.End != nil {
			sink.HeldEnded(*m.End)
		}
	}
}

// Listen sets who hears the holder's events (job.Manager); events that
// came before are delivered now.
func (c *Client) Listen(sink job.HeldSink) {
	c.mu.Lock()
	c.sink = sink
	early := c.early
	c.early = nil
	c.mu.Unlock()
	for _, m := range early {
		deliver(sink, m)
	}
}

// call sends a request and waits for its answer.
func (c *Client) call(req wire.Request) (wire.Message, error) {
	m, err := c.call1(req)
	if errors.Is(err, errConnLost) && (req.Op == wire.OpHeld || req.Op == wire.OpStop && req.Force) {
		// The connection ended before the answer: a query or a forced
		// stop (which may be repeated; a second SIGINT may not: many
		// programs take it as "abort now") goes again, on a new
		// connection to the same holder if it still runs.
		m, err = c.call1(req)
	}
	return m, err
}

// errClosed is a call after Close.
var errClosed = errors.New("the holder's client is closed")

// call1 is one try of call.
func (c *Client) call1(req wire.Request) (wire.Message, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return wire.Message{}, errClosed
	}
	if c.dead && req.Op != wire.OpSpawn {
		pid := c.hello.Pid
		c.mu.Unlock()
		if err := c.redial(pid); err != nil {
			return wire.Message{}, err
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return wire.Message{}, errClosed
		}
		if c.dead { // lost again already: never a new holder but for a spawn
			c.mu.Unlock()
			return wire.Message{}, errConnLost
		}
	}
	if c.dead {
		c.mu.Unlock()
		// The holder died: a new one for new jobs.
		c.dialMu.Lock()
		c.mu.Lock()
		dead, closed := c.dead, c.closed
		c.mu.Unlock()
		var err error
		switch {
		case closed:
			err = errClosed
		case dead:
			err = c.connect()
		}
		c.dialMu.Unlock()
		if err != nil {
			return wire.Message{}, err
		}
		c.mu.Lock()
	}
	// The bound runs from the request's write. A holder still working
	// when it passes (starved of the processor by its own jobs, not
	// stopped) is waited for up to the hard bound (see working): that
	// is the deadline a spawn carries, for the holder to see when it
	// reads it.
	bound := c.bound(req.Op)
	deadline := time.Now().Add(bound)
	hard := deadline
	if bound < c.o.Timeout {
		hard = time.Now().Add(c.o.Timeout)
	}
	if req.Op == wire.OpSpawn || req.Op == wire.OpPTYSpawn {
		req.Deadline = &hard
	}
	if req.Op == wire.OpSpawn && req.Spawn != nil && req.Spawn.EnvRef != "" {
		req.Spawn = c.envLocked(*req.Spawn)
	}
	c.seq++
	req.Seq = c.seq
	ch := make(chan reply, 1)
	c.pending[req.Seq] = ch
	conn, pid := c.conn, c.hello.Pid
	b, err := json.Marshal(req)
	if err == nil && c.sentHook != nil {
		c.sentHook(b)
	}
	if err == nil {
		conn.SetWriteDeadline(deadline)
		c.writeAcksLocked()
		c.w.Write(append(b, '\n'))
		if err = c.w.Flush(); err != nil {
			// A line cut off cannot be followed by another: the
			// connection is replaced (the reader sees it end).
			conn.Close()
		}
	}
	if err != nil {
		delete(c.pending, req.Seq)
		c.mu.Unlock()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return wire.Message{}, fmt.Errorf("%w (pid %d): %s could not be sent within %v", ErrNotAnswering, pid, req.Op, bound)
		}
		return wire.Message{}, fmt.Errorf("to the holder: %w", err)
	}
	c.mu.Unlock()
	// The holder's processor time is sampled halfway to the bound, not
	// here: a call answered in time (all but a stalled holder's) reads no
	// /proc file.
	t := time.NewTimer(time.Until(deadline) / 2)
	defer t.Stop()
	var cpu uint64
	sampled := false
	waited := bound
wait:
	for {
		select {
		case r := <-ch:
			return answer(r)
		case <-t.C:
		}
		if !sampled {
			cpu, sampled = holderCPU(pid), true
			t.Reset(time.Until(deadline))
			continue
		}
		now, ok := working(pid, cpu)
		left := time.Until(hard)
		if !ok || left <= 0 {
			break wait
		}
		if waited == bound {
			c.log.Info("the holder is slow to answer, but working: the call waits on", "op", req.Op, "pid", pid, "after", bound, "up_to", c.o.Timeout)
		}
		cpu = now
		next := min(bound, left)
		waited += next
		t.Reset(next)
	}
	c.mu.Lock()
	_, waiting := c.pending[req.Seq]
	if waiting {
		delete(c.pending, req.Seq)
		if req.Op == wire.OpSpawn || req.Op == wire.OpPTYSpawn {
			c.abandoned[req.Seq] = abandonedCall{req: req, conn: conn}
		}
	}
	c.mu.Unlock()
	if !waiting {
		// The reader took the answer (or the connection's end) just now:
		// it is on its way.
		return answer(<-ch)
	}
	return wire.Message{}, fmt.Errorf("%w (pid %d): no answer to %s within %v", ErrNotAnswering, pid, req.Op, waited.Round(time.Millisecond))
}

// holderCPU is the processor time the holder of pid has had, in clock
// ticks; 0 where the process table cannot be read.
func holderCPU(pid int) uint64 {
	st, _ := proc.Read(pid)
	return st.CPU
}

// working reports whether the holder of pid, which has not answered
// within a call's bound, is to be waited for another: it runs (is not
// stopped, traced, a zombie or gone) and has had processor time since it
// had since (the holder's CPU at the last sample: halfway to the first
// bound, then at each bound), or has a thread at work now (proc.Busy).
// A holder whose jobs keep two cores
// busy may take seconds to be scheduled for a request, and a spawn it
// would make is worth the wait; a stopped or stuck one is charged
// nothing and fails the call at its bound. Where the process table
// cannot be read nothing tells the two apart, and the bound is final.
func working(pid int, since uint64) (now uint64, ok bool) {
	st, read := proc.Read(pid)
	if !read || !st.Alive() || st.State == 'T' || st.State == 't' {
		return 0, false
	}
	// Charged nothing since may still be at work: a holder whose thread
	// waits in vfork for a child that the loaded processors have not let
	// exec yet (the child is charged, not the holder), or one that waits
	// in the run queue, is busy (CI, -race, 100 busy jobs on 2 cores: a
	// spawn failed at 3 s with the holder charged no tick since 1.5 s).
	return st.CPU, st.CPU > since || proc.Busy(pid)
}

// reply is what a call in flight gets: the holder's answer, or a
// failure the client itself gives it (err: the connection ended).
type reply struct {
	m   wire.Message
	err error
}

// answer is the outcome of a call that got r.
func answer(r reply) (wire.Message, error) {
	m := r.m
	switch {
	case r.err != nil:
		return m, r.err
	case m.Error != "":
		return m, errdefs.FromWire(m.Code, m.Error)
	}
	return m, nil
}

// bound is how long a call of op waits for its answer.
func (c *Client) bound(op string) time.Duration {
	switch op {
	case wire.OpSpawn, wire.OpPTYSpawn, wire.OpStop:
		return c.o.SpawnTimeout
	}
	return c.o.Timeout
}

// abandonedCall is a spawn whose caller stopped waiting for the answer.
type abandonedCall struct {
	req  wire.Request
	conn net.Conn
}

// late takes the answer to a spawn whose caller had stopped waiting
// (ErrNotAnswering: its job failed, or its session was not opened), on
// the event queue. What the holder started is no one's: a job is stopped
// with SIGKILL, a session's terminal closed (a hangup), as a daemon does
// at its start with what it finds held without a record. The end the
// holder then tells is of nothing the sinks hold: they ack it.
func (c *Client) late(req wire.Request, m wire.Message) {
	switch {
	case m.Error != "":
		// Nothing started: the holder saw the deadline pass, or the
		// start failed.
		c.log.Info("the holder answered a spawn the daemon had given up on: nothing started", "op", req.Op, "err", m.Error)
	case req.Op == wire.OpSpawn && m.Start != nil && req.Spawn != nil:
		c.log.Warn("the holder started a job after the daemon had given up on it: stopped", "job", req.Spawn.ID, "pid", m.Start.Pid)
		if err := c.Stop(req.Spawn.ID, true, 0); err != nil {
			c.log.Error("could not stop a job the holder started late", "job", req.Spawn.ID, "pid", m.Start.Pid, "err", err)
		}
	case req.Op == wire.OpPTYSpawn && len(m.Sessions) == 1 && req.PTY != nil:
		c.log.Warn("the holder started a pty session after the daemon had given up on it: closed", "session", req.PTY.ID, "pid", m.Sessions[0].Pid)
		if _, err := c.ClosePTY(req.PTY.ID); err != nil {
			c.log.Error("could not close a pty session the holder started late", "session", req.PTY.ID, "err", err)
		}
	}
}

// redial makes a new connection to the holder of pid after the last one
// ended, as afterLoss does (whichever takes dialMu first; afterLoss then
// finds it made and resyncs), so that a call in that gap goes through. A
// holder that is gone, or another one answering, is job.ErrHolderLost.
func (c *Client) redial(pid int) error {
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	c.mu.Lock()
	dead, closed, now := c.dead, c.closed, c.hello.Pid
	c.mu.Unlock()
	switch {
	case closed:
		return errClosed
	case !dead && now == pid:
		return nil
	case !dead:
		return job.ErrHolderLost // another holder: afterLoss tells the sinks
	case processGone(pid):
		return job.ErrHolderLost
	}
	// Calls that queued behind a dial that just failed take its error
	// instead of waiting for one of their own (each up to 12 s).
	if c.redialErr != nil && time.Since(c.redialAt) < time.Second {
		return c.redialErr
	}
	if _, err := c.dial(); err != nil {
		c.redialErr, c.redialAt = fmt.Errorf("the holder of the jobs (pid %d) cannot be reached: %w", pid, err), time.Now()
		return c.redialErr
	}
	c.redialErr = nil
	c.mu.Lock()
	now = c.hello.Pid
	c.mu.Unlock()
	if now != pid {
		return job.ErrHolderLost
	}
	return nil
}

// minEnvRef is the least environment (entries before the job's own)
// that a spawn sends by reference.
const minEnvRef = 4

// envKey names env on a connection: 128 bits of two seeded hashes.
func envKey(env []string) string {
	var h [2]maphash.Hash
	var b [16]byte
	for i := range h {
		h[i].SetSeed(envSeeds[i])
		for _, kv := range env {
			h[i].WriteString(kv)
			h[i].WriteByte(0)
		}
		binary.LittleEndian.PutUint64(b[8*i:], h[i].Sum64())
	}
	return hex.EncodeToString(b[:])
}

var envSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// envLocked is spec as it goes on the connection now: its environment
// (but for its last EnvTail entries) named if defined on it before,
// defined if the holder speaks version 2, whole otherwise. Spawn set
// EnvRef and EnvBase.
func (c *Client) envLocked(spec wire.JobSpec) *wire.JobSpec {
	switch {
	case c.proto < 2:
		spec.EnvRef, spec.EnvBase = "", 0
	case c.envSent[spec.EnvRef]:
		spec.Env = spec.Env[spec.EnvBase:]
		spec.EnvBase = 0
	default:
		// Defined by this line: the holder reads it before any later one.
		if c.envSent == nil || len(c.envSent) >= maxEnvs {
			c.envSent = make(map[string]bool)
		}
		c.envSent[spec.EnvRef] = true
	}
	return &spec
}

// Spawn implements job.Holder. The job's environment goes by reference
// (envLocked) where it can.
func (c *Client) Spawn(spec wire.JobSpec) (wire.JobStart, error) {
	spec.EnvRef, spec.EnvBase = "", 0
	if n := len(spec.Env) - spec.EnvTail; spec.EnvTail >= 0 && n >= minEnvRef {
		spec.EnvRef, spec.EnvBase = envKey(spec.Env[:n]), n
	}
	m, err := c.call(wire.Request{Op: wire.OpSpawn, Spawn: &spec})
	if err != nil && m.Error == wire.EnvRefUnknown {
		// The holder let it go: this once, whole.
		c.mu.Lock()
		delete(c.envSent, spec.EnvRef)
		c.mu.Unlock()
		spec.EnvRef, spec.EnvBase = "", 0
		m, err = c.call(wire.Request{Op: wire.OpSpawn, Spawn: &spec})
	}
	if err != nil {
		return wire.JobStart{}, err
	}
	if m.Start == nil {
		return wire.JobStart{}, errors.New("the holder's answer to spawn has no process")
	}
	return *m.Start, nil
}

// Stop implements job.Holder.
func (c *Client) Stop(id string, force bool, grace time.Duration) error {
	_, err := c.call(wire.Request{Op: wire.OpStop, ID: id, Force: force, Grace: &grace})
	return err
}

// Ack implements job.Holder. It waits for nothing: acks are queued and
// written together, ackLinger after the first, or before the next
// request, whichever comes first (so a request sees every ack made
// before it). An ack the holder never gets is no loss: it keeps the end
// and tells it again to this daemon after a reconnect, or to the next
// one, which finds it recorded and acks it again.
//
// It never blocks on the connection (its own lock, not the one a write
// holds): it is called where records are committed.
func (c *Client) Ack(id string) error {
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	if c.ackClosed {
		return errClosed
	}
	c.acks = append(c.acks, id)
	if !c.ackArmed {
		c.ackArmed = true
		wait := ackLinger
		if c.ackWait > 0 {
			wait = c.ackWait
		}
		if c.ackTimer == nil {
			c.ackTimer = time.AfterFunc(wait, c.flushAcks)
		} else {
			c.ackTimer.Reset(wait)
		}
	}
	return nil
}

// ackLinger is how long an ack may wait to be written with others.
const ackLinger = 5 * time.Millisecond

// flushAcks writes the queued acks.
func (c *Client) flushAcks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ackMu.Lock()
	c.ackArmed = false
	c.ackMu.Unlock()
	if c.closed || c.conn == nil || c.dead {
		// Kept for the next request (a reconnect's resync makes one),
		// or, closed, for the next daemon to ack again.
		return
	}
	// Bounded as a spawn is: a holder that reads nothing (stopped) must
	// not keep c.mu, which every call takes, for long.
	c.conn.SetWriteDeadline(time.Now().Add(c.o.SpawnTimeout))
	if c.writeAcksLocked() {
		if err := c.w.Flush(); err != nil {
			c.log.Warn("acks to the holder", "err", err)
			c.conn.Close() // replaced: see call1
		}
	}
}

// writeAcksLocked buffers the queued acks, to go with the next flush
// (the caller has set the connection's write deadline). Their answers
// are not waited for: the reader drops an answer no call waits for.
func (c *Client) writeAcksLocked() bool {
	b := c.appendAcksLocked(nil)
	c.w.Write(b)
	return len(b) > 0
}

// appendAcksLocked appends the queued acks' lines to dst. The flush that
// was due for them (Ack) is not any more: a request that takes the acks
// leaves the daemon no timer to wake for.
func (c *Client) appendAcksLocked(dst []byte) []byte {
	c.ackMu.Lock()
	acks := c.acks
	c.acks = nil
	if len(acks) > 0 && c.ackArmed {
		c.ackArmed = false
		c.ackTimer.Stop()
	}
	c.ackMu.Unlock()
	for _, id := range acks {
		c.seq++
		b, err := json.Marshal(wire.Request{Op: wire.OpAck, ID: id, Seq: c.seq, NoReply: true})
		if err == nil {
			dst = append(append(dst, b...), '\n')
		}
	}
	return dst
}

// keepWanted: the daemon starts its jobs itself and has the holder keep
// them (protocol 4; docs/architecture.md, "the daemon forks, the holder
// keeps") unless HIVE_HOLDER_KEEP=off; with it off every job is the
// holder's spawn (to measure one way against the other, or should the
// other be needed). A holder that cannot keep (a kernel before 6.15) says so in
// its hello, and every job is its spawn then too.
func keepWanted() bool { return os.Getenv("HIVE_HOLDER_KEEP") != "off" }

// keepsJobs: see KeepsJobs.
func keepsJobs() bool { return keepWanted() && canKeep() }

// Keeps reports whether the holder keeps the jobs this daemon starts
// itself (Keep, job.Keeper), and the mark those jobs carry
// (EnvHolder=<its instance>).
func (c *Client) Keeps() (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keeps && !c.dead, EnvHolder + "=" + c.hello.Instance
}

// Lends is how many times the holder has lent this daemon spares (one
// message each, whatever their number).
func (c *Client) Lends() int64 { return c.lends.Load() }

// Spare takes a cgroup the holder lent for a job this daemon starts
// itself: its path, to open and start the job into (the keep names it).
func (c *Client) Spare() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.spares)
	if n == 0 || c.dead {
		return "", false
	}
	p := c.spares[n-1]
	c.spares = c.spares[:n-1]
	if c.out == nil {
		c.out = map[string]bool{}
	}
	c.out[p] = true
	return p, true
}

// Unspare gives back a spare taken (Spare) for a job that did not start:
// no process is in it, and the next job takes it. A spare voided since
// (or lent on a connection before this one) is not given back.
func (c *Client) Unspare(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out[p] && !c.dead {
		c.spares = append(c.spares, p)
	}
	delete(c.out, p)
}

// KeepsRecords implements job.Keeper: a job kept now may carry its
// record (wire.Kept.Record, protocol 5).
func (c *Client) KeepsRecords() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keeps && !c.dead && c.proto >= 5
}

// Keep has the holder keep a job this daemon started (wire.OpKeep):
// pidfd is its leader's, outR and errR read ends of its pipes; the line
// carries duplicates of them, the caller's stay its own. It waits for no
// answer: once it returns without error the holder has the line, and
// reads it even if this daemon dies at once. The job's end is told with
// Ack, as a held job's.
func (c *Client) Keep(k wire.Kept, pidfd, outR, errR int) error {
	b, ok := keepLine(&k)
	if !ok {
		var err error
		if b, err = json.Marshal(wire.Request{Op: wire.OpKeep, Keep: &k, NoReply: true}); err != nil {
			return err
		}
	}
	b = append(b, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.out, k.Start.Cgroup) // its job is in it
	if c.closed || c.dead || !c.keeps {
		return errors.New("keep: no holder that keeps jobs")
	}
	if len(k.Record) > 0 && c.proto < 5 {
		// The caller counts on the holder keeping the record (see
		// KeepsRecords): a holder it spoke with before this one did.
		return fmt.Errorf("keep: the holder keeps no records (protocol %d)", c.proto)
	}
	uc, ok := c.conn.(*net.UnixConn)
	if !ok {
		return errors.New("keep: not a unix connection")
	}
	uc.SetWriteDeadline(time.Now().Add(c.bound(wire.OpSpawn)))
	// What is buffered goes first, in order (nothing: every write
	// flushes), then the queued acks and the keep line in one message,
	// one wake-up of the holder. The descriptors go with its first byte:
	// the holder queues them as it reads it, before it reads the keep
	// line that takes them (fdConn).
	if err := c.w.Flush(); err != nil {
		c.conn.Close()
		return fmt.Errorf("keep: %w", err)
	}
	msg := append(c.appendAcksLocked(nil), b...)
	if c.keepHook != nil {
		c.keepHook(msg)
	}
	n, _, err := uc.WriteMsgUnix(msg, unix.UnixRights(pidfd, outR, errR), nil)
	if err == nil && n < len(msg) {
		_, err = uc.Write(msg[n:]) // the descriptors went with the first byte
	}
	if err != nil {
		c.conn.Close()
		return fmt.Errorf("keep: %w", err)
	}
	return nil
}

// KeepsEnded implements job.Keeper: a job whose leader ended before it
// was kept may be kept with its end, in one line (KeepEnded, protocol 6).
func (c *Client) KeepsEnded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keeps && !c.dead && c.proto >= 6
}

// KeepEnded has the holder keep a job this daemon started and did not
// keep while it ran (its leader had exited when the fork returned, or it
// ended before its keep was due), once it ended: its keep and its end in
// one line (protocol 6), no descriptors (its end is told: the holder
// only keeps that end, the record and the job's cgroup, until the ack).
// It waits for no answer; once it returns without error the holder has
// the line.
func (c *Client) KeepEnded(k wire.Kept, e wire.JobEnd) error {
	b, ok := keepEndedLine(&k, &e)
	if !ok {
		var err error
		if b, err = json.Marshal(wire.Request{Op: wire.OpKeep, Keep: &k, End: &e, NoReply: true}); err != nil {
			return err
		}
	}
	c.mu.Lock()
	delete(c.out, k.Start.Cgroup) // its job is in it
	proto, keeps := c.proto, c.keeps
	c.mu.Unlock()
	if !keeps || proto < 6 {
		// The caller asked first (KeepsEnded): a holder it spoke with
		// before this one did.
		return fmt.Errorf("keep: the holder keeps no ended job (protocol %d)", proto)
	}
	return c.tellLine("keep", b)
}

// KeepEnd tells the holder how a kept job ended, before this daemon
// answers for it and before its record is committed: the holder keeps
// that end until the ack, for the next daemon should this one die first.
// It waits for no answer; once it returns without error the holder has
// the line.
func (c *Client) KeepEnd(id string, e wire.JobEnd) error {
	if line, ok := keptEndLine(&e); ok && id == e.ID {
		return c.tellLine("kept end", line)
	}
	return c.tell("kept end", wire.Request{Op: wire.OpKeptEnd, ID: id, End: &e, NoReply: true})
}

// KeepStop tells the holder that this daemon stops a kept job, before it
// signals it (wire.OpStop, version 4): a holder that takes the job over
// goes on with the stop. It waits for no answer.
func (c *Client) KeepStop(id string, force bool, grace time.Duration) error {
	return c.tell("kept stop", wire.Request{Op: wire.OpStop, ID: id, Force: force, Grace: &grace, NoReply: true})
}

// tell writes req, a line that waits for no answer, after what is
// buffered; once it returns without error the holder has the line.
func (c *Client) tell(what string, req wire.Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.tellLine(what, b)
}

// tellLine is tell of a request encoded already (b, without its newline).
func (c *Client) tellLine(what string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.dead {
		return errors.New(what + ": no holder")
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.bound(wire.OpSpawn)))
	c.writeAcksLocked()
	c.w.Write(append(b, '\n'))
	if err := c.w.Flush(); err != nil {
		c.conn.Close()
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Killed implements job.Keeper: the holder's JobCgroups.Killed of the
// cgroup it lent the kept job id; an error where the holder could not
// be asked (job.ErrHolderLost once it is gone).
func (c *Client) Killed(id string, wait time.Duration) (bool, error) {
	m, err := c.call(wire.Request{Op: wire.OpKilled, ID: id, Grace: &wait})
	return err == nil && m.Killed, err
}

// HolderGone implements job.Keeper: the holder's process (the one this
// client last spoke with) is gone.
func (c *Client) HolderGone() bool {
	c.mu.Lock()
	pid, conn, dead := c.hello.Pid, c.conn, c.dead
	c.mu.Unlock()
	// Its guard acts once the holder's descriptors close, which is a
	// moment before the holder is a zombie: a hung-up connection says
	// it as soon.
	return dead || pid > 0 && processGone(pid) || peerHungUp(conn)
}

// HolderPid is the pid of the holder whose death a job.Manager records
// (asked only then): the one this client last spoke with if it is gone,
// else the one afterLoss last found gone (a new holder answers now).
func (c *Client) HolderPid() int {
	c.mu.Lock()
	pid, lost := c.hello.Pid, c.lostPid
	c.mu.Unlock()
	if lost > 0 && lost != pid && !processGone(pid) {
		return lost
	}
	return pid
}

// Take lets the jobs this daemon started and had the holder keep go: the
// holder takes each over from its streams' counts (as this daemon wrote
// them last) and answers once it has. Called by a daemon that exits and
// leaves its jobs running.
func (c *Client) Take(jobs []wire.Job) error {
	_, err := c.call(wire.Request{Op: wire.OpTake, Take: jobs})
	return err
}

// Held implements job.Holder.
func (c *Client) Held() ([]wire.Job, error) {
	m, err := c.call(wire.Request{Op: wire.OpHeld})
	return m.Held, err
}

// Quit asks the holder to exit if it holds no job (an error says how many
// it holds), and closes the client. While the holder holds something
// Quit asks again, up to quitWait: what is held may be ends on their way
// (a job or session the holder started after its start was given up on,
// stopped by late, ends a moment later), whose acks go before each ask.
func (c *Client) Quit() error {
	c.mu.Lock()
	c.quiting = true
	c.mu.Unlock()
	deadline := time.Now().Add(quitWait)
	var err error
	for {
		_, err = c.call(wire.Request{Op: wire.OpQuit})
		if err == nil || !errors.Is(err, errdefs.ErrConflict) || time.Now().After(deadline) {
			break
		}
		time.Sleep(quitPoll)
	}
	c.Close()
	return err
}

// quitWait bounds how long Quit waits for what the holder holds to end
// and be acked; quitPoll is how often it asks meanwhile.
const (
	quitWait = 3 * time.Second
	quitPoll = 20 * time.Millisecond
)

// Close closes the connection; the holder keeps its jobs.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.ackMu.Lock()
	c.ackClosed = true
	if c.ackTimer != nil {
		c.ackTimer.Stop() // what is queued is written below, or kept for the next daemon
	}
	c.ackMu.Unlock()
	var err error
	if c.conn != nil {
		c.conn.SetWriteDeadline(time.Now().Add(c.o.SpawnTimeout))
		if !c.dead && c.writeAcksLocked() {
			c.w.Flush()
		}
		err = c.conn.Close()
	}
	c.mu.Unlock()
	c.qmu.Lock()
	c.qclosed = true
	c.qmu.Unlock()
	c.qcond.Broadcast()
	<-c.qdone // what was queued is delivered
	return err
}

// isPTY tells a PTY session's id from a job's.
func isPTY(id string) bool { return strings.HasPrefix(id, "pty_") }

func deliverPTY(sink pty.PTYSink, m wire.Message) {
	switch m.Ev {
	case wire.EvProgress:
		if m.Stdout != nil {
			sink.PTYProgress(m.ID, m.Stdout.Stats(false))
		}
	case wire.EvEnd:
		if m.End != nil {
			sink.PTYExited(m.ID, m.End.ExitCode)
		}
	}
}

// ListenPTY sets who hears the holder's events about PTY sessions
// (pty.Manager); events that came before are delivered now.
func (c *Client) ListenPTY(sink pty.PTYSink) {
	c.mu.Lock()
	c.ptySink = sink
	early := c.ptyEarly
	c.ptyEarly = nil
	c.mu.Unlock()
	for _, m := range early {
		deliverPTY(sink, m)
	}
}

// SpawnPTY implements pty.Holder.
func (c *Client) SpawnPTY(spec wire.PTYSpec) (wire.PTYSession, error) {
	m, err := c.call(wire.Request{Op: wire.OpPTYSpawn, PTY: &spec})
	if err != nil {
		return wire.PTYSession{}, err
	}
	if len(m.Sessions) != 1 {
		return wire.PTYSession{}, errors.New("the holder's answer to pty_spawn has no session")
	}
	return m.Sessions[0], nil
}

// ClosePTY implements pty.Holder.
func (c *Client) ClosePTY(id string) (output.Stats, error) {
	m, err := c.call(wire.Request{Op: wire.OpPTYClose, ID: id})
	if err != nil {
		return output.Stats{}, err
	}
	if m.Stdout == nil {
		return output.Stats{}, errors.New("the holder's answer to pty_close has no count")
	}
	return m.Stdout.Stats(false), nil
}

// AckPTY implements pty.Holder.
func (c *Client) AckPTY(id string) error { return c.Ack(id) }

// HeldPTYs implements pty.Holder.
func (c *Client) HeldPTYs() ([]wire.PTYSession, error) {
	m, err := c.call(wire.Request{Op: wire.OpHeld})
	return m.Sessions, err
}

// MasterPTY implements pty.Holder: a connection of its own carries the
// descriptor.
func (c *Client) MasterPTY(id string) (*os.File, error) {
	conn, err := net.DialTimeout("unix", c.o.Socket, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	if err := checkPeer(conn); err != nil {
		return nil, fmt.Errorf("%w: %v", errRefused, err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The hello, read byte by byte: nothing past it may be taken from
	// the socket but by the message that carries the descriptor.
	var one [1]byte
	for {
		if _, err := conn.Read(one[:]); err != nil {
			return nil, fmt.Errorf("the holder's hello: %w", err)
		}
		if one[0] == '\n' {
			break
		}
	}
	b, _ := json.Marshal(wire.Request{Op: wire.OpFD, ID: id})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, _, _, err := uc.ReadMsgUnix(one[:], oob)
	if err != nil {
		return nil, fmt.Errorf("session %s: the master from the holder: %w", id, err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || n != 1 || len(msgs) != 1 {
		return nil, fmt.Errorf("session %s: the holder sent no master (not held)", id)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("session %s: the holder sent no master", id)
	}
	syscall.CloseOnExec(fds[0])
	return os.NewFile(uintptr(fds[0]), "/dev/ptmx"), nil
}
