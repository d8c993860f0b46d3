//go:build unix

package holder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/lineio"
	"github.com/hivetools/hive/internal/listen"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/pty"
)

// ServerOptions configures Serve.
type ServerOptions struct {
	// Socket is the path to listen on (<state>/holder.sock). Required.
	Socket string
	// Reaper, if set, is the holder's child subreaper (see proc.Reaper).
	Reaper *proc.Reaper
	// Cgroups, if set, gives each job a cgroup of its own; the hello
	// names it.
	Cgroups *proc.JobCgroups
	// OpenCgroups, if set, is called once the holder holds the state
	// dir's lock (so that no other holder of it removes what it makes);
	// what it returns, if not nil, is used as Cgroups, closed at the end.
	OpenCgroups func() *proc.JobCgroups
	// Tracking is said in the hello (proc.Track*), as proc.WithCgroups
	// makes it when there are Cgroups.
	Tracking string
	Build    string
	Logger   *slog.Logger
	// FirstWait is how long a holder with no job waits for a daemon to
	// connect before it exits. If zero, 10 s.
	FirstWait time.Duration
	// ProgressEvery bounds how often a job's counters are sent while it
	// prints: at most once every ProgressEvery, the first ProgressEvery
	// after its write. A PTY session's are sent at once after its write
	// (an interactive program's answer is awaited), up to ptyBurst times
	// in a row; under a burst of writes, at most ptyBurst times per
	// ProgressEvery. If zero, 20 ms.
	ProgressEvery time.Duration
	// Ready, if set, is called once the socket listens.
	Ready func()
	// DeferLines, if positive, is how long the lines that want no answer
	// wait to be taken in (deferFor when 0): tests make it long, to see
	// them taken in by what must take them in.
	DeferLines time.Duration
	// Guard, if set, is the argv that starts the holder's guard (`hive
	// holder-guard`; see Guard), which ends what is left of the jobs and
	// sessions should the holder die. Without it they outlive a holder
	// that dies while no daemon runs.
	Guard []string
}

// server is the holder.
type server struct {
	o   ServerOptions
	log *slog.Logger

	mu   sync.Mutex
	jobs map[string]*held
	// reserved: ids of spawns in flight.
	reserved map[string]bool
	conn     *serverConn // the daemon now, or nil
	dirty    map[string]bool
	ptyDirty bool // a PTY session is in dirty
	poke     chan struct{}
	idle     chan struct{} // signalled when nothing is held and no daemon is connected
	quit     chan struct{} // closed by a quit request
	stop     bool          // SIGTERM: every job is being stopped
	mark     string        // EnvHolder=<instance>, in every job's and session's environment
	inst     string        // the instance
	keeps    bool          // it keeps jobs a daemon started (canKeep)
	keepers  map[int]*keeper
	deferFor time.Duration // how long deferred lines wait (deferFor, or ServerOptions.DeferLines)
	lendMu   sync.Mutex    // one loan of spares at a time (lend)
}

// held is one job the holder holds.
type held struct {
	p   *job.HeldProc // a job, or
	t   *pty.HeldPTY  // a PTY session, or
	k   *kept         // a job its daemon runs and the holder keeps (keep.go)
	end *wire.JobEnd  // once it ended, until acked
	// start is the start of a kept job whose daemon told its end and
	// died (no p): what held lists of it.
	start *wire.JobStart
	// record is the record the daemon kept with a kept job (wire.Kept's,
	// protocol 5), once the holder took the job over: listed with it.
	record json.RawMessage
}

// serverConn is a daemon's connection.
type serverConn struct {
	c  net.Conn
	mu sync.Mutex // serialises writes
	w  *bufio.Writer
	fc *fdConn // what it reads, with the descriptors lines carry
	// envs are the environments the daemon defined on this connection
	// (wire.JobSpec.EnvRef), at most maxEnvs. Only the connection's
	// reader uses them, before it hands the reading on (see read).
	envs map[string][]string
	// superseded: a newer daemon's connection took over (see
	// supersede); what this one sent before is read for its acks and
	// kept jobs' ends only.
	superseded atomic.Bool
	// pid is the daemon's, from its hello.
	pid int
	// deferred are lines read and not yet taken in: the keeps, kept
	// jobs' ends and acks, which want no answer (see deferLine).
	deferMu  sync.Mutex
	deferred [][]byte
	deferT   *time.Timer
}

