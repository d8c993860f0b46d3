package cli

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// slowBuffer is a writer that takes its time, like a disk under load.
type slowBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *slowBuffer) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func TestLogWriterKeepsOrderAndLosesNothing(t *testing.T) {
	dst := &slowBuffer{}
	l := newLogWriter(dst)
	var want bytes.Buffer
	for i := range 5000 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l.Write([]byte("after close\n"))
	want.WriteString("after close\n")
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if dst.b.String() != want.String() {
		t.Fatalf("got %d bytes, want %d (order or content differs)", dst.b.Len(), want.Len())
	}
	if dst.writes >= 5000 {
		t.Errorf("%d writes for 5000 lines: lines were not batched while the writer was busy", dst.writes)
	}
}

func TestLogWriterBoundsItsBuffer(t *testing.T) {
	block := make(chan struct{})
	dst := writerFunc(func(p []byte) (int, error) { <-block; return len(p), nil })
	l := newLogWriter(dst)
	line := bytes.Repeat([]byte("x"), 64<<10)
	wrote := make(chan int)
	go func() {
		n := 0
		for range 40 { // 2.5 MiB: more than the buffer holds
			l.Write(line)
			n++
		}
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("all %d writes returned while the output was blocked: the buffer is unbounded", n)
	case <-time.After(200 * time.Millisecond):
	}
	close(block)
	<-wrote
	l.Close()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
