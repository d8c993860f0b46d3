package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/store"
)

// recordLinger is how long a record that nobody waits for may stay
// queued: writes within it share one commit, and a short job's start and
// end become one write.
const recordLinger = 10 * time.Millisecond

// retryEvery is how often records that failed to commit (disk full, I/O
// error) are tried again.
const retryEvery = time.Second

// ErrNotRecorded wraps the store's error when a job's state could not be
// committed: nothing that depends on it may be told to a client.
var ErrNotRecorded = errors.New("job state not recorded")

// recordWriter writes job records in group commits. A put queues a
// record and returns at once with its sequence number; sync(seq) returns
// once every record put up to seq is committed, committing them itself
// (with whatever else is queued, in one transaction) if no commit is under
// way. Records nobody waits for are committed by the writer's goroutine
// after a short linger, so a short job's start and end become one row.
// Writes of the same job coalesce: the latest snapshot wins, which keeps
// them in order.
//
// With each batch go the loose ends of detached jobs (todo, from
// Options.Todo), in the same transaction; onCommit hears of those that
// changed before any waiter of the batch is released.
//
// A failed commit keeps its records queued (a newer snapshot of a job
// replaces its older one) and is retried every second; until a commit
// succeeds, err reports the failure.
type recordWriter struct {
	st       *store.Store
	log      *slog.Logger
	todo     func(Info) store.Todo
	onCommit func([]store.Todo, []Info)
	onRecord func(Info) // hears of each record committed (Options.OnRecord)

	mu         sync.Mutex
	cond       *sync.Cond // signalled when a commit ends
	pending    map[string]pendingRecord
	order      []string
	queued     uint64   // puts so far: the last put's sequence number
	committed  uint64   // every put up to this one is in the store
	committing bool     // a commit is under way (by a syncer or the loop)
	attempt    uint64   // commits tried so far
	err        error    // the last commit's error; nil once one succeeds
	failedUpTo uint64   // the last failed commit held puts up to this one
	idle       bool     // the loop waits for a first record: a put must wake it
	hurried    bool     // commit what is queued without the linger
	journal    *journal // emptied of what each commit holds (set before the first put)
	after      []afterCommit
	wake       chan struct{}
	closed     bool
	done       chan struct{}
}

// afterCommit is a call waiting for the commit of the puts up to seq.
type afterCommit struct {
	seq uint64
	f   func()
}

type pendingRecord struct {
	info   Info
	job    *Job // nil for records of jobs not in memory
	notify bool // the job is detached: its loose end goes with the record
}