// supersedeDrain bounds the reading of a superseded connection: the
// lines its daemon wrote before it went are in the socket already.
const supersedeDrain = time.Second

// supersede ends sc's turn once a newer daemon's connection took over:
// no more events or answers go to it (its write side is shut: its daemon
// reads the end), and its reader takes from what its daemon wrote before
// the acks, keeps and kept jobs' ends only, until the end of its lines or
// supersedeDrain. Closing it at once lost those lines when the new
// daemon came before the holder read them (a daemon that acks, exits,
// and a next one that starts at once): ends held again for nothing, or
// a kept job's end never told.
func (sc *serverConn) supersede() {
	sc.superseded.Store(true)
	sc.c.SetReadDeadline(time.Now().Add(supersedeDrain))
	if uc, ok := sc.c.(*net.UnixConn); ok && uc.CloseWrite() == nil {
		return
	}
	sc.c.Close()
}

// maxEnvs bounds the environments a connection keeps: a daemon's
// sessions each have one (their jobs add only their marks).
const maxEnvs = 64

// resolveEnv makes spec's environment whole: a defined one is kept for
// the connection, a named one looked up (wire.EnvRefUnknown if it is
// not kept).
func (sc *serverConn) resolveEnv(spec *wire.JobSpec) error {
	if spec == nil || spec.EnvRef == "" {
		return nil
	}
	ref, base := spec.EnvRef, spec.EnvBase
	spec.EnvRef, spec.EnvBase = "", 0
	if len(ref) > 64 || base < 0 || base > len(spec.Env) {
		return errdefs.New(errdefs.ErrInvalid, fmt.Sprintf("env_ref: a name of at most 64 bytes and env_base within env (%d entries) are required", len(spec.Env)))
	}
	if base > 0 {
		if sc.envs == nil {
			sc.envs = map[string][]string{}
		}
		if _, ok := sc.envs[ref]; !ok && len(sc.envs) >= maxEnvs {
			for k := range sc.envs { // any one: the daemon sends it again if it names it
				delete(sc.envs, k)
				break
			}
		}
		sc.envs[ref] = spec.Env[:base:base]
		return nil
	}
	env, ok := sc.envs[ref]
	if !ok {
		return errEnvRefUnknown
	}
	spec.Env = append(env[:len(env):len(env)], spec.Env...)
	return nil
}

var errSuperseded = errors.New("a newer daemon's connection took over")

var errEnvRefUnknown = errdefs.New(errdefs.ErrNotFound, wire.EnvRefUnknown)

