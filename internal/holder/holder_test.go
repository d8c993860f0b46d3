//go:build unix

package holder

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder/wire"
)

// sink records a client's events.
type sink struct {
	c     *Client // for HeldResync
	mu    sync.Mutex
	ends  chan wire.JobEnd
	lost  chan struct{}
	bytes map[string]int64
}

func newSink() *sink {
	return &sink{ends: make(chan wire.JobEnd, 16), lost: make(chan struct{}, 1), bytes: map[string]int64{}}
}

func (s *sink) HeldProgress(id string, out, errs wire.Counts) {
	s.mu.Lock()
	s.bytes[id] = out.Total
	s.mu.Unlock()
}
func (s *sink) HeldEnded(e wire.JobEnd) { s.ends <- e }
func (s *sink) HolderLost()             { s.lost <- struct{}{} }

// serve runs a holder in this process on a socket in a temp dir.
func serve(t *testing.T) (sock string, stop func()) {
	t.Helper()
	return serveWith(t, ServerOptions{})
}

// serveWith is serve with options o (its socket, first wait and ready
// set here).
func serveWith(t *testing.T, o ServerOptions) (sock string, stop func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hold")
	if err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "holder.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	o.Socket, o.FirstWait, o.Ready = sock, time.Minute, func() { close(ready) }
	go func() {
		done <- Serve(ctx, o)
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	stop = func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
	t.Cleanup(stop)
	return sock, stop
}

func spec(dir, id string, argv ...string) wire.JobSpec {
	return wire.JobSpec{ID: id, Path: argv[0], Argv: argv, Env: []string{"PATH=/usr/bin:/bin"},
		Stdout: filepath.Join(dir, id+".out"), Stderr: filepath.Join(dir, id+".err"), Index: filepath.Join(dir, id+".idx")}
}

// An end is told, and held until acknowledged: a client that comes
// after one that went without acking it is told it again; once acked,
// it is gone.
func TestEndHeldUntilAcked(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	c.Listen(s)
	st, err := c.Spawn(spec(dir, "j1", "/bin/sh", "-c", "echo hello; exit 3"))
	if err != nil || st.Pid <= 0 {
		t.Fatalf("spawn: %+v %v", st, err)
	}
	e := <-s.ends
	if e.ID != "j1" || !e.Exited || e.ExitCode != 3 || e.Stdout.Total != 6 || e.Stdout.InFile != 6 {
		t.Fatalf("end: %+v", e)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "j1.out")); string(b) != "hello\n" {
		t.Errorf("the stream file: %q", b)
	}
	if _, err := c.Spawn(spec(dir, "j1", "/bin/true")); err == nil || !strings.Contains(err.Error(), "held already") {
		t.Errorf("a second spawn of a held id: %v", err)
	}
	c.Close() // no ack: the end stays
	c2 := openRetry(t, sock)
	held, err := c2.Held()
	if err != nil || len(held) != 1 || held[0].End == nil || held[0].End.ExitCode != 3 {
		t.Fatalf("held after a client went without its ack: %+v %v", held, err)
	}
	if err := c2.Ack("j1"); err != nil {
		t.Fatal(err)
	}
	if held, err := c2.Held(); err != nil || len(held) != 0 {
		t.Errorf("held after the ack: %+v %v", held, err)
	}
	// An ack waits for nothing, and goes before the client closes.
	s2 := newSink()
	c2.Listen(s2)
	if _, err := c2.Spawn(spec(dir, "j2", "/bin/true")); err != nil {
		t.Fatal(err)
	}
	if e := <-s2.ends; e.ID != "j2" || !e.Exited {
		t.Fatalf("end: %+v", e)
	}
	if err := c2.Ack("j2"); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	// Holding nothing, with no daemon, the holder exits; had the ack been
	// lost, it would hold the end and stay.
	hivetest.Eventually(t, 10*time.Second, "the holder to take the ack or exit", func() error {
		c3, err := Open(ClientOptions{Socket: sock})
		if err != nil && !errors.Is(err, errRefused) {
			return nil // gone
		}
		if err != nil {
			return err
		}
		held, err := c3.Held()
		c3.Close()
		if err == nil && len(held) == 0 {
			return nil // the ack was taken (then the holder exits)
		}
		return fmt.Errorf("the holder still runs, holding %+v (%v)", held, err)
	})
}

