package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hivetools/hive/internal/service"
)

// watchNotices bounds the notices a Watch holds before it reads them; past
// it the NATS client drops them (a slow consumer): a watch is a live view,
// not a record (the stream is).
const watchNotices = 1024

// watchRetry is how often a Watch tries again to watch the directory
// while NATS is away (or before the daemon set the bucket up).
const watchRetry = time.Second

// Watch calls fn with each change of the swarm's directory (a KV watch,
// updates only) and each notice its agents publish (a plain
// subscription of the notices' subjects: what is published from now on,
// at most once), until ctx ends; then it returns nil. fn is called from
// Watch's goroutine, one change at a time. While NATS is away nothing
// comes; when the directory's watch had to start again (at each
// reconnection), fn gets a change with Reset first. It fails only if it cannot subscribe at all.
//
// What it costs grows with the swarm: every directory write (a heartbeat
// an agent every 10 s) and every notice of every agent comes to this
// daemon while a Watch runs, so the dashboard runs one only while a page
// is open.
func (s *Swarm) Watch(ctx context.Context, fn func(service.SwarmChange)) error {
	notes := make(chan *nats.Msg, watchNotices)
	sub, err := s.nc.ChanSubscribe(NoticeSubject(s.o.Swarm, "*", "*"), notes)
	if err != nil {
		return fmt.Errorf("swarm %s: watch the notices: %w", s.o.Swarm, err)
	}
	defer sub.Unsubscribe()
	var (
		w       jetstream.KeyWatcher
		updates <-chan jetstream.KeyValueEntry
		started bool
	)
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	retry := time.NewTimer(0)
	defer retry.Stop()
	conn := s.connChan()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-conn:
			// (Re)connected: what the directory's watch had may be lost
			// with the connection (or the server); start it again now,
			// rather than when its consumer notices the gap.
			conn = s.connChan()
			if w != nil {
				w.Stop()
				w, updates = nil, nil
			}
			retry.Reset(0)
		case m := <-notes:
			var n Notice
			if json.Unmarshal(m.Data, &n) != nil || n.Agent == "" {
				continue // not a notice of ours
			}
			fn(service.SwarmChange{Notice: &service.SwarmNotice{Agent: n.Agent, Kind: n.Kind, At: n.At, Text: n.text()}})
		case <-retry.C:
			kv, err := s.bucket()
			if err == nil {
				w, err = kv.WatchAll(ctx, jetstream.UpdatesOnly())
			}
			if err != nil {
				w = nil
				retry.Reset(watchRetry)
				continue
			}
			updates = w.Updates()
			if started {
				fn(service.SwarmChange{Reset: true})
			}
			started = true
		case e, ok := <-updates:
			if !ok { // the watch ended under us (the connection closed)
				w.Stop()
				w, updates = nil, nil
				retry.Reset(watchRetry)
				continue
			}
			if e == nil {
				continue // the end of the initial values (none: updates only)
			}
			switch e.Operation() {
			case jetstream.KeyValuePut:
				var a service.SwarmAgent
				if json.Unmarshal(e.Value(), &a) != nil {
					continue // not an entry of ours
				}
				fn(service.SwarmChange{Agent: &a})
			default: // deleted by its daemon, or purged by the bucket's TTL
				fn(service.SwarmChange{Gone: e.Key()})
			}
		}
	}
}