func (sc *serverConn) send(m wire.Message) error {
	if sc.superseded.Load() {
		// Its write side is shut: a write would fail, and close the
		// connection its reader still reads (supersede).
		return errSuperseded
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	sc.w.Write(b)
	sc.w.WriteByte('\n')
	if err := sc.w.Flush(); err != nil {
		// A writer's error sticks: this connection can say nothing more.
		// Closed, it is the daemon's to replace (it reconnects and asks
		// what is held).
		sc.c.Close()
		return err
	}
	return nil
}

// Serve runs the holder until it holds no job and no daemon is connected
// (after the first one, or FirstWait), or ctx is done: then every job is
// stopped (SIGINT, SIGKILL after 10 s) and Serve returns once they have
// ended.
func Serve(ctx context.Context, o ServerOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FirstWait <= 0 {
		o.FirstWait = 10 * time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 20 * time.Millisecond
	}
	// The guard is told last, once the socket no longer answers and the
	// lock is let go: a daemon that dials meanwhile starts the next
	// holder instead of finding this one on its way out (its guard
	// sweeps only this holder's marks).
	var endGuard func()
	defer func() {
		if endGuard != nil {
			endGuard()
		}
	}()
	unlock, err := lock(o.Socket + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if o.OpenCgroups != nil && o.Cgroups == nil {
		if o.Cgroups = o.OpenCgroups(); o.Cgroups != nil {
			defer o.Cgroups.Close()
		}
	}
	if o.Cgroups != nil {
		o.Tracking = proc.WithCgroups(o.Tracking)
	}
	ln, err := listen.Unix(o.Socket)
	if err != nil {
		return err
	}
	defer ln.Close()
	wait := deferFor
	if o.DeferLines > 0 {
		wait = o.DeferLines
	}
	s := &server{o: o, log: o.Logger, deferFor: wait, jobs: map[string]*held{}, reserved: map[string]bool{}, dirty: map[string]bool{},
		poke: make(chan struct{}, 1), idle: make(chan struct{}, 1), quit: make(chan struct{})}
	s.keepers = map[int]*keeper{}
	s.keeps = canKeep()
	defer s.closeKeepers()
	o.Cgroups.OnSpares(s.topUpNow)
	defer o.Cgroups.OnSpares(nil)
	if inst := Instance(os.Getpid()); inst != "" {
		s.mark, s.inst = EnvHolder+"="+inst, inst
		if len(o.Guard) > 0 {
			endGuard = startGuard(o.Guard, filepath.Dir(o.Socket), inst, o.Cgroups.Dir(), s.log)
		}
	}
	if o.Ready != nil {
		o.Ready()
	}
	go s.flusher(ctx)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	first := time.NewTimer(o.FirstWait)
	defer first.Stop()
	connected := false
	for {
		select {
		case <-ctx.Done():
			return s.shutdown()
		case <-s.quit:
			return nil
		case <-first.C:
			if !connected && s.isIdle() {
				s.log.Info("no daemon connected: the holder exits")
				return nil
			}
		case <-s.idle:
			connected = true
			if s.isIdle() {
				s.log.Info("no job held and no daemon connected: the holder exits")
				return nil
			}
		}
	}
}

// isIdle: nothing held, no daemon connected.
func (s *server) isIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs) == 0 && len(s.reserved) == 0 && s.conn == nil
}

func (s *server) signalIdle() {
	select {
	case s.idle <- struct{}{}:
	default:
	}
}