// A daemon's ack that the holder had not read when the next daemon took
// over is taken all the same: the holder reads a superseded connection on
// for its acks (and kept jobs' ends) instead of closing it at once. The
// first daemon here is a raw connection that writes its ack only once
// the second has taken over (a call of its answered): closed at the
// takeover, the holder would never read it.
func TestAckAfterTakeover(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	d := dialRaw(t, sock)
	r, write := d.r, d.write
	write(wire.Request{Op: wire.OpHello, Hello: &wire.Hello{Proto: wire.Proto, Min: wire.MinProto, Pid: os.Getpid()}})
	sp := spec(dir, "j1", "/bin/true")
	write(wire.Request{Seq: 1, Op: wire.OpSpawn, Spawn: &sp})
	for ended := false; !ended; { // its answer, then its end
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m wire.Message
		json.Unmarshal([]byte(line), &m)
		if m.Error != "" {
			t.Fatalf("spawn: %s", m.Error)
		}
		ended = m.Ev == wire.EvEnd && m.ID == "j1"
	}
	c2, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	held, err := c2.Held() // answered: the holder has taken c2's hello
	if err != nil || len(held) != 1 || held[0].ID != "j1" || held[0].End == nil {
		t.Fatalf("held before the first daemon's ack: %+v %v", held, err)
	}
	write(wire.Request{Seq: 2, Op: wire.OpAck, ID: "j1", NoReply: true})
	d.c.Close()
	hivetest.Eventually(t, 5*time.Second, "the holder to take the first daemon's ack", func() error {
		held, err := c2.Held()
		if err == nil && len(held) == 0 {
			return nil
		}
		return fmt.Errorf("the holder holds %+v (%v)", held, err)
	})
}

// rawDaemon is a daemon's connection to a holder made by hand, not by
// a Client (which connects again once superseded, and takes over from
// whatever took over from it).
type rawDaemon struct {
	t     *testing.T
	c     *net.UnixConn
	r     *bufio.Reader
	hello wire.Hello // the holder's
}

// dialRaw connects to the holder at sock and reads its hello; the
// connection closes at the test's end.
func dialRaw(t *testing.T, sock string) *rawDaemon {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	d := &rawDaemon{t: t, c: conn.(*net.UnixConn), r: bufio.NewReader(conn)}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := d.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m wire.Message
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Hello == nil {
		t.Fatalf("the holder's hello: %q %v", line, err)
	}
	d.hello = *m.Hello
	return d
}

// write writes req's line, with descriptors fds.
func (d *rawDaemon) write(req wire.Request, fds ...int) {
	d.t.Helper()
	b, _ := json.Marshal(req)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := d.c.WriteMsgUnix(append(b, '\n'), oob, nil); err != nil {
		d.t.Fatal(err)
	}
}

// openRetry opens a client once the holder has seen the last one go.
func openRetry(t *testing.T, sock string) *Client {
	t.Helper()
	var c *Client
	hivetest.Eventually(t, 5*time.Second, "the holder to take a new client", func() error {
		var err error
		if c, err = Open(ClientOptions{Socket: sock}); err != nil && !errors.Is(err, errRefused) {
			return hivetest.Abort(err)
		}
		return err
	})
	return c
}

// fakeHolder is a socket in a temp dir (short: a unix socket's path is
// bounded) where the test plays the holder; both go at the test's end.
func fakeHolder(t *testing.T) (sock string, ln net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hold")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "holder.sock")
	if ln, err = net.Listen("unix", sock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return sock, ln
}

// A holder whose versions do not overlap the daemon's is reported with
// both ranges, and nothing is asked of it past the hellos.
func TestIncompatibleHolder(t *testing.T) {
	sock, ln := fakeHolder(t)
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(`{"hello":{"proto":9,"min":7,"build":"future","pid":4242}}` + "\n"))
		b, _ := bufio.NewReader(c).ReadString('\n') // whatever comes (nothing: the client hangs up)
		got <- b
	}()
	_, err := Open(ClientOptions{Socket: sock, Command: []string{"/bin/false"}})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "7..9") || !strings.Contains(err.Error(), fmt.Sprintf("%d..%d", wire.MinProto, wire.Proto)) {
		t.Fatalf("open of a holder of protocols 7..9: %v", err)
	}
	if b := <-got; b != "" {
		t.Errorf("the daemon sent %q to an incompatible holder", b)
	}
}