func newRecordWriter(st *store.Store, log *slog.Logger, todo func(Info) store.Todo, onCommit func([]store.Todo, []Info), onRecord func(Info)) *recordWriter {
	w := &recordWriter{st: st, log: log, todo: todo, onCommit: onCommit, onRecord: onRecord, pending: map[string]pendingRecord{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

// put queues the record of in (the snapshot of j, which may be nil) and
// returns its sequence number. It never blocks on the store, so it may be
// called under the job's and the manager's locks. notify says the job is
// detached: its loose end is written with the record.
func (w *recordWriter) put(j *Job, in Info, notify bool) uint64 {
	w.mu.Lock()
	if _, ok := w.pending[in.ID]; !ok {
		w.order = append(w.order, in.ID)
	}
	w.pending[in.ID] = pendingRecord{info: in, job: j, notify: notify}
	w.queued++
	seq := w.queued
	wake := w.idle
	w.idle = false
	w.mu.Unlock()
	if wake {
		w.signal()
	}
	return seq
}

// sync returns once every record put up to seq is committed. If no
// commit is under way it commits what is queued itself; if the commit
// that held seq fails, it returns that error (wrapping ErrNotRecorded).
func (w *recordWriter) sync(seq uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	tried := w.attempt // only a commit started from now on can fail seq
	for w.committed < seq {
		if w.attempt > tried && w.err != nil && w.failedUpTo >= seq {
			return fmt.Errorf("%w: %v", ErrNotRecorded, w.err)
		}
		if w.closed && !w.committing && len(w.order) == 0 {
			return fmt.Errorf("%w: the record writer is closed", ErrNotRecorded)
		}
		if w.committing {
			w.cond.Wait()
			continue
		}
		w.commitLocked()
	}
	return nil
}

// whenCommitted calls f once every record put up to seq is committed:
// now if they are, else from the goroutine that commits them, under the
// writer's lock (f must not block, nor call the writer). No commit is
// hurried: records nobody syncs on wait for the linger. f is never called
// for records that are never committed (a store failing until close).
func (w *recordWriter) whenCommitted(seq uint64, f func()) {
	w.mu.Lock()
	if w.committed >= seq {
		w.mu.Unlock()
		f()
		return
	}
	w.after = append(w.after, afterCommit{seq, f})
	w.mu.Unlock()
}

// committedSeq is the sequence number of the last put committed.
func (w *recordWriter) committedSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.committed
}

// last is the sequence number of the last put.
func (w *recordWriter) last() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// hurry asks the writer's goroutine to commit what is queued now, not
// after the linger, and waits for nothing.
func (w *recordWriter) hurry() {
	w.mu.Lock()
	w.hurried = true
	w.idle = false
	w.mu.Unlock()
	w.signal()
}

// flush returns once every record queued before the call is committed.
func (w *recordWriter) flush() error {
	w.mu.Lock()
	seq := w.queued
	w.mu.Unlock()
	return w.sync(seq)
}

// health is the last commit's error, nil when the store takes writes.
func (w *recordWriter) health() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// commitLocked writes everything queued in one transaction. w.mu is held
// on entry and on return; it is released while the store works.
func (w *recordWriter) commitLocked() {
	order, pending, upTo := w.order, w.pending, w.queued
	w.order, w.pending = nil, map[string]pendingRecord{}
	w.committing = true
	w.attempt++
	w.mu.Unlock()

	recs := make([]store.Job, len(order))
	var todos []store.Todo
	ofTodo := map[string]Info{} // by todo key
	for i, id := range order {
		p := pending[id]
		recs[i] = toRecord(p.info)
		fillPidStart(p.job, &recs[i])
		if p.notify && w.todo != nil {
			t := w.todo(p.info)
			todos = append(todos, t)
			ofTodo[t.Subsystem+"\x00"+t.Key] = p.info
		}
	}
	changed, err := w.st.PutJobs(context.Background(), recs, todos)
	if err == nil && w.journal != nil {
		// Out of the journal before anyone learns of the commit: a
		// record deleted after it (Remove) must not come back.
		w.journal.committed(upTo)
	}
	if err == nil && len(changed) > 0 && w.onCommit != nil {
		of := make([]Info, len(changed))
		for i, t := range changed {
			of[i] = ofTodo[t.Subsystem+"\x00"+t.Key]
		}
		w.onCommit(changed, of)
	}
	if err == nil && w.onRecord != nil {
		for _, id := range order {
			w.onRecord(pending[id].info)
		}
	}

	w.mu.Lock()
	w.committing = false
	if err != nil {
		w.log.Error("commit job records", "records", len(recs), "err", err)
		w.err, w.failedUpTo = err, upTo
		// Keep them for the retry, unless a newer snapshot came meanwhile,
		// and make sure the loop is there to retry them.
		for _, id := range order {
			if _, newer := w.pending[id]; !newer {
				w.pending[id] = pending[id]
				w.order = append(w.order, id)
			}
		}
		if w.idle {
			w.idle = false
			w.signal()
		}
	} else {
		if w.err != nil {
			w.log.Info("job records commit again", "after", w.err)
		}
		w.err = nil
		w.committed = upTo
		if len(w.after) > 0 {
			left := w.after[:0]
			for _, a := range w.after {
				if a.seq <= upTo {
					a.f()
				} else {
					left = append(left, a)
				}
			}
			clear(w.after[len(left):])
			w.after = left
		}
	}
	w.cond.Broadcast()
}

func (w *recordWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop commits the records nobody waits for, after a linger, and retries
// failed ones.
func (w *recordWriter) loop() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		w.mu.Lock()
		n, closed, failing, hurried := len(w.order), w.closed, w.err != nil, w.hurried
		w.hurried = false
		w.idle = n == 0 && !closed
		w.mu.Unlock()
		if n == 0 {
			if closed {
				return
			}
			<-w.wake
			continue
		}
		if !closed && (!hurried || failing) {
			wait := recordLinger
			if failing {
				wait = retryEvery
			}
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-w.wake: // closing
				timer.Stop()
			}
		}
		w.mu.Lock()
		if len(w.order) > 0 && !w.committing {
			w.commitLocked()
		}
		closed = w.closed
		failing = w.err != nil
		w.mu.Unlock()
		if closed && failing {
			return // at shutdown a failing store gets one more try, not a wait
		}
	}
}

// close commits what is queued (one try if the store fails) and stops the
// goroutine. Later puts are never committed; syncs on them fail.
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
	w.mu.Lock()
	for w.committing {
		w.cond.Wait()
	}
	if w.err != nil && len(w.order) > 0 {
		w.log.Error("job records lost at shutdown: the store fails", "records", len(w.order), "err", w.err)
	}
	w.cond.Broadcast()
	w.mu.Unlock()
}