// shutdown stops every job and waits for their ends.
func (s *server) shutdown() error {
	s.mu.Lock()
	sc := s.conn
	s.mu.Unlock()
	if sc != nil {
		s.takeDeferred(sc) // the keeps it sent: kept no longer, as the rest
	}
	s.mu.Lock()
	s.stop = true
	var ps []*job.HeldProc
	var ts []*pty.HeldPTY
	for id, h := range s.jobs {
		switch {
		case h.k != nil:
			// Its daemon runs it: kept no longer (the daemon stops its
			// jobs itself, and would lose no job of a holder that goes).
			delete(s.jobs, id)
			s.forget(id, h.k)
		case h.end != nil:
		case h.p != nil:
			ps = append(ps, h.p)
		case h.t != nil:
			ts = append(ts, h.t)
		}
	}
	s.mu.Unlock()
	for _, t := range ts {
		// As a terminal's hangup: SIGHUP to its session's group.
		syscall.Kill(-t.Pid, syscall.SIGHUP)
		syscall.Kill(-t.Pid, syscall.SIGCONT)
	}
	if len(ps) > 0 {
		s.log.Info("the holder was told to stop: its jobs are stopped", "jobs", len(ps))
	}
	for _, p := range ps {
		p.Stop(false, 10*time.Second)
	}
	// Sessions get 1 s after the hangup, as a daemon's close gives them;
	// then what is left of them is killed. Jobs get their stop's grace.
	pending := func(ptys bool) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, h := range s.jobs {
			if h.end == nil && (h.t != nil) == ptys {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(time.Second); pending(true) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, t := range ts {
		t.Kill()
	}
	for deadline := time.Now().Add(15 * time.Second); pending(false) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for _, t := range ts {
		t.Close()
	}
	// A daemon may have told an end it has not recorded yet (its holder
	// keeps it until the ack): give it a moment to record and ack them.
	unacked := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.conn != nil && len(s.jobs) > 0
	}
	for deadline := time.Now().Add(2 * time.Second); unacked() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// serve serves one daemon's connection.
func (s *server) serve(c net.Conn) {
	reading := false // then the readers close c
	defer func() {
		if !reading {
			c.Close()
		}
	}()
	if err := checkPeer(c); err != nil {
		s.log.Warn("refused a connection", "err", err)
		return
	}
	sc := &serverConn{c: c, w: bufio.NewWriterSize(c, 64<<10)}
	me := wire.Hello{Proto: wire.Proto, Min: wire.MinProto, Build: s.o.Build, Pid: os.Getpid(), Tracking: s.o.Tracking, Cgroups: s.o.Cgroups.Dir(),
		Instance: s.inst, Keeps: s.keeps && s.inst != ""}
	if sc.send(wire.Message{Hello: &me}) != nil {
		return
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return
	}
	sc.fc = &fdConn{UnixConn: uc, oob: make([]byte, syscall.CmsgSpace(4*4))}
	defer func() {
		if !reading {
			sc.fc.closeAll() // else the last reader does (read)
		}
	}()
	r := bufio.NewReaderSize(sc.fc, 64<<10)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := readLine(r)
	if err != nil {
		return
	}
	var req wire.Request
	if err := json.Unmarshal(line, &req); err == nil && req.Op == wire.OpFD {
		s.sendFD(c, req.ID)
		return
	}
	if err := json.Unmarshal(line, &req); err != nil || req.Op != wire.OpHello || req.Hello == nil {
		sc.send(wire.Message{Error: "the first line must be the daemon's hello"})
		return
	}
	v, err := compatible(me, *req.Hello)
	if err != nil {
		sc.send(wire.Message{Error: err.Error()})
		return
	}
	c.SetReadDeadline(time.Time{})
	// One daemon at a time, and the daemon's lock lets only one run: a
	// new daemon's hello means the last one is gone, or going (a
	// connection the holder has not seen end yet). It takes over; what
	// the last one was told again comes with held.
	sc.pid = req.Hello.Pid
	s.mu.Lock()
	old := s.conn
	s.conn = sc
	s.mu.Unlock()
	if old != nil {
		s.log.Info("a new daemon takes over from the last one's connection")
		old.supersede()
		s.takeDeferred(old) // what it read before is taken in before the new one is told anything
	}
	s.log.Info("a daemon connected", "pid", req.Hello.Pid, "build", req.Hello.Build)
	if v >= 3 && me.Keeps && req.Hello.Keeps {
		s.welcome(sc, req.Hello.Pid)
	}
	reading = true
	s.read(sc, r, req.Hello.Pid)
}

// read serves a daemon's requests until its connection ends. A spawn is
// made by the goroutine that read it, at once, while a new one reads on:
// a fork that takes a while is never in the way of other requests, and a
// spawn waits for no other goroutine to be scheduled.
func (s *server) read(sc *serverConn, r *bufio.Reader, pid int) {
	for {
		line, err := readLine(r)
		if err != nil {
			break
		}
		if op := deferrable(line); op != "" {
			// On a superseded connection too: its daemon started the
			// job a keep tells of, and told the ends it had.
			s.deferLine(sc, op, line)
			continue
		}
		s.takeDeferred(sc) // in order: what came before is taken in first
		var req wire.Request
		if err := json.Unmarshal(line, &req); err != nil {
			sc.send(wire.Message{Error: "bad request: " + err.Error()})
			continue
		}
		if sc.superseded.Load() && req.Op != wire.OpAck && req.Op != wire.OpKeptEnd {
			continue // a newer daemon's turn
		}
		switch req.Op {
		case wire.OpSpawn:
			// Before the reading goes on: a next spawn may name the
			// environment this one defines.
			if err := sc.resolveEnv(req.Spawn); err != nil {
				sc.send(wire.Message{Re: req.Seq, Error: err.Error(), Code: errdefs.Code(err)})
				continue
			}
			go s.read(sc, r, pid)
			s.spawn(sc, req)
			return
		case wire.OpPTYSpawn:
			go s.spawnPTY(sc, req)
			continue
		case wire.OpPTYClose:
			go s.closePTY(sc, req) // waits for the last output
			continue
		case wire.OpKeep:
			s.keep(sc, sc.fc, req, pid)
			continue
		case wire.OpTake:
			s.take(sc, req, pid)
			continue
		case wire.OpKeptEnd:
			s.keptEnd(req)
			continue
		case wire.OpKilled:
			go s.killed(sc, req, pid) // waits a little for the write to be seen
			continue
		}
		if s.handle(sc, req) {
			break
		}
	}
	s.takeDeferred(sc) // before its jobs are taken over (daemonWent)
	sc.c.Close()
	if sc.fc != nil {
		sc.fc.closeAll() // the descriptors no keep line took
	}
	s.mu.Lock()
	if s.conn == sc {
		s.conn = nil
	}
	// The same daemon connected again (Client.afterLoss) before this
	// connection's end was seen: it has not gone, and its keeper is the
	// new connection's (the new one's end counts).
	again := s.conn != nil && s.conn.pid == pid
	s.mu.Unlock()
	s.log.Info("the daemon went", "pid", pid, "connected_again", again)
	if !again {
		s.daemonWent(pid)
	}
	s.signalIdle()
}

// deferFor is how long the holder lets the lines that want no answer
// (a keep, a kept job's end, an ack: deferrable) wait before it takes
// them in, unless a line that wants one comes first or the connection
// ends. They come while a call is under way: a keep as the job it tells
// of starts, a kept job's end as the daemon answers the call. Taken in
// at once, their decoding and bookkeeping (and the spares lent again)
// ran beside the job and the answer, on a machine of two processors
// taking the processor one of them needed: `terminal_exec("true")`
// calls 2 ms apart 1-7 % slower, `run` 2-3 % in BenchmarkFloorRoundTrip
// (bench/README.md, session 21). Nothing waits for them: the daemon
// waits for no answer, and a line written is the holder's whatever
// happens to the daemon (the holder reads the connection to its end).
// Whatever asks about the jobs takes them in first: any other line of
// the connection (held, take, stop, killed, spawn), a newer daemon's
// hello, the connection's end, the holder's shutdown.
const deferFor = 3 * time.Millisecond

// maxDeferred bounds the lines left waiting: at most this many keeps'
// descriptors wait in the connection's queue (maxQueuedFDs).
const maxDeferred = 16

// deferrable is the op of line when it is a keep, kept_end or ack line
// as a daemon writes them (encoding/json's order of wire.Request: seq,
// then op), else "". It decides only when the line is taken in, not
// what it does: takeDeferred decodes it whole.
func deferrable(line []byte) string {
	b, ok := bytes.CutPrefix(line, []byte(`{`))
	if !ok {
		return ""
	}
	if rest, ok := bytes.CutPrefix(b, []byte(`"seq":`)); ok {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) || rest[i] != ',' {
			return ""
		}
		b = rest[i+1:]
	}
	for _, op := range deferredOps {
		if rest, ok := bytes.CutPrefix(b, op.prefix); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
			return op.op
		}
	}
	return ""
}

