// Package supervise holds, once, the decisions a manager makes about
// what it runs in a holder (internal/holder), a process that outlives the
// daemon: adopting what a dead daemon left, telling ends, acknowledging
// them once recorded, stopping what is no one's, catching up after a
// reconnect and sweeping up when the holder dies. See
// docs/architecture.md.
//
// A manager (internal/job for jobs, internal/pty for PTY sessions) plugs
// in what is its own as a Kind; the Core decides. The Core is generic
// over the manager's thing T (*job.Job, *pty.Session), the holder's
// listing item X (wire.Job, wire.PTYSession) and an end E (wire.JobEnd,
// an exit code), so that a third kind plugs in the same way.
package supervise

import (
	"log/slog"
	"sync"
)

// Standing is where a manager stands with one id its holder holds.
type Standing int

const (
	// Unknown: the manager has nothing of this id.
	Unknown Standing = iota
	// Held: the manager holds it in the holder (running, or ended and
	// being recorded).
	Held
	// Starting: its spawn is in flight; the holder may hold it before
	// the spawn's answer is taken.
	Starting
	// Other: known, but neither held nor starting (it ran elsewhere, or
	// its start failed or was given up).
	Other
)

// Told is what became of an end told to a manager (Kind.Tell).
type Told int

const (
	// NotOurs: the manager holds nothing of the id. The Core forgets it
	// (Kind.Drop, then the ack once recorded).
	NotOurs Told = iota
	// Taken: the manager took the end; it records it and acks it itself
	// (Core.AckWhenRecorded). An end told twice counts once.
	Taken
	// Recorded: the manager had the end already (the holder tells it
	// again: its ack was lost, or it is not committed yet). The Core
	// acks it once recorded.
	Recorded
)

// A Kind is what a manager plugs into a Core: how to list, adopt, tell,
// stop, acknowledge and sweep one kind of thing. Its methods are called
// with no lock of the Core held; they take the manager's own locks, and
// must hold none of them across a call to the holder (List, Stop, Drop,
// Ack are such calls).
type Kind[T, X, E any] interface {
	// List lists what the holder holds of this kind: running, and ended
	// but not acknowledged.
	List() ([]X, error)
	// ID is x's id; End is its end, if it ended.
	ID(x X) string
	End(x X) (E, bool)
	// Standing tells where the manager stands with id.
	Standing(id string) Standing
	// Progress tells the manager x's counters (of a thing it holds, or
	// may: it ignores unknown ids).
	Progress(x X)
	// Tell tells the manager that id ended with e.
	Tell(id string, e E) Told
	// Stop stops a running thing that is no one's: a job with SIGKILL,
	// a session's terminal closed. Its end comes later, and is no one's.
	Stop(id string) error
	// Drop lets go of what the holder keeps of an ended thing besides
	// its end (a session's master); nothing for a job.
	Drop(id string)
	// Recorded calls then once the manager's records of id (every record
	// put so far, for an id it does not know) are committed: at once if
	// they are.
	Recorded(id string, then func())
	// Ack tells the holder that id's end is recorded: it forgets it.
	Ack(id string) error
	// Supervised is what the manager has in the holder: held (running,
	// not ended) and in flight (a spawn not answered, or given up on:
	// the holder may run it).
	Supervised() (held, flight []T)
	// Terminate terminates what is left of held and flight, proven
	// theirs (leader's pid and start time, marks, cgroups; never a bare
	// pid), and returns how many processes that was.
	Terminate(held, flight []T) int
	// Interrupt ends a held thing as interrupted: its holder died.
	Interrupt(t T)
}

// Options configure a Core.
type Options struct {
	// What names the kind in logs ("job", "pty session").
	What string
	// Logger, if nil, discards.
	Logger *slog.Logger
}

// Core makes a manager's decisions about what its holder holds. It is
// created adopting: until Adopt returns, the ends the holder tells are
// kept, and nothing the holder runs is a stray. Its methods are safe for
// concurrent use.
type Core[T, X, E any] struct {
	k    Kind[T, X, E]
	what string
	log  *slog.Logger

	mu sync.Mutex
	// early keeps the ends told while adopting, by id (nil after).
	early map[string]E
}

// New returns a Core of k, adopting.
func New[T, X, E any](k Kind[T, X, E], o Options) *Core[T, X, E] {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Core[T, X, E]{k: k, what: o.What, log: o.Logger, early: map[string]E{}}
}

// Adopting tells whether Adopt has not ended yet.
func (c *Core[T, X, E]) Adopting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.early != nil
}

