package holder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
)

// A job a daemon starts itself, as the daemon makes it: its own group,
// its output in pipes the daemon pumps into the stream files, its marks.
type ownJob struct {
	cmd               *exec.Cmd
	id                string
	pidfd, outR, errR int // the daemon's
	// readers are the pipes' read ends the numbers above are of: kept
	// reachable, or a finalizer closes a number the test still uses (and
	// that another test's descriptor may have taken since).
	readers [2]*os.File
	out     *output.Stream
	pumped  chan struct{}
	kept    wire.Kept
}

func startOwnJob(dir, id, mark, script string) (*ownJob, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.Env = []string{"PATH=/usr/bin:/bin", job.EnvJobID + "=" + id, job.EnvJobOwner + "=" + dir, mark}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := proc.Start(cmd); err != nil {
		return nil, err
	}
	outW.Close()
	errW.Close()
	j := &ownJob{cmd: cmd, id: id, pumped: make(chan struct{})}
	if j.pidfd, err = unix.PidfdOpen(cmd.Process.Pid, 0); err != nil {
		return nil, err
	}
	fdOf := func(f *os.File) int {
		fd := -1
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(x uintptr) { fd = int(x) })
		}
		return fd
	}
	j.outR, j.errR = fdOf(outR), fdOf(errR)
	j.readers = [2]*os.File{outR, errR}
	if j.out, err = output.Create(filepath.Join(dir, id+".out"), nil); err != nil {
		return nil, err
	}
	// The daemon's pump, as far as the first line.
	go func() {
		defer close(j.pumped)
		br := bufio.NewReaderSize(outR, 1) // one byte at a time: nothing read past the line
		line, _ := br.ReadString('\n')
		j.out.Write([]byte(line))
	}()
	st, _ := proc.Read(cmd.Process.Pid)
	j.kept = wire.Kept{
		Spec:  wire.JobSpec{ID: id, Stdout: filepath.Join(dir, id+".out"), Stderr: filepath.Join(dir, id+".err"), Owner: dir, LeftoverGrace: time.Second},
		Start: wire.JobStart{Pid: cmd.Process.Pid, PidStart: st.Start, Started: time.Now()},
	}
	return j, nil
}

// close closes the daemon's descriptors of the job.
func (j *ownJob) close() {
	j.readers[0].Close()
	j.readers[1].Close()
	unix.Close(j.pidfd)
}

// keepOwnJob starts a job (pumpedOwnJob) and has the holder keep it once
// its first line is pumped.
func keepOwnJob(t *testing.T, c *Client, dir, id, inst, script string) *ownJob {
	t.Helper()
	j := pumpedOwnJob(t, dir, id, inst, script)
	if err := c.Keep(j.kept, j.pidfd, j.outR, j.errR); err != nil {
		t.Fatal(err)
	}
	return j
}

// pumpedOwnJob starts a job as a daemon does (startOwnJob), this test its
// parent and reaper (its group is killed at the test's end), and returns
// once its first line is pumped.
func pumpedOwnJob(t *testing.T, dir, id, inst, script string) *ownJob {
	t.Helper()
	j, err := startOwnJob(dir, id, inst, script)
	if err != nil {
		t.Fatal(err)
	}
	reaped := make(chan error, 1)
	go func() { reaped <- proc.Wait(j.cmd) }()
	t.Cleanup(func() {
		syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-reaped
		j.close()
	})
	<-j.pumped
	return j
}

// keeperIfAsked runs the test binary as a daemon that starts a job
// itself, has the holder keep it, and waits to be killed
// (TestKeptJobOutlivesItsDaemon).
func keeperIfAsked() {
	sock := os.Getenv("HIVE_TEST_KEEPER_SOCK")
	if sock == "" {
		return
	}
	dir := os.Getenv("HIVE_TEST_KEEPER_DIR")
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		fail(err)
	}
	keeps, inst := c.Keeps()
	if !keeps {
		fail(fmt.Errorf("the holder keeps no jobs"))
	}
	j, err := startOwnJob(dir, "k1", inst, "echo before; while [ ! -e "+filepath.Join(dir, "gate")+" ]; do sleep 0.01; done; echo after; echo oops >&2; exit 4")
	if err != nil {
		fail(err)
	}
	<-j.pumped
	if err := c.Keep(j.kept, j.pidfd, j.outR, j.errR); err != nil {
		fail(err)
	}
	fmt.Println("kept", j.cmd.Process.Pid)
	select {} // until killed
}

