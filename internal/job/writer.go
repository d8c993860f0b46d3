package job

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/store"
)

// recordLinger is how long a record that nobody waits for may stay
// queued: writes within it share one commit, and a short job's start and
// end become one write.
const recordLinger = 10 * time.Millisecond

// recordWriter writes job records on its own goroutine, so that a job's
// start and end do not wait for the store. Writes of the same job
// coalesce (the latest snapshot wins, which keeps them in order), and
// what is queued is written together in one transaction. A caller that
// needs the store up to date before it goes on (a detached job's start, a
// reader of the store) waits for it, which ends the linger at once.
type recordWriter struct {
	st  *store.Store
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]pendingRecord
	order   []string
	queued  uint64 // puts so far
	written uint64 // puts in the store
	waiters []flushWaiter
	idle    bool // the loop waits for a first record: a put must wake it
	wake    chan struct{}
	closed  bool
	done    chan struct{}
}

type pendingRecord struct {
	rec store.Job
	job *Job // nil for records of jobs not in memory
}

type flushWaiter struct {
	upTo uint64
	ch   chan struct{}
}

func newRecordWriter(st *store.Store, log *slog.Logger) *recordWriter {
	w := &recordWriter{st: st, log: log, pending: map[string]pendingRecord{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

// put queues rec, the record of j; with wait it returns once rec (or a
// later snapshot of the same job) is written.
func (w *recordWriter) put(j *Job, rec store.Job, wait bool) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		fillPidStart(j, &rec)
		w.write(rec)
		return
	}
	if _, ok := w.pending[rec.ID]; !ok {
		w.order = append(w.order, rec.ID)
	}
	w.pending[rec.ID] = pendingRecord{rec, j}
	w.queued++
	ch := w.waitLocked(wait)
	// A lingering loop needs no wake-up for a record nobody waits for:
	// it writes it with the others when the linger ends.
	wake := w.idle || ch != nil
	w.idle = false
	w.mu.Unlock()
	if wake {
		w.signal()
	}
	if ch != nil {
		<-ch
	}
}

// flush returns once every record queued before the call is written.
func (w *recordWriter) flush() {
	w.mu.Lock()
	ch := w.waitLocked(w.written < w.queued)
	w.mu.Unlock()
	if ch != nil {
		w.signal()
		<-ch
	}
}

// waitLocked registers a waiter for everything queued so far, if want.
func (w *recordWriter) waitLocked(want bool) chan struct{} {
	if !want {
		return nil
	}
	ch := make(chan struct{})
	w.waiters = append(w.waiters, flushWaiter{upTo: w.queued, ch: ch})
	return ch
}

func (w *recordWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *recordWriter) write(rec store.Job) {
	if err := w.st.PutJob(context.Background(), rec); err != nil {
		w.log.Error("persist job", "job", rec.ID, "err", err)
	}
}

func (w *recordWriter) loop() {
	defer close(w.done)
	linger := time.NewTimer(recordLinger)
	linger.Stop()
	for {
		w.mu.Lock()
		n, urgent, closed := len(w.order), len(w.waiters) > 0, w.closed
		w.idle = n == 0 && !closed
		w.mu.Unlock()
		if n == 0 {
			if closed {
				return
			}
			<-w.wake
			continue
		}
		if !urgent && !closed {
			linger.Reset(recordLinger)
		wait:
			for {
				select {
				case <-linger.C:
					break wait
				case <-w.wake:
					w.mu.Lock()
					urgent, closed = len(w.waiters) > 0, w.closed
					w.mu.Unlock()
					if urgent || closed {
						linger.Stop()
						break wait
					}
				}
			}
		}
		w.mu.Lock()
		order, pending, upTo := w.order, w.pending, w.queued
		w.order, w.pending = nil, map[string]pendingRecord{}
		w.mu.Unlock()
		recs := make([]store.Job, len(order))
		for i, id := range order {
			p := pending[id]
			recs[i] = p.rec
			fillPidStart(p.job, &recs[i])
		}
		if err := w.st.PutJobs(context.Background(), recs); err != nil {
			// One bad record must not lose the others: write them one by one.
			for _, rec := range recs {
				w.write(rec)
			}
		}
		w.mu.Lock()
		w.written = upTo
		kept := w.waiters[:0]
		for _, fw := range w.waiters {
			if fw.upTo <= upTo {
				close(fw.ch)
			} else {
				kept = append(kept, fw)
			}
		}
		w.waiters = kept
		w.mu.Unlock()
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
	w.signal()
	<-w.done
}
