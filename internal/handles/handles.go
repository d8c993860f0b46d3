// Package handles keeps the output handles of terminal_exec: when a call's
// inline output is truncated, its full output stays reachable under an
// "out_<hex>" handle for a while.
//
// A handle refers to the job's output streams (memory ring plus file), so
// no bytes are copied. Handles expire a TTL after their last access, and
// all handles together are capped by the bytes they refer to: the least
// recently used go first. Expiry is checked on every call; there is no
// background goroutine.
package handles

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/output"
)

// Defaults.
const (
	DefaultTTL = 5 * time.Minute
	DefaultCap = 64 << 20
)

// Options configures a Store. A nil *Options means the defaults.
type Options struct {
	// TTL is how long a handle lives after its last access. If zero, 5 minutes.
	TTL time.Duration
	// Cap bounds the bytes all handles refer to. If zero, 64 MiB.
	Cap int64
	// Now is the clock; if nil, time.Now.
	Now func() time.Time
}

// Store is safe for concurrent use.
type Store struct {
	ttl time.Duration
	cap int64
	now func() time.Time

	mu    sync.Mutex
	byID  map[string]*list.Element
	lru   *list.List // front = most recently used
	bytes int64
}

type entry struct {
	id      string
	streams map[string]*output.Stream
	size    int64
	last    time.Time
}

// New returns an empty Store.
func New(o *Options) *Store {
	s := &Store{ttl: DefaultTTL, cap: DefaultCap, now: time.Now, byID: map[string]*list.Element{}, lru: list.New()}
	if o != nil {
		if o.TTL > 0 {
			s.ttl = o.TTL
		}
		if o.Cap > 0 {
			s.cap = o.Cap
		}
		if o.Now != nil {
			s.now = o.Now
		}
	}
	return s
}

// Put registers streams (by name, e.g. "stdout", "stderr") under a new
// handle and returns it. size is the bytes they hold, for the cap. A
// handle larger than the whole cap is still kept (alone).
func (s *Store) Put(streams map[string]*output.Stream, size int64) string {
	var b [6]byte
	rand.Read(b[:])
	id := "out_" + hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	e := &entry{id: id, streams: streams, size: size, last: s.now()}
	s.byID[id] = s.lru.PushFront(e)
	s.bytes += size
	for s.bytes > s.cap && s.lru.Len() > 1 {
		s.removeLocked(s.lru.Back())
	}
	return id
}

// Get returns the named stream of a handle and refreshes its TTL. ok is
// false for an unknown or expired handle. A known handle without that
// stream returns (nil, true).
func (s *Store) Get(id, stream string) (*output.Stream, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	el, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	e.last = s.now()
	s.lru.MoveToFront(el)
	return e.streams[stream], true
}

// Len is the number of live handles; Bytes the bytes they refer to.
func (s *Store) Len() (n int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return s.lru.Len(), s.bytes
}

func (s *Store) expireLocked() {
	now := s.now()
	for el := s.lru.Back(); el != nil; {
		e := el.Value.(*entry)
		if now.Sub(e.last) < s.ttl {
			return // the rest were used more recently
		}
		prev := el.Prev()
		s.removeLocked(el)
		el = prev
	}
}

func (s *Store) removeLocked(el *list.Element) {
	e := el.Value.(*entry)
	s.lru.Remove(el)
	delete(s.byID, e.id)
	s.bytes -= e.size
}
