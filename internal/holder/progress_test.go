//go:build unix

package holder

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
)

// ptySink counts a client's progress events of PTY sessions.
type ptySink struct {
	mu     sync.Mutex
	events int
	total  int64
}

func (s *ptySink) PTYProgress(id string, at output.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events++
	s.total = max(s.total, at.Total)
}
func (s *ptySink) PTYExited(id string, code int) {}
func (s *ptySink) PTYHolderLost()                {}

func (s *ptySink) counts() (events int, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events, s.total
}

// A PTY session's output is told at once after a write, not a
// ProgressEvery later (an interactive program's answer is awaited: the
// throttle was most of a REPL turn); under a burst of writes the daemon
// is told at most ptyBurst times per ProgressEvery. ProgressEvery is an
// hour here: what is told within the test is told without the throttle.
func TestPTYOutputToldAtOnce(t *testing.T) {
	dir, err := os.MkdirTemp("", "hold")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "holder.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServerOptions{Socket: sock, FirstWait: time.Minute, ProgressEvery: time.Hour, Ready: func() { close(ready) }})
	}()
	defer func() { cancel(); <-done }()
	<-ready
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &ptySink{}
	c.ListenPTY(s)
	out := filepath.Join(dir, "pty_s1.out")
	if _, err := c.SpawnPTY(wire.PTYSpec{ID: "pty_s1", Path: "/bin/cat", Argv: []string{"cat"}, Env: []string{"PATH=/usr/bin:/bin"},
		Cols: 80, Rows: 24, Output: out}); err != nil {
		t.Fatal(err)
	}
	master, err := c.MasterPTY("pty_s1")
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	// A turn: a line in, its echo (the terminal's and cat's) told.
	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 10*time.Second, "the output of the first write to be told", func() error {
		if _, total := s.counts(); total < int64(len("hello\r\nhello\r\n")) {
			return fmt.Errorf("told %d bytes", total)
		}
		return nil
	})
	// A burst: 4*ptyBurst writes, each read by the holder on its own (the
	// next is written once the last is in the file).
	for i := range 4 * ptyBurst {
		line := fmt.Sprintf("line-%d\n", i)
		if _, err := master.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		hivetest.Eventually(t, 10*time.Second, "the echo of "+line+" in the output file", func() error {
			b, _ := os.ReadFile(out)
			if !bytes.Contains(b, []byte(fmt.Sprintf("line-%d\r\nline-%d\r\n", i, i))) {
				return fmt.Errorf("not in %q", b)
			}
			return nil
		})
	}
	if events, _ := s.counts(); events > ptyBurst {
		t.Errorf("%d progress events for %d writes in a burst, want at most %d (ptyBurst per ProgressEvery)", events, 4*ptyBurst+1, ptyBurst)
	}
}