// deferredOps are the deferrable ops and how their lines begin (after
// the seq).
var deferredOps = func() []deferredOp {
	var ops []deferredOp
	for _, op := range []string{wire.OpKeep, wire.OpKeptEnd, wire.OpAck} {
		ops = append(ops, deferredOp{op, []byte(`"op":"` + op + `"`)})
	}
	return ops
}()

type deferredOp struct {
	op     string
	prefix []byte
}

// deferLine keeps line (deferrable) to be taken in within deferFor.
func (s *server) deferLine(sc *serverConn, op string, line []byte) {
	s.log.Debug("a line waits to be taken in", "op", op)
	sc.deferMu.Lock()
	sc.deferred = append(sc.deferred, append([]byte(nil), line...))
	n := len(sc.deferred)
	if sc.deferT == nil {
		sc.deferT = time.AfterFunc(s.deferFor, func() { s.takeDeferred(sc) })
	}
	sc.deferMu.Unlock()
	if n >= maxDeferred {
		s.takeDeferred(sc)
	}
}

// takeDeferred takes in sc's deferred lines, in the order they came.
// It holds sc.deferMu throughout: a line read after them waits for them.
func (s *server) takeDeferred(sc *serverConn) {
	sc.deferMu.Lock()
	defer sc.deferMu.Unlock()
	if sc.deferT != nil {
		sc.deferT.Stop()
		sc.deferT = nil
	}
	lines := sc.deferred
	sc.deferred = nil
	for _, line := range lines {
		var req wire.Request
		if err := json.Unmarshal(line, &req); err != nil {
			sc.send(wire.Message{Error: "bad request: " + err.Error()})
			continue
		}
		switch req.Op {
		case wire.OpKeep:
			s.keep(sc, sc.fc, req, sc.pid)
		case wire.OpKeptEnd:
			s.keptEnd(req)
		case wire.OpAck:
			s.handle(sc, req)
		default: // a line made to look like one (a key given twice)
			sc.send(wire.Message{Re: req.Seq, Error: fmt.Sprintf("op %q: not where its line begins", req.Op), Code: errdefs.CodeInvalid})
		}
	}
}

