package cli

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// asyncLog takes the daemon's logging off the callers' path: a record is
// cloned and queued, and one goroutine formats and writes it. A tool call
// logs two lines, and formatting and writing them on the call's path
// cost more than the daemon's own work for a short command. Lines keep
// their order; the goroutine wakes for the first line, lets the lines of
// the next 2 ms gather, writes them and flushes, so a line reaches the
// file within moments. A writer that cannot keep up makes callers wait
// once maxQueued records are queued, so memory stays bounded and nothing
// is dropped.
type asyncLog struct {
	out *bufio.Writer

	mu     sync.Mutex
	cond   *sync.Cond // signalled when the queue is taken
	queue  []queuedRecord
	idle   bool // the loop waits for a first record: a push must wake it
	closed bool
	direct sync.Mutex // orders the writes made after close
	wake   chan struct{}
	done   chan struct{}
}

type queuedRecord struct {
	h slog.Handler
	r slog.Record
}

const maxQueued = 4096

// logLinger is how long the log goroutine lets lines gather after a first
// one arrives.
const logLinger = 2 * time.Millisecond

// newAsyncLog returns a logger that writes text records to w, and a func
// that writes out what is queued and stops the goroutine (later records
// are written directly).
func newAsyncLog(w io.Writer, opts *slog.HandlerOptions) (*slog.Logger, func()) {
	a := &asyncLog{out: bufio.NewWriterSize(w, 64<<10), wake: make(chan struct{}, 1), done: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	go a.loop()
	return slog.New(&asyncHandler{inner: slog.NewTextHandler(a.out, opts), a: a}), a.close
}

func (a *asyncLog) push(h slog.Handler, r slog.Record) {
	a.mu.Lock()
	for len(a.queue) >= maxQueued && !a.closed {
		a.cond.Wait()
	}
	if a.closed {
		// Once the loop has written everything before, write in place.
		a.mu.Unlock()
		<-a.done
		a.direct.Lock()
		defer a.direct.Unlock()
		h.Handle(context.Background(), r)
		a.out.Flush()
		return
	}
	a.queue = append(a.queue, queuedRecord{h, r})
	wake := a.idle
	a.idle = false
	a.mu.Unlock()
	if wake {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

func (a *asyncLog) loop() {
	defer close(a.done)
	var spare []queuedRecord
	for {
		a.mu.Lock()
		batch, closed := a.queue, a.closed
		a.queue = spare[:0]
		a.idle = len(batch) == 0 && !closed
		a.cond.Broadcast()
		a.mu.Unlock()
		for i := range batch {
			batch[i].h.Handle(context.Background(), batch[i].r)
			batch[i] = queuedRecord{}
		}
		// The two slices take turns: the queue is never the batch being
		// written.
		spare = batch
		if len(batch) > 0 {
			continue // more may have come in while these were written
		}
		a.out.Flush()
		if closed {
			return
		}
		<-a.wake
		// Let the lines of the moment gather: one wake-up and one write
		// for all of them, instead of one per line.
		time.Sleep(logLinger)
	}
}

func (a *asyncLog) close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	a.cond.Broadcast()
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	<-a.done
}

// asyncHandler is the slog.Handler of an asyncLog: inner formats, on the
// log's goroutine.
type asyncHandler struct {
	inner slog.Handler
	a     *asyncLog
}

func (h *asyncHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *asyncHandler) Handle(_ context.Context, r slog.Record) error {
	h.a.push(h.inner, r.Clone())
	return nil
}

func (h *asyncHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &asyncHandler{inner: h.inner.WithAttrs(attrs), a: h.a}
}

func (h *asyncHandler) WithGroup(name string) slog.Handler {
	return &asyncHandler{inner: h.inner.WithGroup(name), a: h.a}
}