// A job its daemon started and had the holder keep outlives that daemon's
// kill -9: the holder takes it over, its output goes on in its file
// after what the daemon wrote, and its end (its exit status from its
// pidfd once its new parent reaped it) reaches the next daemon.
func TestKeptJobOutlivesItsDaemon(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "on") // and in the helper's environment
	// The keep waits to be taken in past the daemon's kill: the
	// connection's end takes it in before the job is taken over.
	sock, _ := serveWith(t, ServerOptions{DeferLines: deferLong})
	dir := t.TempDir()
	// The job's new parent once its daemon is gone: this process, which
	// reaps it (init would, where it reaps).
	r, err := proc.NewReaper()
	if err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	defer r.Close()
	// A job of a first daemon's keeps the holder up while no daemon is
	// connected.
	first, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	if keeps, _ := first.Keeps(); !keeps {
		first.Close()
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	if _, err := first.Spawn(spec(dir, "j0", "/bin/sleep", "100")); err != nil {
		t.Fatal(err)
	}
	first.Close()
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), "HIVE_TEST_KEEPER_SOCK="+sock, "HIVE_TEST_KEEPER_DIR="+dir)
	out, _ := helper.StdoutPipe()
	helper.Stderr = os.Stderr
	if err := proc.Start(helper); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			helper.Process.Kill()
		}
		proc.Wait(helper)
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "kept ") {
		t.Fatalf("the daemon that keeps a job: %q %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "kept ")))
	defer syscall.Kill(-pid, syscall.SIGKILL) // the job's group, if the test fails
	// The daemon is killed, and the next one comes.
	helper.Process.Kill()
	killed = true
	c, s := listening(t, sock)
	defer func() {
		c.Stop("j0", true, 0)
		c.Ack("j0")
	}()
	hivetest.Eventually(t, 10*time.Second, "the holder to take the job over", func() error {
		held, err := c.Held()
		for _, x := range held {
			if x.ID == "k1" && x.Pid == pid && x.End == nil {
				return nil
			}
		}
		return fmt.Errorf("held %+v %v", held, err)
	})
	os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600)
	select {
	case e := <-s.ends:
		if e.ID != "k1" || !e.Exited || e.ExitCode != 4 || e.Stdout.Total != int64(len("before\nafter\n")) || e.Stderr.Total != 5 {
			t.Fatalf("the taken job's end: %+v", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no end of the taken job")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "k1.out")); string(b) != "before\nafter\n" {
		t.Errorf("its stdout file: %q", b)
	}
	if err := c.Ack("k1"); err != nil {
		t.Fatal(err)
	}
}

// A daemon that lets its kept jobs go (a restart that keeps them) has
// the holder take each over from the counts it gives; a kept job whose
// end the daemon recorded itself is forgotten at its ack.
func TestKeptJobTakenAndForgotten(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	sock, _ := serve(t)
	dir := t.TempDir()
	c, s := listening(t, sock)
	keeps, inst := c.Keeps()
	if !keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	gate := filepath.Join(dir, "gate")
	j := keepOwnJob(t, c, dir, "t1", inst, "echo one; while [ ! -e "+gate+" ]; do sleep 0.01; done; echo two; exit 6")
	if held, _ := c.Held(); len(held) != 0 {
		t.Errorf("a kept job listed as held: %+v", held)
	}
	if e := takeToEnd(t, c, s, j, "t1", gate); e.ID != "t1" || e.ExitCode != 6 || e.Stdout.Total != 8 {
		t.Fatalf("the taken job's end: %+v", e)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "t1.out")); string(b) != "one\ntwo\n" {
		t.Errorf("its stdout file: %q", b)
	}
	c.Ack("t1")

	// Kept, then ended by its daemon: the ack forgets it.
	j2, err := startOwnJob(dir, "t2", inst, "echo x")
	if err != nil {
		t.Fatal(err)
	}
	defer j2.close()
	if err := c.Keep(j2.kept, j2.pidfd, j2.outR, j2.errR); err != nil {
		t.Fatal(err)
	}
	proc.Wait(j2.cmd)
	io.Copy(io.Discard, j2.readers[0])
	if err := c.Ack("t2"); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 5*time.Second, "the holder to forget the kept job", func() error {
		// A spawn of the same id is refused while it is kept.
		_, err := c.Spawn(spec(dir, "t2", "/bin/true"))
		if err != nil {
			return err
		}
		return nil
	})
	select {
	case e := <-s.ends:
		if e.ID == "t2" {
			// the spawn's own end: fine
		} else {
			t.Errorf("an end no one asked for: %+v", e)
		}
	case <-time.After(5 * time.Second):
	}
}