// A stop with force kills at once; a stop with a grace sends SIGINT,
// then SIGKILL after it; the end says it was stopped.
func TestStop(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := newSink()
	c.Listen(s)
	// Ignores SIGINT: only the SIGKILL after the grace ends it.
	if _, err := c.Spawn(spec(dir, "stubborn", "/bin/sh", "-c", "trap '' INT; echo up; while :; do sleep 0.05; done")); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 5*time.Second, "the job to start", func() error {
		if b, _ := os.ReadFile(filepath.Join(dir, "stubborn.out")); string(b) != "up\n" {
			return fmt.Errorf("its output: %q", b)
		}
		return nil
	})
	t0 := time.Now()
	if err := c.Stop("stubborn", false, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	e := <-s.ends
	if !e.Stopped || e.Signal == nil || *e.Signal != 9 || time.Since(t0) < 300*time.Millisecond {
		t.Errorf("end of a stop with grace that ignores SIGINT: %+v after %v", e, time.Since(t0))
	}
	// The holder's error keeps its class across its socket.
	if err := c.Stop("nosuch", true, 0); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `"nosuch": not held`) {
		t.Errorf("stop of a job not held: %v, want a not-found error naming it", err)
	}
}

// A connection that says hello takes over (the daemon's lock lets one
// daemon run: a new hello means the last one is gone, or going). A
// daemon that is not gone reconnects to the same holder and catches up:
// its job's end still reaches it, and it never takes the holder for lost.
func TestStrayHelloDoesNotLoseTheJobs(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	a, sa := listening(t, sock)
	gate := filepath.Join(dir, "gate")
	if _, err := a.Spawn(spec(dir, "j", "/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.01; done; exit 5")); err != nil {
		t.Fatal(err)
	}
	stray, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stray)
	r.ReadString('\n')
	stray.Write([]byte(`{"op":"hello","hello":{"proto":1,"min":1,"build":"stray"}}` + "\n"))
	stray.Close()
	os.WriteFile(gate, nil, 0o600)
	select {
	case e := <-sa.ends:
		if e.ID != "j" || e.ExitCode != 5 {
			t.Errorf("end: %+v", e)
		}
	case <-sa.lost:
		t.Fatal("the daemon took its holder for lost after a stray hello")
	case <-time.After(10 * time.Second):
		t.Fatal("the job's end did not reach the daemon after a stray hello")
	}
	if _, err := a.Held(); err != nil {
		t.Errorf("held after the stray hello: %v", err)
	}
}

// listening is a client of the holder at sock whose events go to a sink
// that resyncs as job.Manager does; it is closed at the test's end.
func listening(t *testing.T, sock string) (*Client, *sink) {
	t.Helper()
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := newSink()
	s.c = c
	c.Listen(s)
	return c, s
}

// HeldResync catches up as job.Manager does: the ends held are told.
func (s *sink) HeldResync() {
	if s.c == nil {
		return
	}
	hs, _ := s.c.Held()
	for _, x := range hs {
		if x.End != nil {
			s.ends <- *x.End
		}
	}
}

// A quit that comes while a spawn is in flight (reserved, not yet
// forked) is refused: the holder would otherwise exit under a job it is
// about to hold.
func TestQuitRefusedDuringASpawn(t *testing.T) {
	s := &server{log: slog.New(slog.DiscardHandler), jobs: map[string]*held{}, reserved: map[string]bool{},
		dirty: map[string]bool{}, idle: make(chan struct{}, 1), quit: make(chan struct{})}
	if _, err := s.reserve("j1", false, nil); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	sc := &serverConn{c: a, w: bufio.NewWriter(a)}
	replies := make(chan wire.Message, 2)
	go func() {
		r := bufio.NewReader(b)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m wire.Message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Errorf("reply %q: %v", line, err)
				return
			}
			replies <- m
		}
	}()
	if s.handle(sc, wire.Request{Op: wire.OpQuit, Seq: 1}) {
		t.Fatal("quit taken with a spawn in flight")
	}
	if m := <-replies; m.Re != 1 || !strings.Contains(m.Error, "spawns in flight") {
		t.Fatalf("reply %+v, want an error naming the spawn in flight", m)
	}
	// The spawn goes on: quit did not stop the holder from taking it.
	if _, err := s.reserve("j2", false, nil); err != nil {
		t.Fatalf("a spawn after the refused quit: %v", err)
	}
	s.unreserve("j1")
	s.unreserve("j2")
	if !s.handle(sc, wire.Request{Op: wire.OpQuit, Seq: 2}) {
		t.Fatal("quit refused with nothing held or in flight")
	}
	if m := <-replies; m.Re != 2 || m.Error != "" {
		t.Fatalf("reply %+v, want a plain answer", m)
	}
	select {
	case <-s.quit:
	default:
		t.Fatal("quit taken but the holder not told to exit")
	}
}