// handle answers one request but a spawn; true: the holder quits.
func (s *server) handle(sc *serverConn, req wire.Request) (quit bool) {
	reply := wire.Message{Re: req.Seq}
	switch req.Op {
	case wire.OpStop:
		s.mu.Lock()
		h, ok := s.jobs[req.ID]
		ended := ok && h.end != nil
		kept := ok && h.k != nil
		if kept {
			stopKeptLocked(h.k, req) // its daemon signals it
		}
		s.mu.Unlock()
		switch {
		case kept:
		case !ok || h.p == nil:
			reply.Error, reply.Code = fmt.Sprintf("job %q: not held", req.ID), errdefs.CodeNotFound
		case !ended:
			h.p.Stop(req.Force, stopGrace(req))
		}
	case wire.OpAck:
		s.mu.Lock()
		h, ok := s.jobs[req.ID]
		kept := ok && h.k != nil
		ended := ok && h.end != nil // h.end is written under s.mu (ended)
		if ended || kept {
			delete(s.jobs, req.ID)
		}
		s.mu.Unlock()
		if ended && h.t != nil {
			h.t.Close()
		}
		if kept {
			s.forget(req.ID, h.k)
			s.signalIdle()
		}
	case wire.OpHeld:
		reply.Held, reply.Sessions = s.list()
	case wire.OpQuit:
		s.mu.Lock()
		// A spawn in flight counts as held: it was let in before this
		// quit and is held the moment its fork returns.
		n, stopping := len(s.jobs)+len(s.reserved), s.stop
		if n == 0 && !stopping {
			s.stop = true // no spawn from now on
		}
		s.mu.Unlock()
		if n > 0 || stopping {
			reply.Error, reply.Code = fmt.Sprintf("the holder holds %d job(s) or spawns in flight", n), errdefs.CodeConflict
		} else {
			sc.send(reply)
			s.log.Info("told to quit with no job held")
			close(s.quit)
			return true
		}
	default:
		reply.Error, reply.Code = fmt.Sprintf("op %q: unknown", req.Op), errdefs.CodeInvalid
	}
	if !req.NoReply || reply.Error != "" {
		sc.send(reply)
	}
	return false
}

// list is what the holder holds, in start order.
func (s *server) list() ([]wire.Job, []wire.PTYSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]wire.Job, 0, len(s.jobs))
	var ss []wire.PTYSession
	for id, h := range s.jobs {
		if h.k != nil {
			// Its daemon's, but for the end it told: kept until the ack,
			// for a daemon that comes after (or reconnects) to record.
			if e := h.k.end; e != nil {
				out = append(out, wire.Job{ID: id, JobStart: h.k.k.Start, Stdout: e.Stdout, Stderr: e.Stderr, End: e, Record: h.k.k.Record})
			}
			continue
		}
		if h.t != nil {
			x := wire.PTYSession{ID: id, Pid: h.t.Pid, PidStart: h.t.PidStart, TTY: h.t.TTY, Output: h.t.Stats()}
			if h.end != nil {
				x.Exited, x.ExitCode = true, h.end.ExitCode
			}
			ss = append(ss, x)
			continue
		}
		var x wire.Job
		switch {
		case h.p != nil:
			x = wire.Job{ID: id, JobStart: h.p.Start}
			x.Stdout, x.Stderr = h.p.Counts()
		case h.start != nil && h.end != nil:
			x = wire.Job{ID: id, JobStart: *h.start}
		default:
			continue
		}
		if h.end != nil {
			e := *h.end
			x.End = &e
			x.Stdout, x.Stderr = e.Stdout, e.Stderr
		}
		x.Record = h.record
		out = append(out, x)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	sort.Slice(ss, func(a, b int) bool { return ss[a].ID < ss[b].ID })
	return out, ss
}