// A kept job its daemon stops is stopped still if the holder takes it
// over mid-stop: the daemon tells the holder before it signals (here it
// never gets to: it "dies" between), and the holder goes on with the
// stop: SIGKILL once the grace is over, no second SIGINT, an end that
// says stopped.
func TestKeptJobStopGoesOnWhenTakenOver(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	sock, _ := serve(t)
	dir := t.TempDir()
	c, s := listening(t, sock)
	keeps, inst := c.Keeps()
	if !keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	// A SIGINT would print "int" (and kill the sleep): the loop runs on.
	j := keepOwnJob(t, c, dir, "s1", inst, "trap 'echo int' INT; echo up; while :; do sleep 0.01; done")
	asked := time.Now()
	if err := c.KeepStop("s1", false, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.Take([]wire.Job{{ID: "s1", Stdout: wire.CountsOf(j.out.Stats())}}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-s.ends:
		if e.ID != "s1" || !e.Stopped || e.Signal == nil || *e.Signal != int(syscall.SIGKILL) {
			t.Fatalf("the taken job's end: %+v (want stopped, by SIGKILL)", e)
		}
		if d := time.Since(asked); d < 300*time.Millisecond {
			t.Errorf("killed %v after the stop: before its grace of 300ms was over", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stop was not gone on with: no end of the taken job")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "s1.out")); string(b) != "up\n" {
		t.Errorf("its stdout file: %q (a SIGINT from the holder prints int)", b)
	}
	c.Ack("s1")
}

// wireKeeper connects to the holder at sock as a daemon that keeps jobs,
// of protocol proto, by hand: the connection, the holder's hello, and a
// reader of its next answer (events skipped). It skips the test where
// the holder keeps no jobs.
func wireKeeper(t *testing.T, sock string, proto int) (conn net.Conn, hello *wire.Hello, read func() wire.Message) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m wire.Message
	json.Unmarshal([]byte(line), &m)
	if m.Hello == nil || !m.Hello.Keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	conn.Write([]byte(`{"op":"hello","hello":{"proto":` + strconv.Itoa(proto) + `,"min":1,"keeps":true,"pid":` + strconv.Itoa(os.Getpid()) + `}}` + "\n"))
	return conn, m.Hello, func() wire.Message {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m wire.Message
			json.Unmarshal([]byte(line), &m)
			if m.Ev == "" {
				return m
			}
		}
	}
}

// A keep line without its descriptors, or without an id, is refused
// naming what it lacks; the holder reads on.
func TestKeepRefusedOnTheWire(t *testing.T) {
	sock, _ := serve(t)
	conn, _, read := wireKeeper(t, sock, 3)
	conn.Write([]byte(`{"seq":1,"op":"keep","keep":{"spec":{"id":"x","path":"","argv":null,"env":null,"stdout":"/dev/null","stderr":"/dev/null"},"start":{"pid":1,"started":"2024-01-01T00:00:00Z"}},"no_reply":true}` + "\n"))
	if m := read(); m.Re != 1 || !strings.Contains(m.Error, "no pidfd") || m.Code != "invalid" {
		t.Errorf("a keep without descriptors: %+v", m)
	}
	conn.Write([]byte(`{"seq":2,"op":"held"}` + "\n"))
	if m := read(); m.Re != 2 || m.Error != "" {
		t.Errorf("held after a refused keep: %+v", m)
	}
}

// The descriptors a keep line brings arrive close-on-exec (a job the
// holder spawns must not inherit another's pidfd or pipes): the net
// package receives them so, and fdConn sets nothing itself.
func TestKeptFDsCloseOnExec(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	send := os.NewFile(uintptr(pair[0]), "send")
	defer send.Close()
	fc, err := net.FileConn(os.NewFile(uintptr(pair[1]), "recv"))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// Sent without close-on-exec, as a descriptor may be in the sender.
	dup, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	if err := unix.Sendmsg(pair[0], []byte("x"), unix.UnixRights(dup), nil, 0); err != nil {
		t.Fatal(err)
	}
	c := &fdConn{UnixConn: fc.(*net.UnixConn), oob: make([]byte, syscall.CmsgSpace(4*4))}
	buf := make([]byte, 8)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	fds, ok := c.take(1)
	if !ok || len(fds) != 1 {
		t.Fatalf("descriptors queued: %v, want 1", fds)
	}
	defer unix.Close(fds[0])
	flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("a received descriptor is not close-on-exec (flags %#x)", flags)
	}
}

