//go:build linux

package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/cli"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"

	"github.com/hivetools/hive/internal/hivetest"
)

// The test binary doubles as hive: with HIVE_CLIENT_TEST_MAIN set it runs
// the command line it was given, so Ensure starts a real daemon process.
func TestMain(m *testing.M) {
	if os.Getenv("HIVE_CLIENT_TEST_MAIN") == "1" {
		err := cli.Run(context.Background(), cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Exe: os.Args[0]}, os.Args[1:])
		if err != nil {
			os.Stderr.WriteString("hive: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// Ensure starts a daemon where none answers; Call and CallWait talk to it
// (CallWait's wait ends with its ctx, and its answer is still read); Stop
// stops it. Every goroutine of the client ends, the one that reaps the
// started daemon included once the daemon has exited (goleak checks).
func TestEnsureCallStop(t *testing.T) {
	before := goleak.IgnoreCurrent()
	dir, err := os.MkdirTemp("", "hive-c-") // a short socket path
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l := paths.Layout{Dir: dir}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HIVE_CLIENT_TEST_MAIN", "1")

	if _, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); !errors.Is(err, client.ErrNoDaemon) {
		t.Fatalf("Call before any daemon: %v, want ErrNoDaemon", err)
	}
	if err := client.Ensure(l, exe, 20*time.Second); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion})
	if err != nil || resp.PID == 0 {
		t.Fatalf("version: %v %+v, want the daemon's pid", err, resp)
	}
	pid := resp.PID
	defer func() {
		// Only if the test failed before the stop: the daemon is ours.
		if processExists(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the wait ends at once; the daemon still answers
	resp, err = client.CallWait(ctx, l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
	if err != nil || resp.Message != nil {
		t.Errorf("inbox_next after its ctx ended: %v %+v, want an empty answer", err, resp)
	}

	stopped, err := client.Stop(l, 0, false, 20*time.Second)
	if err != nil || stopped != pid {
		t.Fatalf("Stop: %d %v, want pid %d", stopped, err, pid)
	}
	// The daemon is this process's child: once reaped it is gone.
	hivetest.Eventually(t, 20*time.Second, "the stopped daemon's process gone", func() error {
		if processExists(pid) {
			return fmt.Errorf("daemon %d still exists after its stop", pid)
		}
		return nil
	})
	if _, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); !errors.Is(err, client.ErrNoDaemon) {
		t.Errorf("Call after Stop: %v, want ErrNoDaemon", err)
	}
	goleak.VerifyNone(t, before)
}

// processExists tells whether pid is a process, a zombie included.
func processExists(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") X ")
}