// spawnPTY starts a session's process and answers with it.
func (s *server) spawnPTY(sc *serverConn, req wire.Request) {
	reply := wire.Message{Re: req.Seq}
	spec := req.PTY
	var sid string
	if spec != nil {
		sid = spec.ID
	}
	id, err := s.reserve(sid, spec == nil, req.Deadline)
	if err != nil {
		reply.Error, reply.Code = "pty_spawn: "+err.Error(), errdefs.Code(err)
		sc.send(reply)
		return
	}
	spec.Env = withMark(spec.Env, s.mark)
	t, err := pty.StartHeld(*spec, func() { s.wrote(id, true) })
	if err != nil {
		s.unreserve(id)
		reply.Error, reply.Code = err.Error(), errdefs.Code(err)
		sc.send(reply)
		return
	}
	h := s.admit(id, &held{t: t})
	reply.Sessions = []wire.PTYSession{{ID: id, Pid: t.Pid, PidStart: t.PidStart, TTY: t.TTY}}
	sc.send(reply)
	go func() {
		code := t.Wait()
		s.ended(id, h, wire.JobEnd{ID: id, Exited: true, ExitCode: code, Ended: time.Now()})
	}()
}

// closePTY closes a session's master once its output is in: the answer
// has the output's count.
func (s *server) closePTY(sc *serverConn, req wire.Request) {
	reply := wire.Message{Re: req.Seq}
	s.mu.Lock()
	h, ok := s.jobs[req.ID]
	s.mu.Unlock()
	if !ok || h.t == nil {
		reply.Error, reply.Code = fmt.Sprintf("pty_close: session %q: not held", req.ID), errdefs.CodeNotFound
	} else {
		c := wire.CountsOf(h.t.Close())
		reply.Stdout = &c
	}
	sc.send(reply)
}

// sendFD answers a connection's fd request: one byte carrying a
// duplicate of the session's master, then the connection ends.
func (s *server) sendFD(c net.Conn, id string) {
	s.mu.Lock()
	h, ok := s.jobs[id]
	s.mu.Unlock()
	uc, isUnix := c.(*net.UnixConn)
	if !ok || h.t == nil || !isUnix {
		c.Write([]byte("\n"))
		return
	}
	rc, err := h.t.Master().SyscallConn()
	if err != nil {
		c.Write([]byte("\n"))
		return
	}
	rc.Control(func(fd uintptr) {
		uc.WriteMsgUnix([]byte{1}, syscall.UnixRights(int(fd)), nil)
	})
}

// spawn starts a job and answers with its process.
func (s *server) spawn(sc *serverConn, req wire.Request) {
	reply := wire.Message{Re: req.Seq}
	spec := req.Spawn
	id, err := s.reserve(specID(spec), spec == nil, req.Deadline)
	if err != nil {
		reply.Error, reply.Code = "spawn: "+err.Error(), errdefs.Code(err)
		sc.send(reply)
		return
	}
	spec.Env = withMark(spec.Env, s.mark)
	p, err := job.RunHeld(*spec, s.o.Reaper, s.o.Cgroups, s.log, func() { s.wrote(id, false) })
	if err != nil {
		s.unreserve(id)
		reply.Error, reply.Code = err.Error(), errdefs.Code(err)
		sc.send(reply)
		return
	}
	h := s.admit(id, &held{p: p})
	st := p.Start
	reply.Start = &st
	sc.send(reply) // before any event of the job: Wait starts the pumping
	s.ended(id, h, p.Wait())
}

// admit holds h as id, which a spawn had reserved.
func (s *server) admit(id string, h *held) *held {
	s.mu.Lock()
	s.jobs[id] = h
	delete(s.reserved, id)
	s.mu.Unlock()
	return h
}

// ended keeps the end of what h runs until it is acked, and tells the
// daemon if one is connected.
func (s *server) ended(id string, h *held, end wire.JobEnd) {
	s.mu.Lock()
	h.end = &end
	delete(s.dirty, id)
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.send(wire.Message{Ev: wire.EvEnd, ID: id, End: &end})
	}
}

