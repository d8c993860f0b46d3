//go:build unix

package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// A daemon lock held while no daemon answers (right after a kill -9, a
// child the dead daemon was starting may hold it until it execs) is
// waited for, not taken for a running daemon: the daemon starts once it
// is free.
func TestLockHeldBrieflyIsWaitedFor(t *testing.T) {
	dir, err := os.MkdirTemp("", "hive-lock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l := paths.Layout{Dir: dir}
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	f, err := paths.OpenFile(l.Lock(), os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// Something that is no daemon on the socket: each dial of the
	// starting daemon is an accept here, closed unanswered.
	ln, err := net.Listen("unix", l.Socket())
	if err != nil {
		t.Fatal(err)
	}
	dials := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			dials <- struct{}{}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	// The first dial asks whether a daemon runs; the second is the
	// daemon finding the lock held and looking again.
	for range 2 {
		select {
		case <-dials:
		case err := <-done:
			t.Fatalf("the daemon gave up while the lock was held briefly: %v", err)
		}
	}
	ln.Close()
	f.Close() // the lock is free
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the daemon did not start once the lock was free: %v", err)
	}
	if _, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