// Adopt sorts out what the holder holds at a manager's start, once. For
// each listed x, adopt(x, early) makes it the manager's if a record says
// it should be (early: an end told since the listing, or nil) and reports
// whether it did. What is not adopted is no one's: stopped if it runs,
// forgotten (Drop, Ack) if it ended. Then the adoption ends: the ends
// told meanwhile go to what was adopted (Tell; told twice counts once)
// and the others are forgotten. A listing that fails is the error; the
// adoption ends all the same.
func (c *Core[T, X, E]) Adopt(adopt func(x X, early *E) bool) error {
	list, err := c.k.List()
	if err != nil {
		c.mu.Lock()
		c.early = nil
		c.mu.Unlock()
		return err
	}
	adopted, forgotten := map[string]bool{}, map[string]bool{}
	for _, x := range list {
		id := c.k.ID(x)
		c.mu.Lock()
		e, ok := c.early[id]
		c.mu.Unlock()
		var ep *E
		if ok {
			ep = &e
		}
		if adopt(x, ep) {
			adopted[id] = true
			continue
		}
		if _, ended := c.k.End(x); ended {
			c.forget(id) // recorded already (the ack was lost), or never
			forgotten[id] = true
			continue
		}
		if err := c.k.Stop(id); err != nil {
			c.log.Warn("could not stop a held "+c.what+" that has no record", "id", id, "err", err)
		}
	}
	c.mu.Lock()
	early := c.early
	c.early = nil
	c.mu.Unlock()
	for id, e := range early {
		switch {
		case adopted[id]:
			c.tell(id, e)
		case !forgotten[id]:
			c.forget(id)
		}
	}
	return nil
}

// Ended is the holder's event: id ended with e. While adopting it is
// kept for Adopt; then it goes to the manager (Tell), and an end the
// manager has no use for is acknowledged once recorded.
func (c *Core[T, X, E]) Ended(id string, e E) {
	c.mu.Lock()
	if c.early != nil {
		c.early[id] = e
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.tell(id, e)
}

func (c *Core[T, X, E]) tell(id string, e E) {
	switch c.k.Tell(id, e) {
	case NotOurs:
		c.forget(id)
	case Recorded:
		c.AckWhenRecorded(id)
	}
}

// forget lets the holder forget an ended id no one needs.
func (c *Core[T, X, E]) forget(id string) {
	c.k.Drop(id)
	c.AckWhenRecorded(id)
}

// AckWhenRecorded acks id's end to the holder once the manager's records
// of it are committed (Kind.Recorded). Until the ack the holder keeps the
// end for a next daemon; one never committed is never acked. A failed
// ack is logged: the next daemon acks it.
func (c *Core[T, X, E]) AckWhenRecorded(id string) {
	c.k.Recorded(id, func() {
		if err := c.k.Ack(id); err != nil {
			c.log.Warn("the holder did not take the ack of an end; the next daemon acks it", "kind", c.what, "id", id, "err", err)
		}
	})
}

// Action is what a holder's listing asks of a manager for one item.
type Action int

const (
	// TellProgress: the counters of a thing that may be the manager's.
	TellProgress Action = iota
	// TellEnd: an end, told (again) as the holder's event is.
	TellEnd
	// StopStray: it runs, and is none of the manager's.
	StopStray
)

// Classify decides one listed item: an end is told; a running one is a
// stray, to stop, if the manager neither holds it nor is starting it,
// unless it is adopting (Adopt sorts those out); else its counters are
// told.
func Classify(adopting, ended bool, st Standing) Action {
	switch {
	case ended:
		return TellEnd
	case !adopting && st != Held && st != Starting:
		return StopStray
	}
	return TellProgress
}

// Resync catches up with the holder after its connection was replaced
// (events may have been lost): each listed item is classified (Classify)
// against the manager's standing now. Ends are told again (each counts
// once); a stray (a spawn whose answer was lost with the connection,
// after the manager gave up on it) is stopped.
func (c *Core[T, X, E]) Resync() {
	list, err := c.k.List()
	if err != nil {
		c.log.Warn("could not list what the holder holds after a reconnect", "kind", c.what, "err", err)
		return
	}
	for _, x := range list {
		id := c.k.ID(x)
		e, ended := c.k.End(x)
		var st Standing
		if !ended {
			st = c.k.Standing(id)
		}
		switch Classify(c.Adopting(), ended, st) {
		case TellEnd:
			c.k.Progress(x)
			c.Ended(id, e)
		case StopStray:
			c.log.Warn("the holder runs a "+c.what+" this daemon does not (its start was given up): stopped", "id", id)
			if err := c.k.Stop(id); err != nil {
				c.log.Warn("could not stop a held "+c.what+" that is none of this daemon's", "id", id, "err", err)
			}
		default:
			c.k.Progress(x)
		}
	}
}

// Lost sweeps up after the holder died: what the manager held or had in
// flight there is terminated where proven (Terminate), and each held
// thing ends as interrupted. It returns how many were held and how many
// processes were terminated.
func (c *Core[T, X, E]) Lost() (held, terminated int) {
	h, flight := c.k.Supervised()
	if len(h) == 0 && len(flight) == 0 {
		return 0, 0
	}
	n := c.k.Terminate(h, flight)
	c.log.Error("the holder died: what it held of this daemon's ends as interrupted", "kind", c.what, "held", len(h), "in_flight", len(flight), "processes_terminated", n)
	for _, t := range h {
		c.k.Interrupt(t)
	}
	return len(h), n
}
