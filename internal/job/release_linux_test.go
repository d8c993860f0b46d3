package job

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// A job let go to its holder (Release) is still this process's child:
// once its leader exits, this process reaps it, whether the release
// came before the job's goroutine began waiting for it or while it
// waited. The holder learns the exit status from its pidfd only once it
// is reaped: with keeping on, TestAdoptedJobKeepsKillOnTimeout ended a
// job released before its wait began "its exit status is not known"
// (under load, 2 of 12 runs), its leader a zombie of the test process.
func TestReleasedChildIsReaped(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep here")
	}
	for _, early := range []bool{true, false} {
		name := "released while its wait runs"
		if early {
			name = "released before its wait began"
		}
		t.Run(name, func(t *testing.T) {
			cmd, pipes, err := newCmd(sleep, []string{"sleep", "30"}, "", nil, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := &child{id: "released", logger: slog.New(slog.DiscardHandler), cmd: cmd, pipes: pipes,
				pidStart: new(atomic.Uint64), reaped: new(atomic.Bool), release: make(chan struct{})}
			if err := c.start(); err != nil {
				t.Fatal(err)
			}
			pid := c.pid
			pidfd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				unix.Kill(pid, unix.SIGKILL)
				t.Skipf("no pidfd here: %v", err)
			}
			defer unix.Close(pidfd)
			ended := make(chan childEnd, 1)
			run := func() { ended <- c.run(io.Discard, io.Discard) }
			if early {
				c.releasePumps(time.Second)
				close(c.release)
				go run()
			} else {
				go run()
				hivetest.Eventually(t, 10*time.Second, "its wait to begin", func() error {
					c.mu.Lock()
					defer c.mu.Unlock()
					if c.pumps == nil {
						return errors.New("no pumps yet")
					}
					return nil
				})
				c.releasePumps(time.Second)
				close(c.release)
			}
			select {
			case e := <-ended:
				if !e.released {
					t.Fatalf("run after a release: %+v", e)
				}
			case <-time.After(10 * time.Second):
				unix.Kill(pid, unix.SIGKILL)
				t.Fatal("run did not return at the release")
			}
			// Not reaped yet (it runs): the pid is still its own.
			if err := unix.Kill(pid, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			hivetest.Eventually(t, 10*time.Second, "the released leader reaped by this process", func() error {
				ws, reaped, err := proc.PidfdExit(pidfd)
				switch {
				case errors.Is(err, errors.ErrUnsupported):
					return nil // a kernel that cannot tell: the check below
				case err != nil:
					return err
				case !reaped:
					return errors.New("a zombie still")
				case !ws.Signaled() || ws.Signal() != syscall.SIGKILL:
					return fmt.Errorf("its exit status %#x, want killed by SIGKILL", uint32(ws))
				}
				return nil
			})
			hivetest.Eventually(t, 10*time.Second, "no process left by that pid", func() error {
				if st, ok := proc.Read(pid); ok {
					return fmt.Errorf("pid %d: %+v", pid, st)
				}
				return nil
			})
		})
	}
}
