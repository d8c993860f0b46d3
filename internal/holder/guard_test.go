//go:build unix

package holder

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// guardEnv makes a holder process of this test binary (serveIfAsked)
// start a guard: this test binary again, which guardIfAsked turns into
// the guard.
const guardEnv = "HIVE_TEST_HOLDER_GUARD"

// guardIfAsked runs this test binary as a holder's guard when it was
// started as one (holder-guard, then guardArgs): fd 3 is the pipe.
func guardIfAsked() {
	a := os.Args
	if len(a) < 6 || a[1] != "holder-guard" || a[2] != "--state-dir" || a[4] != "--instance" {
		return
	}
	o := GuardOptions{Owner: a[3], Instance: a[5]}
	if len(a) >= 8 && a[6] == "--cgroups" {
		o.Cgroups = a[7]
	}
	if _, err := Guard(os.NewFile(3, "pipe"), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// guardServer is the Guard of a holder that runs this test binary as
// its guard, or none.
func guardServer() []string {
	if os.Getenv(guardEnv) == "" {
		return nil
	}
	return []string{os.Args[0], "holder-guard"}
}

// startMarked starts argv with env's extra lines; the process is waited
// for (reaped) in the background, and killed at the test's end.
func startMarked(t *testing.T, env []string, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd.Process.Pid
}

// alive: running, not a zombie.
func alive(pid int) bool {
	st, ok := proc.Read(pid)
	return ok && st.Alive()
}

// The guard ends, once its pipe ends, every process marked with its
// holder's instance (SIGTERM; SIGKILL after the grace for one that
// ignores it), and nothing else: not a process of another holder, not
// one unmarked. A holder that died (no goodbye) leaves the note for the
// next daemon, naming it; one that ended by itself leaves none.
func TestGuardEndsItsHoldersProcesses(t *testing.T) {
	if !proc.Supported {
		t.Skip("no process table here")
	}
	for _, tc := range []struct {
		name    string
		goodbye bool
	}{{"died", false}, {"ended", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// No real holder's: a made-up pid, and this test's start time
			// (a holder's jobs start after it; the guard looks at no older
			// process).
			self, _ := proc.Read(os.Getpid())
			inst := "4242-" + strconv.FormatUint(self.Start, 10)
			mark := EnvHolder + "=" + inst
			sleeper := startMarked(t, []string{mark}, "sleep", "3600")
			sh := startMarked(t, []string{mark}, "sh", "-c", `trap "" TERM; sleep 3600 & wait; wait`) // ignores SIGTERM
			other := startMarked(t, []string{EnvHolder + "=4242-1"}, "sleep", "3600")
			plain := startMarked(t, nil, "sleep", "3600")
			var pids []int
			hivetest.Eventually(t, 10*time.Second, "the marked processes, the sh's sleep among them", func() error {
				kids := proc.Children(sh)
				if len(kids) != 1 {
					return fmt.Errorf("sh %d has %d children", sh, len(kids))
				}
				pids = []int{sleeper, sh, kids[0].Pid}
				for _, p := range pids {
					if !proc.HasEnv(p, mark) {
						return fmt.Errorf("%d not marked yet", p)
					}
				}
				return nil
			})
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := Guard(r, GuardOptions{Owner: dir, Instance: inst, Grace: 200 * time.Millisecond})
				r.Close()
				done <- result{n, err}
			}()
			// The guard waits while the pipe is open.
			select {
			case res := <-done:
				t.Fatalf("the guard returned with its holder alive: %+v", res)
			case <-time.After(100 * time.Millisecond):
			}
			for _, p := range pids {
				if !alive(p) {
					t.Fatalf("process %d ended before the holder did", p)
				}
			}
			if tc.goodbye {
				w.Write([]byte{'q'})
			}
			w.Close()
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.n != len(pids) {
				t.Errorf("the guard ended %d processes, want %d", res.n, len(pids))
			}
			for _, p := range pids {
				if alive(p) {
					t.Errorf("marked process %d outlived the guard's sweep", p)
				}
			}
			if !alive(other) || !alive(plain) {
				t.Errorf("the guard ended a process not of its holder: another holder's alive %v, unmarked alive %v", alive(other), alive(plain))
			}
			l, ok := ReadLost(dir)
			switch {
			case tc.goodbye && ok:
				t.Errorf("a holder that ended by itself left a note of its death: %+v", l)
			case !tc.goodbye && (!ok || l.Pid != 4242 || l.Instance != inst || !strings.Contains(l.Reason(), "pid 4242")):
				t.Errorf("the note of the holder's death: %+v (found %v), reason %q: want pid 4242, instance %s", l, ok, l.Reason(), inst)
			}
		})
	}
}

