package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

// Kinds of a notice: the last token of its subject.
const (
	KindJobStarted    = "job_started"
	KindJobEnded      = "job_ended"
	KindStatus        = "status"
	KindTurn          = "turn"
	KindDaemonStarted = "daemon_started"
	KindDaemonStopped = "daemon_stopped"
)

// Notice is one thing an agent tells its swarm, on
// hive.<swarm>.notice.<agent>.<kind>.
type Notice struct {
	Agent string    `json:"agent"`
	Kind  string    `json:"kind"`
	At    time.Time `json:"at"`
	// Seq is the notice's sequence number in the swarm's stream (set
	// when read).
	Seq     uint64    `json:"seq,omitempty"`
	Job     *view.Job `json:"job,omitempty"` // the fields a notice tells: id, name, command (cut), state, exit, meaning, times
	Status  *string   `json:"status,omitempty"`
	Turn    string    `json:"turn_state,omitempty"`
	Version string    `json:"version,omitempty"`
	// Dropped counts the notices of this agent dropped just before this
	// one: NATS was away longer than the buffer lasts.
	Dropped int `json:"dropped,omitempty"`

	id string // its message id, for the stream's de-duplication
}

// maxCmd bounds the command line a job notice carries, in bytes.
const maxCmd = 200

// endedKept is how many ended jobs' ids are kept, so that a record of an
// ended job committed again is no second notice.
const endedKept = 256

// event turns an event of the service into a notice (or none). It is
// called by the service's emitters: it only queues.
func (s *Swarm) event(ev service.Event) {
	var n Notice
	switch ev.Kind {
	case service.EventStatus:
		st := ev.Status
		n = Notice{Kind: KindStatus, At: ev.At, Status: &st}
		defer s.kickHeartbeat()
	case service.EventTurn:
		s.mu.Lock()
		same := ev.Turn == s.turn
		s.turn = ev.Turn
		s.mu.Unlock()
		if same {
			return
		}
		n = Notice{Kind: KindTurn, At: ev.At, Turn: ev.Turn}
		defer s.kickHeartbeat()
	case service.EventJob:
		kind, ok := s.jobChange(ev.Job.ID, ev.Job.State)
		if !ok {
			return
		}
		j := ev.Job
		n = Notice{Kind: kind, At: ev.At, Job: &view.Job{ID: j.ID, Name: j.Name, Cmd: service.Clip(j.Cmd, maxCmd), State: j.State,
			ExitCode: j.ExitCode, SemanticStatus: j.SemanticStatus, SemanticMessage: j.SemanticMessage,
			Created: j.Created, Started: j.Started, Ended: j.Ended, DurationMs: j.DurationMs}}
		defer s.kickHeartbeat() // its count of running jobs
	default:
		return
	}
	s.enqueue(n)
}

// jobChange tells which notice, if any, a job's record in state is news
// for: its start when it first runs, its end once.
func (s *Swarm) jobChange(id, state string) (kind string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, known := s.jobs[id]
	switch state {
	case "pending":
		s.jobs[id] = state
		return "", false
	case "running":
		s.jobs[id] = state
		return KindJobStarted, last != "running"
	}
	// Ended.
	delete(s.jobs, id)
	if !known && slices.Contains(s.ended, id) {
		return "", false
	}
	if len(s.ended) >= endedKept {
		s.ended = s.ended[1:]
	}
	s.ended = append(s.ended, id)
	return KindJobEnded, true
}

// enqueue queues n for publishing; past the buffer the oldest goes,
// counted.
func (s *Swarm) enqueue(n Notice) {
	if n.At.IsZero() {
		n.At = time.Now()
	}
	n.At = n.At.UTC()
	n.Agent = s.o.Name
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.seq++
	n.id = fmt.Sprintf("%s-%s-%d", s.o.Name, s.boot, s.seq)
	if len(s.queue) >= s.o.Buffer {
		s.queue = s.queue[1:]
		s.dropped++
		s.lost++
		if s.lost == 1 || s.lost%1000 == 0 {
			s.o.Logger.Warn("swarm: NATS away too long: notices dropped", "dropped", s.lost)
		}
	}
	s.queue = append(s.queue, n)
	s.last = &service.SwarmNotice{Kind: n.Kind, At: n.At, Text: n.text()}
	s.mu.Unlock()
	select {
	case s.pub <- struct{}{}:
	default:
	}
}

// text tells n in one line, for the directory's last_notice.
func (n Notice) text() string {
	switch n.Kind {
	case KindJobStarted, KindJobEnded:
		if n.Job == nil {
			return n.Kind
		}
		who := n.Job.ID
		if n.Job.Name != "" && n.Job.Name != n.Job.ID {
			who = n.Job.Name + " (" + n.Job.ID + ")"
		}
		if n.Kind == KindJobStarted {
			return "job " + who + " started: " + service.Clip(n.Job.Cmd, 60)
		}
		s := "job " + who + " " + n.Job.State
		if n.Job.ExitCode != nil {
			s += fmt.Sprintf(": exit %d", *n.Job.ExitCode)
		}
		return s
	case KindStatus:
		if n.Status == nil || *n.Status == "" {
			return "status cleared"
		}
		return "status: " + service.Clip(*n.Status, 80)
	case KindTurn:
		return "turn: " + n.Turn
	case KindDaemonStarted:
		return "daemon started (v" + n.Version + ")"
	case KindDaemonStopped:
		return "daemon stopped"
	}
	return n.Kind
}

// Dropped counts the notices dropped in all (the buffer was full).
func (s *Swarm) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// flush publishes the queued notices in order, each acknowledged by the
// stream before the next; the first failure leaves it and the rest
// queued.
func (s *Swarm) flush(ctx context.Context) error {
	for {
		if !s.nc.IsConnected() {
			return ErrAway
		}
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return nil
		}
		n := s.queue[0]
		if n.Dropped == 0 {
			n.Dropped = s.dropped
		}
		s.mu.Unlock()
		b, err := json.Marshal(n)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, OpTimeout)
		_, err = s.js.Publish(pctx, NoticeSubject(s.o.Swarm, s.o.Name, n.Kind), b, jetstream.WithMsgID(n.id))
		cancel()
		if err != nil {
			return fmt.Errorf("publish %s notice: %w", n.Kind, err)
		}
		s.mu.Lock()
		// The queue only loses its head here, or to the bound: n is
		// still the head unless the bound dropped it meanwhile.
		if len(s.queue) > 0 && s.queue[0].id == n.id {
			s.queue = s.queue[1:]
			s.dropped -= n.Dropped
		}
		s.mu.Unlock()
	}
}