// A call made after the connection ended, while the holder still runs
// and before the client's own reconnect (held back here behind an event
// that blocks the queue), makes the connection again and goes through:
// a kill in that gap is not "the holder died". The reconnect that comes
// after finds the connection made and only resyncs.
func TestCallDuringReconnect(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	a, sa := listening(t, sock)
	if _, err := a.Spawn(spec(dir, "j", "/bin/sleep", "30")); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before a.Close, which waits for the queue
	blocked := make(chan struct{})
	a.enqueue(func() { close(blocked); <-release })
	<-blocked
	a.mu.Lock()
	conn := a.conn
	a.mu.Unlock()
	conn.Close() // the connection ends; afterLoss waits behind the blocker
	hivetest.Eventually(t, 10*time.Second, "the client to see its connection end", func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if !a.dead {
			return errors.New("the connection is not dead")
		}
		return nil
	})
	held, err := a.Held()
	if err != nil || len(held) != 1 || held[0].ID != "j" {
		t.Fatalf("held in the gap: %+v, %v; want job j", held, err)
	}
	if err := a.Stop("j", true, 0); err != nil {
		t.Fatalf("stop in the gap: %v", err)
	}
	unblock()
	select {
	case e := <-sa.ends:
		if e.ID != "j" || e.Signal == nil || *e.Signal != 9 {
			t.Errorf("end: %+v, want j killed", e)
		}
	case <-sa.lost:
		t.Fatal("the holder taken for lost")
	case <-time.After(10 * time.Second):
		t.Fatal("the stopped job's end did not come")
	}
}

// Quit waits a moment for what the holder holds to end and be acked (a
// job it started after the daemon gave up on it ends just after the
// daemon asks it to quit): it does not give up at the first refusal.
func TestQuitWaitsForEndsOnTheirWay(t *testing.T) {
	sock, _ := serve(t)
	c, s := listening(t, sock)
	if _, err := c.Spawn(spec(t.TempDir(), "j1", "/bin/sleep", "0.3")); err != nil {
		t.Fatal(err)
	}
	acked := make(chan struct{})
	go func() { // the sink acks the end once it comes, as a daemon's does
		e := <-s.ends
		c.Ack(e.ID)
		close(acked)
	}()
	// Asked while the job runs: refused at first, taken once its end is
	// acked.
	if err := c.Quit(); err != nil {
		t.Fatalf("quit with a job ending within %v: %v", quitWait, err)
	}
	<-acked
}

// deferrable picks the lines that want no answer as a daemon writes
// them, and no other: a line it misses is only taken in at once.
func TestDeferrable(t *testing.T) {
	marshal := func(req wire.Request) []byte {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		line []byte
		want string
	}{
		{marshal(wire.Request{Op: wire.OpKeep, Keep: &wire.Kept{}, NoReply: true}), wire.OpKeep},
		{marshal(wire.Request{Op: wire.OpKeptEnd, ID: "j1", End: &wire.JobEnd{}, NoReply: true}), wire.OpKeptEnd},
		{marshal(wire.Request{Op: wire.OpAck, ID: "j1", Seq: 42, NoReply: true}), wire.OpAck},
		{marshal(wire.Request{Op: wire.OpAck, ID: "j1"}), wire.OpAck},
		{marshal(wire.Request{Op: wire.OpHeld, Seq: 7}), ""},
		{marshal(wire.Request{Op: wire.OpSpawn, Seq: 1, Spawn: &wire.JobSpec{ID: "j1"}}), ""},
		{marshal(wire.Request{Op: wire.OpStop, Seq: 3, ID: "keep"}), ""},
		{marshal(wire.Request{Op: wire.OpKilled, Seq: 3, ID: "j1"}), ""},
		{[]byte(`{"op":"keeper"}`), ""},
		{[]byte(`{"op":"ack"}`), wire.OpAck},
		{[]byte(`{"seq":,"op":"ack"}`), ""},
		{[]byte(`{"seq":12"op":"ack"}`), ""},
		{[]byte(`{"seq":12`), ""},
		{[]byte(` {"op":"ack"}`), ""},
		{[]byte(`{"id":"x","op":"ack"}`), ""},
		{[]byte(`{"op":"ack"`), ""},
		{nil, ""},
	}
	for _, c := range cases {
		if got := deferrable(c.line); got != c.want {
			t.Errorf("deferrable(%s) = %q, want %q", c.line, got, c.want)
		}
	}
}
