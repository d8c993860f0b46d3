package service

import (
	"sync"
	"time"
)

// Call is one tool call of the envelope: when it started, the session,
// the tool, how long it took and its outcome ("ok", "tool error: ...",
// "error: ...").
type Call struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Session string    `json:"session"`
	// Client is the name the session's client gave (its clientInfo),
	// "" if none.
	Client     string `json:"client,omitempty"`
	Tool       string `json:"tool"`
	DurationMs int64  `json:"duration_ms"`
	Outcome    string `json:"outcome"`
}

// DefaultActivitySize is how many calls an Activity keeps when its size
// is zero.
const DefaultActivitySize = 1000

// Activity is an in-memory ring of the latest tool calls, the dashboard's
// activity feed. The zero value keeps DefaultActivitySize calls. Safe for
// concurrent use; a nil *Activity records nothing.
type Activity struct {
	// Size bounds the calls kept; set it before first use.
	Size int

	mu      sync.Mutex
	calls   []Call // a ring: calls[(start+i)%len] is the i-th oldest
	start   int
	seq     uint64
	changed chan struct{} // closed and replaced on each Add
}

func (a *Activity) Add(c Call) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	size := a.Size
	if size <= 0 {
		size = DefaultActivitySize
	}
	a.seq++
	c.Seq = a.seq
	if len(a.calls) < size {
		a.calls = append(a.calls, c)
	} else {
		a.calls[a.start] = c
		a.start = (a.start + 1) % len(a.calls)
	}
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// Since returns the calls kept whose Seq is above seq, oldest first, and
// a channel closed at the next Add.
// A nil Activity has no calls (and a nil channel).
func (a *Activity) Since(seq uint64) ([]Call, <-chan struct{}) {
	if a == nil {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Call
	for i := range a.calls {
		c := a.calls[(a.start+i)%len(a.calls)]
		if c.Seq > seq {
			out = append(out, c)
		}
	}
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return out, a.changed
}
