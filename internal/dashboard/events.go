package dashboard

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/service"
)

// The hub keeps at most ringEvents events and ringBytes bytes of them
// (always the latest one) for streams that resume.
const (
	ringEvents = 1024
	ringBytes  = 1 << 20
)

// event is one Server-Sent Event. An event with a key replaces the
// previous one with the same key still kept (a job's output counters:
// only the latest matter).
type event struct {
	seq  uint64
	typ  string
	key  string
	data []byte
}

// hub keeps the latest events, numbered from 1 within an epoch (the
// daemon's start: an id of another epoch cannot be resumed from).
type hub struct {
	epoch string

	mu      sync.Mutex
	seq     uint64
	lost    uint64  // the last seq dropped for the ring's bounds (not replaced by a newer event)
	ring    []event // the latest events, oldest first
	size    int     // the bytes of the ring's events' data
	changed chan struct{}
}

func newHub() *hub {
	// The start time, and random bits for two daemons started at once.
	epoch := strconv.FormatInt(time.Now().UnixMilli(), 36) + hex.EncodeToString(randomBytes(3))
	return &hub{epoch: epoch, changed: make(chan struct{})}
}

func (h *hub) publish(typ string, v any) { h.publishKey("", typ, v) }

// publishKey publishes an event that replaces the one of the same key
// still kept, if any (key "": none).
func (h *hub) publishKey(key, typ string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if key != "" {
		for i := range h.ring {
			if h.ring[i].key == key {
				h.size -= len(h.ring[i].data)
				h.ring = append(h.ring[:i], h.ring[i+1:]...)
				break
			}
		}
	}
	h.seq++
	h.ring = append(h.ring, event{h.seq, typ, key, b})
	h.size += len(b)
	drop := 0
	for n := len(h.ring); n-drop > 1 && (n-drop > ringEvents || h.size > ringBytes); drop++ {
		h.size -= len(h.ring[drop].data)
		h.lost = h.ring[drop].seq
	}
	if drop > 0 {
		h.ring = append(h.ring[:0], h.ring[drop:]...)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// since returns the events after seq and a channel closed at the next
// publish; ok is false when some events after seq are no longer kept.
func (h *hub) since(seq uint64) (evs []event, ok bool, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq > h.seq || seq < h.lost {
		return nil, false, h.changed
	}
	for _, e := range h.ring {
		if e.seq > seq {
			evs = append(evs, e)
		}
	}
	return evs, true, h.changed
}

func (h *hub) last() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// id is an event's SSE id: epoch-seq.
func (h *hub) id(seq uint64) string { return h.epoch + "-" + strconv.FormatUint(seq, 10) }

// resume parses a Last-Event-ID of this epoch.
func (h *hub) resume(id string) (uint64, bool) {
	ep, s, ok := strings.Cut(id, "-")
	if !ok || ep != h.epoch {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// startWatch starts the watcher once (not after Close).
func (d *Dashboard) startWatch() {
	d.watch.Do(func() {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.watchLoop()
		}()
	})
}

// watchLoop publishes what changed, every Poll: the agent's state, the
// jobs held in memory (state and output counters), the PTY sessions, the
// loose ends (pushed by the inbox) and the tool calls.
func (d *Dashboard) watchLoop() {
	var dirty atomic.Bool
	dirty.Store(true)
	cancel := d.o.Service.Subscribe(func(service.Change) { dirty.Store(true) })
	defer cancel()
	type jobKey struct {
		state          string
		stdout, stderr int64
	}
	jobs := map[string]jobKey{}
	ptys := map[string]string{}
	var agentWas []byte
	var callSeq uint64
	tick := time.NewTicker(d.o.Poll)
	defer tick.Stop()
	if smp, ok := d.usage.sample(); ok {
		d.hub.publish("usage", smp)
	}
	nextSample := time.Now().Add(sampleEvery)
	for {
		if now := time.Now(); now.After(nextSample) {
			nextSample = now.Add(sampleEvery)
			if smp, ok := d.usage.sample(); ok {
				d.hub.publish("usage", smp)
			}
		}
		if st, ok := d.o.Service.AgentState(); ok {
			b, _ := json.Marshal(st)
			if string(b) != string(agentWas) {
				agentWas = b
				d.hub.publish("agent", json.RawMessage(b))
			}
		}
		seen := map[string]bool{}
		for _, in := range d.o.Service.RecentJobs() {
			seen[in.ID] = true
			was, key := jobs[in.ID], jobKey{fmt.Sprint(in.State, in.Pid, in.ExitCode != nil, in.Error), in.StdoutBytes, in.StderrBytes}
			switch {
			case was.state != key.state:
				d.hub.publish("job", eventJob(in))
			case was != key:
				d.hub.publishKey("counters "+in.ID, "job_counters", toCounters(in))
			}
			jobs[in.ID] = key
		}
		for id := range jobs {
			if !seen[id] {
				delete(jobs, id)
			}
		}
		if d.o.Service.HasPTY() {
			seen := map[string]bool{}
			for _, in := range d.o.Service.PTYs() {
				seen[in.ID] = true
				p := d.withHold(toPTY(in), nil)
				key := fmt.Sprint(in.Running, in.Bytes, in.Cols, in.Rows, p.HeldBy, p.HeldUntil)
				if ptys[in.ID] != key {
					ptys[in.ID] = key
					d.hub.publish("pty", p)
				}
			}
			d.holds.keep(seen)
			for id := range ptys {
				if !seen[id] {
					delete(ptys, id)
					d.hub.publish("pty_gone", map[string]string{"id": id})
				}
			}
		}
		if dirty.Swap(false) {
			d.hub.publish("loose_ends", map[string]bool{"changed": true})
		}
		calls, _ := d.o.Service.Activity.Since(callSeq)
		for _, c := range calls {
			callSeq = c.Seq
			d.hub.publish("activity", c)
		}
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// swarmWatch is the watch of the swarm (its directory and notices) the
// event streams share: it runs while at least one stream is open, since
// every heartbeat and notice of the whole swarm comes to the daemon while
// it does.
type swarmWatch struct {
	mu      sync.Mutex
	streams int
	cancel  context.CancelFunc
	closed  bool // by Close: no watch starts
}

// watchSwarm counts one more event stream, starting the swarm's watch for
// the first; the stream calls the func it returns when it ends. Outside a
// swarm it does nothing.
func (d *Dashboard) watchSwarm() (release func()) {
	if _, _, ok := d.o.Service.InSwarm(); !ok {
		return func() {}
	}
	w := &d.swarmW
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return func() {}
	}
	w.streams++
	if w.streams == 1 {
		ctx, cancel := context.WithCancel(d.ctx)
		w.cancel = cancel
		d.wg.Add(1) // before Close's Wait: Close sets closed under mu first
		go func() {
			defer d.wg.Done()
			if err := d.o.Service.WatchSwarm(ctx, d.swarmChange); err != nil {
				d.log.Warn("dashboard: the swarm's page is not live (it reads the directory now and then)", "err", err)
			}
		}()
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.streams--; w.streams == 0 {
			w.cancel()
		}
	}
}

// swarmChange publishes a change of the swarm as an event: an agent's
// entry (swarm_agent) or its going (swarm_gone) replace the agent's
// previous one, as its latest notice (swarm_notice) does, so that the
// ring keeps at most two events an agent however busy the swarm is.
func (d *Dashboard) swarmChange(c service.SwarmChange) {
	switch {
	case c.Agent != nil:
		d.hub.publishKey("swarm "+c.Agent.Name, "swarm_agent", c.Agent)
	case c.Gone != "":
		d.hub.publishKey("swarm "+c.Gone, "swarm_gone", map[string]string{"name": c.Gone})
	case c.Notice != nil:
		d.hub.publishKey("swarm notice "+c.Notice.Agent, "swarm_notice", c.Notice)
	case c.Reset:
		d.hub.publish("swarm_reset", map[string]bool{"reset": true})
	}
}

// writePiece is about the most an event stream writes at once.
const writePiece = 64 << 10

// events is GET /api/events: a Server-Sent Events stream of what changes
// (docs/http-api.md). A stream that resumes (Last-Event-ID) gets what it
// missed, or a "reset" event when that is no longer kept or the daemon
// restarted; a new one starts with "hello". A comment every Heartbeat
// keeps it alive. Each write has its own deadline.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	// The stream starts from before the watch: the first stream gets the
	// watch's first pass (the state of every job and PTY) as events.
	seq := d.hub.last()
	d.startWatch()
	defer d.watchSwarm()()
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	write := func(s string) bool {
		rc.SetWriteDeadline(time.Now().Add(d.o.WriteTimeout))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	first := "retry: 1000\n"
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	if n, ok := d.hub.resume(last); ok {
		if _, kept, _ := d.hub.since(n); kept {
			seq = n
		} else {
			first += fmt.Sprintf("id: %s\nevent: reset\ndata: {}\n\n", d.hub.id(seq))
		}
	} else if last != "" {
		first += fmt.Sprintf("id: %s\nevent: reset\ndata: {}\n\n", d.hub.id(seq))
	} else {
		first += fmt.Sprintf("id: %s\nevent: hello\ndata: {}\n\n", d.hub.id(seq))
	}
	if !write(first) {
		return
	}
	beat := time.NewTicker(d.o.Heartbeat)
	defer beat.Stop()
	for {
		evs, kept, changed := d.hub.since(seq)
		if !kept { // this stream fell behind the ring
			seq = d.hub.last()
			if !write(fmt.Sprintf("id: %s\nevent: reset\ndata: {}\n\n", d.hub.id(seq))) {
				return
			}
			continue
		}
		// The backlog goes in pieces of about writePiece bytes.
		var b strings.Builder
		for i, e := range evs {
			fmt.Fprintf(&b, "id: %s\nevent: %s\ndata: %s\n\n", d.hub.id(e.seq), e.typ, e.data)
			seq = e.seq
			if b.Len() >= writePiece || i == len(evs)-1 {
				if !write(b.String()) {
					return
				}
				b.Reset()
			}
		}
		select {
		case <-changed:
		case <-beat.C:
			if !write(": heartbeat\n\n") {
				return
			}
		case <-r.Context().Done():
			return
		case <-d.ctx.Done():
			return
		}
	}
}