// deferLong is a wait of deferred lines (ServerOptions.DeferLines) no
// test sees the end of: they are taken in only by what must take them in.
const deferLong = time.Hour

// The lines that want no answer (a keep, a kept job's end, an ack) wait
// to be taken in, but never past a line that wants one: what came before
// is taken in first, in order. (At a newer daemon's hello and at the
// connection's end: the two tests below.)
func TestDeferredLinesTakenInFirst(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	sock, _ := serveWith(t, ServerOptions{DeferLines: deferLong})
	dir := t.TempDir()
	c, _ := listening(t, sock)
	keeps, inst := c.Keeps()
	if !keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	endOf := func(id string, code int) wire.JobEnd {
		return wire.JobEnd{ID: id, Exited: true, ExitCode: code, Ended: time.Now()}
	}
	heldEnd := func(c *Client, id string) *wire.JobEnd {
		t.Helper()
		held, err := c.Held()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range held {
			if x.ID == id {
				return x.End
			}
		}
		return nil
	}
	// A keep and its end, then a line that wants an answer: both were
	// taken in before it, the keep first (an end of a job not kept is
	// dropped).
	keepOwnJob(t, c, dir, "d1", inst, "echo one")
	if err := c.KeepEnd("d1", endOf("d1", 3)); err != nil {
		t.Fatal(err)
	}
	if e := heldEnd(c, "d1"); e == nil || e.ExitCode != 3 {
		t.Fatalf("held after a keep and its end: %+v", e)
	}
	// The ack is taken in before the next question, too.
	if err := c.Ack("d1"); err != nil {
		t.Fatal(err)
	}
	if e := heldEnd(c, "d1"); e != nil {
		t.Fatalf("held after its ack: %+v", e)
	}
}

// A keep and a kept job's end that wait to be taken in when a newer
// daemon's hello comes are taken in before that daemon is answered. (The
// first daemon is a raw connection here: a Client would connect again
// once superseded, and take over from the second.)
func TestDeferredLinesTakenInAtTakeover(t *testing.T) {
	sock, tap := tappedHolder(t)
	dir := t.TempDir()
	d := dialRaw(t, sock)
	if !d.hello.Keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	write := d.write
	write(wire.Request{Op: wire.OpHello, Hello: &wire.Hello{Proto: wire.Proto, Min: wire.MinProto, Pid: os.Getpid(), Keeps: true}})
	j, err := startOwnJob(dir, "d2", EnvHolder+"="+d.hello.Instance, "echo two")
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	proc.Wait(j.cmd)
	<-j.pumped
	write(wire.Request{Op: wire.OpKeep, Keep: &j.kept, NoReply: true}, j.pidfd, j.outR, j.errR)
	write(wire.Request{Op: wire.OpKeptEnd, ID: "d2", End: &wire.JobEnd{ID: "d2", Exited: true, ExitCode: 5, Ended: time.Now()}, NoReply: true})
	waitLog(t, tap, "a line waits to be taken in", 2) // read, not taken in
	c2, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ackOnlyEnd(t, c2, "d2", 5)
}

// logTap is a log handler that tells each record's message on msgs
// (debug ones too; dropped when msgs is full).
type logTap struct{ msgs chan string }

func (h logTap) Enabled(context.Context, slog.Level) bool { return true }
func (h logTap) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logTap) WithGroup(string) slog.Handler            { return h }
func (h logTap) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.msgs <- r.Message:
	default:
	}
	return nil
}