// reserve takes id for a spawn in flight: one spawn an id, and a holder
// with a spawn in flight is not idle. A spawn read after its deadline
// (the holder was stopped, or stuck) is refused: the daemon has given up
// on it, and told its caller that it did not start.
func (s *server) reserve(id string, noSpec bool, deadline *time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case noSpec || id == "":
		return "", errors.New("no spec")
	case s.jobs[id] != nil || s.reserved[id]:
		return "", fmt.Errorf("%q is held already", id)
	case s.stop:
		return "", errors.New("the holder is stopping")
	case deadline != nil && time.Now().After(*deadline):
		return "", fmt.Errorf("%q: read %v after the daemon stopped waiting for it: not started", id, time.Since(*deadline).Round(time.Millisecond))
	}
	s.reserved[id] = true
	return id, nil
}

func (s *server) unreserve(id string) {
	s.mu.Lock()
	delete(s.reserved, id)
	s.mu.Unlock()
	s.signalIdle()
}

func specID(spec *wire.JobSpec) string {
	if spec == nil {
		return ""
	}
	return spec.ID
}

// wrote marks the counters of a job, or of a PTY session, to be sent.
func (s *server) wrote(id string, isPTY bool) {
	s.mu.Lock()
	if s.dirty[id] {
		s.mu.Unlock()
		return
	}
	s.dirty[id] = true
	s.ptyDirty = s.ptyDirty || isPTY
	s.mu.Unlock()
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// ptyBurst is how many times in a row the counters of PTY sessions are
// sent at once (see ServerOptions.ProgressEvery): a turn of a REPL (the
// echo, the answer, the prompt) takes a few writes.
const ptyBurst = 8

// flusher sends the counters of what printed: a job's ProgressEvery
// after its write, a PTY session's at once while its bucket has a token
// (ptyBurst of them, one more every ProgressEvery/ptyBurst), else when
// the next token comes. Counters wait at most ProgressEvery; under a
// burst of output the daemon is told at most ptyBurst times per
// ProgressEvery.
func (s *server) flusher(ctx context.Context) {
	every := s.o.ProgressEvery
	refill := max(every/ptyBurst, time.Microsecond)
	tokens, filled := ptyBurst, time.Now() // the PTY bucket
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var due time.Time // of the next send; zero: none pending
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.poke:
		case <-timer.C:
		}
		now := time.Now()
		if n := int(now.Sub(filled) / refill); n > 0 {
			tokens, filled = min(ptyBurst, tokens+n), filled.Add(time.Duration(n)*refill)
			if tokens == ptyBurst {
				filled = now
			}
		}
		s.mu.Lock()
		pending, ptys := len(s.dirty) > 0, s.ptyDirty
		s.mu.Unlock()
		if !pending { // what printed has ended, its end said it all
			due = time.Time{}
			continue
		}
		when := now.Add(every)
		if ptys {
			when = now
			if tokens == 0 {
				when = filled.Add(refill)
			}
		}
		if due.IsZero() || when.Before(due) {
			due = when
		}
		if now.Before(due) {
			timer.Reset(due.Sub(now))
			continue
		}
		due = time.Time{}
		if ptys && tokens > 0 {
			tokens--
		}
		s.flush()
	}
}

// flush sends the counters of what printed since the last flush.
func (s *server) flush() {
	s.mu.Lock()
	conn := s.conn
	var msgs []wire.Message
	for id := range s.dirty {
		h, ok := s.jobs[id]
		switch {
		case !ok:
		case h.t != nil:
			o := wire.CountsOf(h.t.Stats())
			msgs = append(msgs, wire.Message{Ev: wire.EvProgress, ID: id, Stdout: &o, Stderr: &wire.Counts{}})
		case h.end == nil:
			o, e := h.p.Counts()
			msgs = append(msgs, wire.Message{Ev: wire.EvProgress, ID: id, Stdout: &o, Stderr: &e})
		}
	}
	clear(s.dirty)
	s.ptyDirty = false
	s.mu.Unlock()
	if conn == nil {
		return // a daemon that connects asks for the counters (held)
	}
	for _, m := range msgs {
		if conn.send(m) != nil {
			break
		}
	}
}

// readLine reads one line, at most maxLine bytes. It is valid until the
// next read from r.
func readLine(r *bufio.Reader) ([]byte, error) { return lineio.Read(r, maxLine) }
