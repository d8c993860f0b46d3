//go:build unix

package holder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder/wire"
)

// socketEnv makes this test binary a holder process serving the socket
// it names (see TestMain): a holder that a test can stop with SIGSTOP.
const socketEnv = "HIVE_TEST_HOLDER_SOCKET"

// serveIfAsked makes this test binary the holder process serving the
// socket socketEnv names, if it does: it exits once no client is
// connected and nothing is held.
func serveIfAsked() {
	sock := os.Getenv(socketEnv)
	if sock == "" {
		return
	}
	if err := Serve(context.Background(), ServerOptions{Socket: sock, FirstWait: time.Minute, Guard: guardServer()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// logBuffer is a log that tests can wait on.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// A holder that does not answer (stopped with SIGSTOP) makes a spawn and
// a stop fail at their bound, with an error that says so and names the
// holder; the spawn it reads once it runs again is past its deadline, and
// it starts nothing.
func TestStoppedHolderDoesNotAnswer(t *testing.T) {
	dir, err := os.MkdirTemp("", "hold") // short: a unix socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "holder.sock")
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), socketEnv+"="+sock)
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	pid := h.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGCONT) // never left stopped
		h.Process.Kill()
		h.Wait()
	})
	var logs logBuffer
	const bound = 300 * time.Millisecond
	var c *Client
	hivetest.Eventually(t, 10*time.Second, "the holder process serving", func() (err error) {
		// Timeout is the bound too: a spawn the holder reads after it
		// is refused (a larger Timeout lets it start, and then it is
		// stopped: TestLateSpawnIsStopped).
		c, err = Open(ClientOptions{Socket: sock, SpawnTimeout: bound, Timeout: bound, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		return err
	})
	defer c.Close()
	s := newSink()
	c.Listen(s)
	if _, err := c.Spawn(spec(dir, "before", "/bin/sleep", "3600")); err != nil {
		t.Fatal(err)
	}

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" {
		// A signal takes effect when the kernel next schedules it: until
		// then the holder could still read (and answer) the calls below.
		hivetest.Eventually(t, 10*time.Second, "the holder stopped", func() error {
			if st := hivetest.ProcState(pid); st != 'T' {
				return fmt.Errorf("holder %d in state %q", pid, st)
			}
			return nil
		})
	}
	for _, call := range []struct {
		op string
		f  func() error
	}{
		{"spawn", func() error { _, err := c.Spawn(spec(dir, "stalled", "/bin/sleep", "3600")); return err }},
		{"stop", func() error { return c.Stop("before", true, 0) }},
	} {
		t0 := time.Now()
		err := call.f()
		d := time.Since(t0)
		if !errors.Is(err, ErrNotAnswering) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) || !strings.Contains(err.Error(), call.op) {
			t.Errorf("%s to a stopped holder: %v, want ErrNotAnswering naming the holder's pid %d and the op", call.op, err, pid)
		}
		if d > 10*bound {
			t.Errorf("%s to a stopped holder gave up after %v, its bound is %v", call.op, d, bound)
		}
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The stop went through once it ran again (it was sent).
	select {
	case e := <-s.ends:
		if e.ID != "before" || !e.Stopped {
			t.Errorf("end after the holder ran again: %+v, want the stopped job before", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stop sent to the stopped holder had no effect once it ran again")
	}
	// The spawn's answer, when it came, was a refusal.
	hivetest.Eventually(t, 10*time.Second, "the answer to the given-up spawn", func() error {
		if !logs.has("nothing started") {
			return fmt.Errorf("no answer to the given-up spawn came; the log:\n%s", logs.String())
		}
		return nil
	})
	// What it holds (asked again should the 300 ms bound pass on a
	// loaded machine; a second client would take the holder over from
	// this one, which then takes it back).
	var held []wire.Job
	hivetest.Eventually(t, 10*time.Second, "the holder's listing", func() (err error) {
		held, err = c.Held()
		return err
	})
	for _, x := range held {
		if x.ID == "stalled" {
			t.Errorf("the holder started a spawn it read after its deadline: %+v", x)
		}
	}
}

// The answer to a spawn whose caller gave up that says the job started
// (the holder read it just before its deadline and answered after) stops
// the job: it is no one's.
func TestLateSpawnIsStopped(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := newSink()
	c.Listen(s)
	sp := spec(dir, "late", "/bin/sleep", "3600")
	st, err := c.Spawn(sp)
	if err != nil {
		t.Fatal(err)
	}
	c.late(wire.Request{Op: wire.OpSpawn, Spawn: &sp}, wire.Message{Start: &st})
	select {
	case e := <-s.ends:
		if e.ID != "late" || !e.Stopped || e.Signal == nil || *e.Signal != int(syscall.SIGKILL) {
			t.Errorf("end of the late job: %+v, want stopped by SIGKILL", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job whose spawn was given up runs on")
	}
}

// slowHolder is a holder that says hello as the process pid and answers
// the first spawn it reads after delay (never, if delay < 0): what the
// client sees of a holder whose answers are slow. The spawn it read
// comes on got.
func slowHolder(t *testing.T, pid int, delay time.Duration) (sock string, got <-chan wire.Request) {
	t.Helper()
	dir, err := os.MkdirTemp("", "slow")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "holder.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make(chan wire.Request, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		go func() { <-done; c.Close() }()
		enc := json.NewEncoder(c)
		enc.Encode(wire.Message{Hello: &wire.Hello{Proto: wire.Proto, Min: wire.MinProto, Pid: pid}})
		dec := json.NewDecoder(c)
		for {
			var req wire.Request
			if dec.Decode(&req) != nil {
				return
			}
			if req.Op != wire.OpSpawn {
				continue
			}
			reqs <- req
			if delay < 0 {
				continue
			}
			select {
			case <-time.After(delay):
			case <-done:
				return
			}
			enc.Encode(wire.Message{Re: req.Seq, Start: &wire.JobStart{Pid: pid, Started: time.Now()}})
		}
	}()
	return sock, reqs
}

// A holder that has not answered a spawn by its bound but is working
// (charged processor time: its jobs keep the machine busy) is waited
// for, a bound at a time, up to the client's Timeout; one that is
// stopped fails the spawn at its bound. The spawn's deadline for the
// holder is the Timeout's.
func TestBusyHolderIsWaitedFor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("working or stopped is read from /proc")
	}
	const bound, timeout = 200 * time.Millisecond, 30 * time.Second
	busy := exec.Command("sh", "-c", "while :; do :; done")
	stopped := exec.Command("sleep", "3600")
	for _, p := range []*exec.Cmd{busy, stopped} {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Process.Signal(syscall.SIGCONT); p.Process.Kill(); p.Wait() })
	}
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 10*time.Second, "the sleep stopped", func() error {
		if st := hivetest.ProcState(stopped.Process.Pid); st != 'T' {
			return fmt.Errorf("state %q", st)
		}
		return nil
	})
	open := func(sock string) *Client {
		c, err := Open(ClientOptions{Socket: sock, SpawnTimeout: bound, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dir := t.TempDir()

	sock, got := slowHolder(t, busy.Process.Pid, 6*bound)
	c := open(sock)
	t0 := time.Now()
	st, err := c.Spawn(spec(dir, "slow", "/bin/true"))
	if d := time.Since(t0); err != nil || st.Pid != busy.Process.Pid || d < 6*bound {
		t.Errorf("spawn to a working holder that answers after %v: %+v, %v after %v; want its answer", 6*bound, st, err, d)
	}
	if req := <-got; req.Deadline == nil || req.Deadline.Sub(t0) < timeout-time.Second || req.Deadline.Sub(t0) > timeout+time.Second {
		t.Errorf("the spawn's deadline is %v after its call, want the Timeout %v", req.Deadline.Sub(t0), timeout)
	}

	sock, got = slowHolder(t, stopped.Process.Pid, -1)
	c = open(sock)
	t0 = time.Now()
	_, err = c.Spawn(spec(dir, "stalled", "/bin/true"))
	d := time.Since(t0)
	<-got
	if !errors.Is(err, ErrNotAnswering) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", stopped.Process.Pid)) {
		t.Errorf("spawn to a stopped holder: %v, want ErrNotAnswering naming pid %d", err, stopped.Process.Pid)
	}
	if d > 5*bound {
		t.Errorf("spawn to a stopped holder gave up after %v, its bound is %v", d, bound)
	}
}

// A holder that exits at its start fails Open at once, with its status
// and where its log is, instead of the dials of the next 10 s.
func TestHolderThatExitsAtItsStart(t *testing.T) {
	dir, err := os.MkdirTemp("", "hold")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	log := filepath.Join(dir, "holder.log")
	t0 := time.Now()
	c, err := Open(ClientOptions{Socket: filepath.Join(dir, "holder.sock"), Command: []string{"/bin/sh", "-c", "exit 3"}, Log: log})
	if err == nil {
		c.Close()
		t.Fatal("Open with a holder that exits at once: no error")
	}
	if d := time.Since(t0); !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), log) || d > 5*time.Second {
		t.Errorf("Open with a holder that exits at once: %v after %v, want its status and its log's path, at once", err, d)
	}
}