// tappedHolder serves a holder that keeps jobs and takes in the lines
// that want no answer only when something makes it (deferLong), with
// its log tapped.
func tappedHolder(t *testing.T) (string, logTap) {
	t.Helper()
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	tap := logTap{make(chan string, 1024)}
	sock, _ := serveWith(t, ServerOptions{Logger: slog.New(tap), DeferLines: deferLong})
	return sock, tap
}

// ackOnlyEnd asks the holder what it holds, through c: only kept job
// id's end, told with exit code code; and acks it.
func ackOnlyEnd(t *testing.T, c *Client, id string, code int) {
	t.Helper()
	held, err := c.Held()
	if err != nil || len(held) != 1 || held[0].ID != id || held[0].End == nil || held[0].End.ExitCode != code {
		t.Fatalf("held, want only %s's end (exit %d): %+v %v", id, code, held, err)
	}
	if err := c.Ack(id); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits for n records of message msg on tap.
func waitLog(t *testing.T, tap logTap, msg string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for n > 0 {
		select {
		case m := <-tap.msgs:
			if m == msg {
				n--
			}
		case <-deadline:
			t.Fatalf("the holder did not log %q", msg)
		}
	}
}

// A keep and a kept job's end that wait to be taken in when the
// daemon's connection ends are taken in then: the next daemon finds the
// end (and the holder would take the job over, were its daemon gone).
func TestDeferredLinesTakenInAtTheEnd(t *testing.T) {
	sock, tap := tappedHolder(t)
	dir := t.TempDir()
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	keeps, inst := c.Keeps()
	if !keeps {
		c.Close()
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	keepOwnJob(t, c, dir, "e1", inst, "echo one")
	if err := c.KeepEnd("e1", wire.JobEnd{ID: "e1", Exited: true, ExitCode: 7, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The end of the connection, not a newer hello, took them in.
	waitLog(t, tap, "the daemon went", 1)
	c2, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ackOnlyEnd(t, c2, "e1", 7)
}

// A daemon whose connection ended and that connected again (the same
// process: Client.afterLoss) before the holder saw the first one end
// keeps its jobs kept: the end of its old connection does not count as
// the daemon's going (daemonWent), which would drop its keeper, and a
// keep from it would be refused.
func TestSameDaemonAgainKeepsKeeping(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	tap := logTap{make(chan string, 1024)}
	sock, _ := serveWith(t, ServerOptions{Logger: slog.New(tap)})
	dir := t.TempDir()
	// The first connection of this process: raw (a Client would connect
	// again once superseded).
	d := dialRaw(t, sock)
	d.write(wire.Request{Op: wire.OpHello, Hello: &wire.Hello{Proto: wire.Proto, Min: wire.MinProto, Pid: os.Getpid(), Keeps: true}})
	d.write(wire.Request{Seq: 1, Op: wire.OpHeld})
	if _, err := d.r.ReadString('\n'); err != nil { // answered: the holder has taken its hello
		t.Fatal(err)
	}
	// The same process again, then the first connection's end.
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keeps, inst := c.Keeps()
	if !keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	if _, err := c.Held(); err != nil { // answered: the holder has taken its hello
		t.Fatal(err)
	}
	d.c.Close()
	waitLog(t, tap, "the daemon went", 1)
	keepOwnJob(t, c, dir, "s1", inst, "echo one")
	if err := c.KeepEnd("s1", wire.JobEnd{ID: "s1", Exited: true, ExitCode: 9, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ackOnlyEnd(t, c, "s1", 9)
}

// The acks queued when a job is kept go to the holder in the keep's own
// message (one write, one wake-up of the holder), ahead of the keep line
// whose descriptors ride on the message's first byte: the holder still
// gives the keep line its descriptors (the job, taken over, ends with
// its output told). The flush that was due for the acks is not any
// more: the daemon has no timer left to wake for.
func TestAcksGoWithTheKeep(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	sock, _ := serve(t)
	dir := t.TempDir()
	c, s := listening(t, sock)
	keeps, inst := c.Keeps()
	if !keeps {
		t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
	}
	var msgs [][]byte
	c.mu.Lock()
	c.keepHook = func(b []byte) { msgs = append(msgs, append([]byte(nil), b...)) }
	c.ackWait = time.Hour // the ack waits for the keep, however slow the machine
	c.mu.Unlock()

	gate := filepath.Join(dir, "gate")
	j := pumpedOwnJob(t, dir, "a1", inst, "echo one; while [ ! -e "+gate+" ]; do sleep 0.01; done; echo two; exit 3")
	if err := c.Ack("a0"); err != nil { // a job of before, recorded
		t.Fatal(err)
	}
	if err := c.Keep(j.kept, j.pidfd, j.outR, j.errR); err != nil {
		t.Fatal(err)
	}

	c.mu.Lock()
	got := msgs
	c.mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d keep messages, want 1", len(got))
	}
	lines := bytes.SplitAfter(got[0], []byte("\n"))
	if len(lines) != 3 || len(lines[2]) != 0 {
		t.Fatalf("the keep's message: %q; want an ack line, then the keep line", got[0])
	}
	var ack, keep wire.Request
	if err := json.Unmarshal(lines[0], &ack); err != nil || ack.Op != wire.OpAck || ack.ID != "a0" {
		t.Errorf("its first line: %q (%v); want the ack of a0", lines[0], err)
	}
	if err := json.Unmarshal(lines[1], &keep); err != nil || keep.Op != wire.OpKeep || keep.Keep == nil || keep.Keep.Spec.ID != "a1" {
		t.Errorf("its second line: %q (%v); want the keep of a1", lines[1], err)
	}
	c.ackMu.Lock()
	armed := c.ackArmed
	c.ackMu.Unlock()
	if armed {
		t.Error("a flush of the acks is still due after the keep took them")
	}

	if e := takeToEnd(t, c, s, j, "a1", gate); e.ID != "a1" || e.ExitCode != 3 || e.Stdout.Total != 8 {
		t.Fatalf("the kept job's end: %+v; want a1, exit 3, 8 bytes of stdout", e)
	}
}

// takeToEnd has the holder take kept job j (id) over, opens its gate
// (the file its script waits for) and returns the end the holder tells.
func takeToEnd(t *testing.T, c *Client, s *sink, j *ownJob, id, gate string) wire.JobEnd {
	t.Helper()
	if err := c.Take([]wire.Job{{ID: id, Stdout: wire.CountsOf(j.out.Stats())}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o600)
	select {
	case e := <-s.ends:
		return e
	case <-time.After(20 * time.Second):
		t.Fatalf("no end of job %s", id)
		return wire.JobEnd{}
	}
}

// A keep that carries its job's end (protocol 6) takes no descriptors:
// the holder lists the job with that end and its record until the ack.
// One whose end names another job is refused, naming the field.
func TestKeepWithItsEndOnTheWire(t *testing.T) {
	sock, _ := serve(t)
	conn, hello, read := wireKeeper(t, sock, 6)
	if hello.Proto < 6 {
		t.Fatalf("the holder speaks protocol %d, want 6", hello.Proto)
	}
	keep := func(seq int, id, endID string) {
		k := wire.Kept{Spec: wire.JobSpec{ID: id, Stdout: "/dev/null", Stderr: "/dev/null"},
			Start: wire.JobStart{Pid: 1, Started: time.Now()}, Record: json.RawMessage(`{"id":"` + id + `","state":"running"}`)}
		b, err := json.Marshal(wire.Request{Seq: uint64(seq), Op: wire.OpKeep, Keep: &k, End: &wire.JobEnd{ID: endID, Exited: true, ExitCode: 7, Ended: time.Now()}, NoReply: true})
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(append(b, '\n'))
	}
	keep(1, "e1", "e2")
	if m := read(); m.Re != 1 || !strings.Contains(m.Error, "end.id") || m.Code != "invalid" {
		t.Errorf("a keep whose end names another job: %+v", m)
	}
	keep(2, "e1", "e1")
	conn.Write([]byte(`{"seq":3,"op":"held"}` + "\n"))
	m := read()
	if m.Re != 3 || m.Error != "" || len(m.Held) != 1 || m.Held[0].ID != "e1" || m.Held[0].End == nil || m.Held[0].End.ExitCode != 7 || !strings.Contains(string(m.Held[0].Record), `"e1"`) {
		t.Fatalf("held after a keep with its end: %+v", m)
	}
	conn.Write([]byte(`{"seq":4,"op":"ack","id":"e1"}` + "\n"))
	read()
	conn.Write([]byte(`{"seq":5,"op":"held"}` + "\n"))
	if m := read(); m.Re != 5 || len(m.Held) != 0 {
		t.Errorf("held after the ack: %+v", m)
	}
}
