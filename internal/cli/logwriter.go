package cli

import (
	"io"
	"sync"
)

// logWriter takes the daemon's log lines off the caller's path: Write
// appends to a buffer and a goroutine writes it out at once, so a tool
// call does not wait for a write to daemon.log. Lines keep their order. A
// writer that cannot keep up makes Write wait once the buffer holds
// maxBuffered bytes, so memory stays bounded and nothing is dropped.
type logWriter struct {
	w io.Writer

	mu     sync.Mutex
	cond   *sync.Cond // signalled when buf is taken or the writer stops
	buf    []byte
	closed bool
	direct sync.Mutex // orders writes after Close
	wake   chan struct{}
	done   chan struct{}
}

const maxBuffered = 1 << 20

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.loop()
	return l
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	for len(l.buf) >= maxBuffered && !l.closed {
		l.cond.Wait()
	}
	if l.closed {
		// After Close (the daemon is exiting): once the loop has written
		// everything before, write directly.
		l.mu.Unlock()
		<-l.done
		l.direct.Lock()
		defer l.direct.Unlock()
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *logWriter) loop() {
	defer close(l.done)
	var spare []byte
	for {
		l.mu.Lock()
		buf, closed := l.buf, l.closed
		l.buf = spare[:0]
		l.cond.Broadcast()
		l.mu.Unlock()
		if len(buf) > 0 {
			l.w.Write(buf)
			spare = buf
			if cap(spare) > maxBuffered {
				spare = nil
			}
			continue
		}
		if closed {
			return
		}
		<-l.wake
	}
}

// Close writes out what is buffered; later writes go straight through.
func (l *logWriter) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
}
