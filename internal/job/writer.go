package job

import (
	"context"
	"log/slog"
	"sync"

	"github.com/hivetools/hive/internal/store"
)

// recordWriter writes job records on its own goroutine, so that a job's
// end does not wait for the store. Writes of the same job coalesce (the
// latest snapshot wins, which keeps them in order), and a caller that
// needs its record durable before it goes on waits for it.
type recordWriter struct {
	st  *store.Store
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]*pendingWrite
	order   []string
	wake    chan struct{}
	closed  bool
	done    chan struct{}
}

type pendingWrite struct {
	rec     store.Job
	waiters []chan struct{}
}

func newRecordWriter(st *store.Store, log *slog.Logger) *recordWriter {
	w := &recordWriter{st: st, log: log, pending: map[string]*pendingWrite{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

// put queues rec; with wait it returns once rec (or a later snapshot of
// the same job) is written.
func (w *recordWriter) put(rec store.Job, wait bool) {
	var ch chan struct{}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.write(rec)
		return
	}
	p, ok := w.pending[rec.ID]
	if !ok {
		p = &pendingWrite{}
		w.pending[rec.ID] = p
		w.order = append(w.order, rec.ID)
	}
	p.rec = rec
	if wait {
		ch = make(chan struct{})
		p.waiters = append(p.waiters, ch)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if ch != nil {
		<-ch
	}
}

func (w *recordWriter) write(rec store.Job) {
	if err := w.st.PutJob(context.Background(), rec); err != nil {
		w.log.Error("persist job", "job", rec.ID, "err", err)
	}
}

func (w *recordWriter) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		order, pending := w.order, w.pending
		w.order, w.pending = nil, map[string]*pendingWrite{}
		closed := w.closed
		w.mu.Unlock()
		for _, id := range order {
			p := pending[id]
			w.write(p.rec)
			for _, ch := range p.waiters {
				close(ch)
			}
		}
		if len(order) > 0 {
			continue
		}
		if closed {
			return
		}
		<-w.wake
	}
}

// close writes what is queued and stops the goroutine; later puts write
// directly.
func (w *recordWriter) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}
