package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// DefaultTakeoverLife is how long a PTY take-over lasts after the take-
// over or its latest input, when Options.TakeoverLife is zero.
const DefaultTakeoverLife = 5 * time.Minute

// holder is who sent a request, as a take-over records it: a dashboard
// session, the bearer token (every script that has it) or, without
// authentication, anyone.
type holder struct {
	key   string // "s:" + session id, "bearer" or "anonymous"
	label string // what /api/ptys shows: no secret in it
}

func holderOf(who who, sid string) holder {
	switch who {
	case byCookie:
		sum := sha256.Sum256([]byte(sid))
		return holder{"s:" + sid, "dashboard session " + hex.EncodeToString(sum[:4])}
	case byBearer:
		return holder{"bearer", "a client with the bearer token"}
	}
	return holder{"anonymous", "anonymous (no authentication)"}
}

type holderKey struct{}

// hold is a take-over of a PTY session.
type hold struct {
	by    holder
	until time.Time
}

// holds are the PTY sessions taken over, by session id. Only the holder
// of a session's take-over may type into it, until the take-over ends:
// released, expired (life after the take-over or the latest input), or
// its dashboard session logged out. Safe for concurrent use.
type holds struct {
	life time.Duration

	mu sync.Mutex
	m  map[string]hold
}

// errHeld: another holder has the take-over.
type errHeld struct {
	pty   string
	by    string
	until time.Time
}

func (e *errHeld) Error() string {
	return fmt.Sprintf("pty session %s is taken over by %s until %s: it must release it first, or take over with {\"force\": true}",
		e.pty, e.by, e.until.UTC().Format(time.RFC3339))
}

// take gives h the take-over of pty, unless another holder has it (and
// force is false).
func (hs *holds) take(pty string, h holder, force bool, now time.Time) error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if x, ok := hs.m[pty]; ok && x.by.key != h.key && now.Before(x.until) && !force {
		return &errHeld{pty, x.by.label, x.until}
	}
	hs.m[pty] = hold{h, now.Add(hs.life)}
	return nil
}

// use reports whether h holds pty's take-over, and renews it if so.
func (hs *holds) use(pty string, h holder, now time.Time) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	x, ok := hs.m[pty]
	if !ok || x.by.key != h.key || !now.Before(x.until) {
		return false
	}
	hs.m[pty] = hold{h, now.Add(hs.life)}
	return true
}

// release ends h's take-over of pty; it reports whether h had it.
func (hs *holds) release(pty string, h holder) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	x, ok := hs.m[pty]
	if !ok || x.by.key != h.key {
		return false
	}
	delete(hs.m, pty)
	return true
}

// releaseAll ends every take-over of the holder key (a logout).
func (hs *holds) releaseAll(key string) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for p, x := range hs.m {
		if x.by.key == key {
			delete(hs.m, p)
		}
	}
}

// get returns pty's take-over in force, if any; it forgets expired ones.
func (hs *holds) get(pty string, now time.Time) (hold, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	x, ok := hs.m[pty]
	if ok && !now.Before(x.until) {
		delete(hs.m, pty)
		return hold{}, false
	}
	return x, ok
}

// keep forgets the take-overs of PTY sessions not in live.
func (hs *holds) keep(live map[string]bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for p := range hs.m {
		if !live[p] {
			delete(hs.m, p)
		}
	}
}
