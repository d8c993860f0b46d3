package swarm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hivetools/hive/internal/errdefs"
)

// WakeStream is the name of the swarm's stream of wake messages.
func WakeStream(swarm string) string { return "hive_wake_" + swarm }

// WakeSubject is the subject of the wake messages to agent ("*": all).
func WakeSubject(swarm, agent string) string { return "hive." + swarm + ".wake." + agent }

// headerFrom carries a wake message's sender, "agent:<name>", as the
// target's inbox labels it.
const headerFrom = "Hive-From"

// Retention of the wake messages: a message waits for its target this
// long at most.
const (
	WakeMaxAge   = 7 * 24 * time.Hour
	WakeMaxBytes = 256 << 20
)

// wakeAckWait is how long a delivered message may go unacknowledged
// before it is delivered again.
const wakeAckWait = 30 * time.Second

// setupWake makes the swarm's wake stream (a work queue: a message goes
// once its target acknowledged it) and the agent's durable consumer, and
// starts consuming, once.
func (s *Swarm) setupWake(ctx context.Context) error {
	if _, err := s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: WakeStream(s.o.Swarm),
		Description: "hive swarm " + s.o.Swarm + ": messages to its agents",
		Subjects:    []string{WakeSubject(s.o.Swarm, "*")}, Retention: jetstream.WorkQueuePolicy,
		MaxAge: WakeMaxAge, MaxBytes: WakeMaxBytes, Discard: jetstream.DiscardNew,
		Replicas: s.replicas(ctx, WakeStream(s.o.Swarm))}); err != nil {
		return err
	}
	cons, err := s.js.CreateOrUpdateConsumer(ctx, WakeStream(s.o.Swarm), jetstream.ConsumerConfig{
		Durable: "wake_" + s.o.Name, FilterSubject: WakeSubject(s.o.Swarm, s.o.Name),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: wakeAckWait, MaxAckPending: 64})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake != nil || s.wakeStopped {
		return nil // consuming already (it survives reconnections), or stopping
	}
	cc, err := cons.Consume(s.deliver)
	if err != nil {
		return err
	}
	s.wake = cc
	return nil
}

// deliver puts a wake message in the inbox and acknowledges it once the
// inbox committed it; a message the inbox refuses for good (a bad
// sender) is terminated, one it could not take now is delivered again.
func (s *Swarm) deliver(m jetstream.Msg) {
	from := m.Headers().Get(headerFrom)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := s.svc.Send(ctx, from, string(m.Data()))
	switch {
	case errors.Is(err, errdefs.ErrInvalid):
		s.o.Logger.Warn("swarm: a wake message refused", "subject", m.Subject(), "from", from, "err", err)
		m.Term()
		return
	case err != nil:
		s.o.Logger.Warn("swarm: a wake message not taken now; it comes again", "from", from, "err", err)
		m.NakWithDelay(5 * time.Second)
		return
	}
	if err := m.DoubleAck(ctx); err != nil {
		s.o.Logger.Warn("swarm: a wake message in the inbox not acknowledged; it may come again", "message", msg.ID, "err", err)
	}
}

// StopWake stops taking wake messages (before the inbox closes) and
// waits for the one being delivered.
func (s *Swarm) StopWake() {
	s.mu.Lock()
	cc := s.wake
	s.wake, s.wakeStopped = nil, true
	s.mu.Unlock()
	if cc != nil {
		cc.Stop()
		<-cc.Closed()
	}
}

// Send sends body to the agent to of the swarm, from this agent
// ("agent:<name>"), and returns the message's sequence number in the
// wake stream. The message waits there until to takes it (up to
// WakeMaxAge): to need not be running.
func (s *Swarm) Send(ctx context.Context, to, body string) (uint64, error) {
	if err := CheckAgent(to); err != nil {
		return 0, errdefs.New(errdefs.ErrInvalid, fmt.Sprintf("to %q: not an agent's name in a swarm (letters, digits, _ -)", to))
	}
	if body == "" {
		return 0, errdefs.New(errdefs.ErrInvalid, "body: must not be empty")
	}
	if max := s.nc.MaxPayload() - 1024; max > 0 && int64(len(body)) > max {
		return 0, errdefs.New(errdefs.ErrLimit, fmt.Sprintf("body: %d bytes, a message to another agent carries at most %d (the NATS server's max_payload less 1 KiB)", len(body), max))
	}
	if !s.nc.IsConnected() {
		return 0, ErrAway
	}
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	m := nats.NewMsg(WakeSubject(s.o.Swarm, to))
	m.Header.Set(headerFrom, "agent:"+s.o.Name)
	m.Data = []byte(body)
	ack, err := s.js.PublishMsg(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("send to %s: %w", to, err)
	}
	return ack.Sequence, nil
}
