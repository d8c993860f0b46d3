package job_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
)

// takeable is a process this test started as a daemon does (its own
// group, its output in pipes), with the descriptors a holder takes it
// over with; the test, its parent, reaps it as the daemon (or init)
// would.
type takeable struct {
	cmd                *exec.Cmd
	stdin              io.WriteCloser
	pidfd, outR, errR  int
	spec               wire.JobSpec
	start              wire.JobStart
	reaped             chan error
	outPath, errorPath string
}

func startTakeable(t *testing.T, dir, id, script string) *takeable {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.Env = []string{"PATH=/usr/bin:/bin", job.EnvJobID + "=" + id, job.EnvJobOwner + "=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	tk := &takeable{cmd: cmd, stdin: stdin, reaped: make(chan error, 1)}
	go func() { tk.reaped <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-tk.reaped
	})
	if tk.pidfd, err = unix.PidfdOpen(cmd.Process.Pid, 0); err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	dup := func(f *os.File) int {
		rc, _ := f.SyscallConn()
		fd := -1
		rc.Control(func(x uintptr) { fd, _ = unix.Dup(int(x)) })
		f.Close()
		return fd
	}
	tk.outR, tk.errR = dup(outR), dup(errR)
	tk.outPath, tk.errorPath = filepath.Join(dir, id+".out"), filepath.Join(dir, id+".err")
	tk.spec = wire.JobSpec{ID: id, Stdout: tk.outPath, Stderr: tk.errorPath, Index: filepath.Join(dir, id+".idx"), Owner: dir, LeftoverGrace: 200 * time.Millisecond}
	st, _ := proc.Read(cmd.Process.Pid)
	tk.start = wire.JobStart{Pid: cmd.Process.Pid, PidStart: st.Start, Started: time.Now()}
	return tk
}

// take hands tk to a holder's TakeHeld and returns its end's channel.
func (tk *takeable) take(t *testing.T, at [2]output.Stats) (*job.HeldProc, chan wire.JobEnd) {
	t.Helper()
	h, err := job.TakeHeld(tk.spec, tk.start, tk.pidfd, tk.outR, tk.errR, at, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ends := make(chan wire.JobEnd, 1)
	go func() { ends <- h.Wait() }()
	return h, ends
}

func awaitEnd(t *testing.T, ends chan wire.JobEnd) wire.JobEnd {
	t.Helper()
	select {
	case e := <-ends:
		if strings.Contains(e.Error, "this kernel does not tell") {
			t.Skip(e.Error)
		}
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("the taken job did not end")
	}
	return wire.JobEnd{}
}

// A holder takes over a process it did not start: the output goes on in
// the files after what the daemon wrote, and the exit status comes from
// the pidfd once the parent reaped the leader.
func TestTakeHeld(t *testing.T) {
	dir := t.TempDir()
	tk := startTakeable(t, dir, "t1", "read x; echo out1; echo err1 >&2; exit 3")
	// The daemon's part: what it pumped before it went.
	out, _ := output.Create(tk.outPath, nil)
	errs, _ := output.Create(tk.errorPath, nil)
	out.Write([]byte("early\n"))
	at := [2]output.Stats{out.Stats(), errs.Stats()}
	h, ends := tk.take(t, at)
	tk.stdin.Write([]byte("go\n"))
	e := awaitEnd(t, ends)
	if !e.Exited || e.ExitCode != 3 || e.Signal != nil || e.Error != "" || e.Leftover != 0 {
		t.Fatalf("end: %+v", e)
	}
	if e.Stdout.Total != 11 || e.Stdout.InFile != 11 || e.Stderr.Total != 5 {
		t.Errorf("counts: stdout %+v stderr %+v", e.Stdout, e.Stderr)
	}
	if b, _ := os.ReadFile(tk.outPath); string(b) != "early\nout1\n" {
		t.Errorf("stdout file: %q", b)
	}
	if b, _ := os.ReadFile(tk.errorPath); string(b) != "err1\n" {
		t.Errorf("stderr file: %q", b)
	}
	if h.Start.Pid != tk.cmd.Process.Pid {
		t.Errorf("start: %+v", h.Start)
	}
}

// A taken job is stopped through its group, and what its leader left in
// the group at its end is ended and counted.
func TestTakeHeldStopAndLeftovers(t *testing.T) {
	dir := t.TempDir()
	tk := startTakeable(t, dir, "t2", "exec sleep 100")
	h, ends := tk.take(t, [2]output.Stats{})
	h.Stop(false, 5*time.Second)
	e := awaitEnd(t, ends)
	if !e.Exited || e.Signal == nil || *e.Signal != int(syscall.SIGINT) || !e.Stopped {
		t.Errorf("a taken job stopped: %+v", e)
	}

	tk = startTakeable(t, dir, "t3", "sleep 100 & echo $!; exit 0")
	_, ends = tk.take(t, [2]output.Stats{})
	e = awaitEnd(t, ends)
	if !e.Exited || e.ExitCode != 0 || e.Leftover != 1 {
		t.Errorf("a leader that left a process in its group: %+v", e)
	}
	b, _ := os.ReadFile(tk.outPath)
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 {
		t.Fatalf("the left process's pid: %q", b)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		if st, ok := proc.Read(pid); ok && st.Alive() {
			t.Errorf("the process left in the group (pid %d) still runs", pid)
		}
	}
}
