package cli

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// slowBuffer is a writer that takes its time, like a disk under load.
type slowBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *slowBuffer) Write(p []byte) (int, error) {
	time.Sleep(200 * time.Microsecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *slowBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAsyncLogKeepsOrderAndLosesNothing(t *testing.T) {
	dst := &slowBuffer{}
	log, closeLog := newAsyncLog(dst, nil)
	sub := log.With("session", "s1")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				sub.Info("tool call", "g", g, "i", i)
			}
		}()
	}
	wg.Wait()
	closeLog()
	log.Info("after close")

	lines := strings.Split(strings.TrimSpace(dst.String()), "\n")
	if len(lines) != 2001 {
		t.Fatalf("%d lines, want 2001", len(lines))
	}
	next := map[string]int{}
	for _, l := range lines[:2000] {
		if !strings.Contains(l, `msg="tool call" session=s1`) {
			t.Fatalf("line %q lacks the message or the logger's attrs", l)
		}
		var g, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, " g="):], " g=%d i=%d", &g, &i); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		key := fmt.Sprint(g)
		if i != next[key] {
			t.Fatalf("goroutine %d: line %d came after %d", g, i, next[key]-1)
		}
		next[key]++
	}
	if !strings.Contains(lines[2000], "after close") {
		t.Errorf("a line logged after close: %q", lines[2000])
	}
	if dst.writes >= 2000 {
		t.Errorf("%d writes for 2000 lines: lines were not batched while the writer was busy", dst.writes)
	}
}

func TestAsyncLogBoundsItsQueue(t *testing.T) {
	block := make(chan struct{})
	dst := writerFunc(func(p []byte) (int, error) { <-block; return len(p), nil })
	log, closeLog := newAsyncLog(dst, nil)
	long := strings.Repeat("x", 1<<10)
	wrote := make(chan int)
	go func() {
		n := 0
		for range 3 * maxQueued {
			log.Info(long)
			n++
		}
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("all %d lines returned while the output was blocked: the queue is unbounded", n)
	case <-time.After(300 * time.Millisecond):
	}
	close(block)
	<-wrote
	closeLog()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Bursts with idle time between them: the loop goes idle between the
// bursts, and lines arrive while it writes. (The queue and the batch being
// written once shared an array after an idle turn.)
func TestAsyncLogIdleThenBusy(t *testing.T) {
	dst := &slowBuffer{}
	log, closeLog := newAsyncLog(dst, nil)
	defer closeLog()
	n := 0
	waitLines := func(want int) {
		t.Helper()
		hivetest.Eventually(t, 5*time.Second, fmt.Sprintf("%d lines written", want), func() error {
			if n := strings.Count(dst.String(), "\n"); n < want {
				return fmt.Errorf("%d lines written, want %d", n, want)
			}
			return nil
		})
	}
	for round := range 50 {
		log.Info("alone", "round", round)
		n++
		waitLines(n)
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					log.Info("burst", "round", round, "g", g, "i", i)
				}
			}()
		}
		wg.Wait()
		n += 15
		waitLines(n)
	}
	if got := strings.Count(dst.String(), `msg=burst`); got != 50*15 {
		t.Errorf("%d burst lines, want %d", got, 50*15)
	}
}

// Lines logged while close runs, some of them waiting for room in a full
// queue, are all written once, after the queued ones.
func TestAsyncLogCloseWhileBusy(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var out bytes.Buffer
	dst := writerFunc(func(p []byte) (int, error) {
		<-release
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	})
	log, closeLog := newAsyncLog(dst, nil)
	var wg sync.WaitGroup
	const per = maxQueued // 4 writers: more than the queue holds
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				log.Info("line", "g", g, "i", i)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // the queue fills; writers wait
	closed := make(chan struct{})
	go func() { closeLog(); close(closed) }()
	time.Sleep(10 * time.Millisecond)
	close(release)
	<-closed
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(out.String(), "\n"); n != 4*per {
		t.Fatalf("%d lines, want %d", n, 4*per)
	}
}