// A holder process started with a guard marks its jobs with its
// instance; killed with -9 while no client watches (the client here
// does nothing on the loss), its guard ends the jobs (a grandchild too)
// and exits, and the note names the holder.
func TestGuardOfAKilledHolder(t *testing.T) {
	if !proc.Supported {
		t.Skip("no process table here")
	}
	dir, err := os.MkdirTemp("", "hold") // short: a unix socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "holder.sock")
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), socketEnv+"="+sock, guardEnv+"=1")
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	hpid := h.Process.Pid
	t.Cleanup(func() {
		h.Process.Kill()
		h.Wait()
	})
	var c *Client
	hivetest.Eventually(t, 10*time.Second, "the holder process serving", func() (err error) {
		c, err = Open(ClientOptions{Socket: sock})
		return err
	})
	defer c.Close()
	c.Listen(newSink())
	inst := Instance(hpid)
	var pids []int
	for _, x := range []struct{ id, cmd string }{{"a", "exec sleep 3600"}, {"b", "sleep 3600 & echo $!; wait"}} {
		st, err := c.Spawn(spec(dir, x.id, "/bin/sh", "-c", x.cmd))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, st.Pid)
	}
	var grandchild int
	hivetest.Eventually(t, 10*time.Second, "the grandchild's pid", func() error {
		b, _ := os.ReadFile(filepath.Join(dir, "b.out"))
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("b.out %q", b)
		}
		grandchild = n
		return nil
	})
	pids = append(pids, grandchild)
	// (Eventually: a process in the middle of an exec shows no
	// environment for a moment.)
	hivetest.Eventually(t, 10*time.Second, "the jobs' processes marked with the holder's instance", func() error {
		for _, p := range pids {
			if !proc.HasEnv(p, EnvHolder+"="+inst) {
				return fmt.Errorf("process %d of a job does not carry %s=%s", p, EnvHolder, inst)
			}
		}
		return nil
	})
	var guard int
	hivetest.Eventually(t, 10*time.Second, "the holder's guard", func() error {
		for _, st := range proc.Children(hpid) {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(st.Pid) + "/cmdline"); strings.Contains(string(b), "\x00--instance\x00"+inst) {
				guard = st.Pid
				return nil
			}
		}
		return fmt.Errorf("no child of holder %d is its guard", hpid)
	})
	if !IsGuard(guard) || IsGuard(pids[0]) || IsGuard(hpid) {
		t.Errorf("IsGuard: the guard %v, a job %v, the holder %v: want true, false, false", IsGuard(guard), IsGuard(pids[0]), IsGuard(hpid))
	}
	if err := h.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	hivetest.Eventually(t, 10*time.Second, "the jobs' processes to end", func() error {
		for _, p := range append(pids, guard) {
			if alive(p) {
				return fmt.Errorf("process %d alive", p)
			}
		}
		return nil
	})
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("the jobs outlived their holder by %v", d)
	}
	if l, ok := ReadLost(dir); !ok || l.Pid != hpid || l.Instance != inst {
		t.Errorf("the note of the holder's death: %+v (found %v): want pid %d, instance %s", l, ok, hpid, inst)
	}
}

// A holder that ends by itself (quit, nothing held) says goodbye to its
// guard: the guard exits with it and leaves no note of a death.
func TestGuardOfAHolderThatQuits(t *testing.T) {
	if !proc.Supported {
		t.Skip("no process table here")
	}
	dir, err := os.MkdirTemp("", "hold")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "holder.sock")
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), socketEnv+"="+sock, guardEnv+"=1")
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- h.Wait() }()
	t.Cleanup(func() {
		h.Process.Kill()
		<-exited
	})
	var c *Client
	hivetest.Eventually(t, 10*time.Second, "the holder process serving", func() (err error) {
		c, err = Open(ClientOptions{Socket: sock})
		return err
	})
	defer c.Close()
	var guard int
	hivetest.Eventually(t, 10*time.Second, "the holder's guard", func() error {
		for _, st := range proc.Children(h.Process.Pid) {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(st.Pid) + "/cmdline"); strings.Contains(string(b), "\x00--instance\x00") {
				guard = st.Pid
				return nil
			}
		}
		return fmt.Errorf("no guard yet")
	})
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("the holder's exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not exit on quit")
	}
	if alive(guard) {
		t.Errorf("the guard %d outlived a holder that quit", guard)
	}
	if l, ok := ReadLost(dir); ok {
		t.Errorf("a holder that quit left a note of its death: %+v", l)
	}
}

// A job's environment gets the holder's mark once, replacing one it
// inherited (a hive started inside another hive's job); a holder a
// daemon starts carries none (nor any job mark).
func TestHolderMark(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		kv   string
		want []string
	}{
		{[]string{"A=1"}, "HIVE_HOLDER=7-8", []string{"A=1", "HIVE_HOLDER=7-8"}},
		{[]string{"HIVE_HOLDER=1-2", "A=1", "HIVE_HOLDER=3-4"}, "HIVE_HOLDER=7-8", []string{"A=1", "HIVE_HOLDER=7-8"}},
		{[]string{"A=1"}, "", []string{"A=1"}}, // no process table: no mark
	} {
		if got := withMark(tc.env, tc.kv); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("withMark(%q, %q) = %q, want %q", tc.env, tc.kv, got, tc.want)
		}
	}
	env := holderEnv([]string{"A=1", "HIVE_HOLDER=1-2", "HIVE_JOB_ID=x", "HIVE_JOB_OWNER=/s", "HIVE_PTY_ID=p", "HIVE_STATE_DIR=/d"})
	if got := strings.Join(env, " "); got != "A=1 HIVE_STATE_DIR=/d" {
		t.Errorf("a holder's environment: %q, want no mark", got)
	}
}
