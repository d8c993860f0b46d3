package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/service"
)

func marshal(a service.SwarmAgent) ([]byte, error) { return json.Marshal(a) }

// getAgent reads name's directory entry.
func getAgent(ctx context.Context, kv jetstream.KeyValue, name string) (service.SwarmAgent, error) {
	if err := CheckAgent(name); err != nil {
		return service.SwarmAgent{}, errdefs.New(errdefs.ErrInvalid, fmt.Sprintf("name %q: not an agent's name in a swarm (letters, digits, _ -)", name))
	}
	e, err := kv.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return service.SwarmAgent{}, errdefs.New(errdefs.ErrNotFound, fmt.Sprintf("name %q: no agent of that name in the swarm (none, or silent for %v)", name, EntryLife))
	}
	if err != nil {
		return service.SwarmAgent{}, fmt.Errorf("swarm directory: read %q: %w", name, err)
	}
	var a service.SwarmAgent
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return service.SwarmAgent{}, fmt.Errorf("swarm directory: entry %q: %w", name, err)
	}
	return a, nil
}

// listAgents reads every entry of the directory, by name.
func listAgents(ctx context.Context, kv jetstream.KeyValue) ([]service.SwarmAgent, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("swarm directory: %w", err)
	}
	defer w.Stop()
	out := []service.SwarmAgent{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("swarm directory: the watch ended early")
			}
			if e == nil { // every current entry is in
				sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
				return out, nil
			}
			var a service.SwarmAgent
			if err := json.Unmarshal(e.Value(), &a); err != nil {
				continue // not an entry of ours
			}
			out = append(out, a)
		case <-ctx.Done():
			return nil, fmt.Errorf("swarm directory: %w", ctx.Err())
		}
	}
}

// Client reads a swarm for the CLI: its directory and its notices. Close
// it.
type Client struct {
	c  Conn
	nc *nats.Conn
	js jetstream.JetStream
}

// Dial connects to c's server, failing at once if it does not answer.
func Dial(c Conn) (*Client, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	opts, err := c.options("hive cli")
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(c.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("--nats %s: %w", c.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Client{c: c, nc: nc, js: js}, nil
}

// Close ends the connection.
func (c *Client) Close() { c.nc.Close() }

// Agents lists the swarm's directory, by name.
func (c *Client) Agents(ctx context.Context) ([]service.SwarmAgent, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	kv, err := c.js.KeyValue(ctx, Bucket(c.c.Swarm))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return []service.SwarmAgent{}, nil // no agent joined yet
	}
	if err != nil {
		return nil, fmt.Errorf("swarm %s: directory: %w", c.c.Swarm, err)
	}
	return listAgents(ctx, kv)
}

// Notices calls fn with the swarm's notices (of agent, "" for all), the
// oldest kept first. Without follow it returns after the last one there
// is now; with follow it goes on until ctx ends (then nil). An error of
// fn ends it with that error.
func (c *Client) Notices(ctx context.Context, agent string, follow bool, fn func(Notice) error) error {
	if agent == "" {
		agent = "*"
	} else if err := CheckAgent(agent); err != nil {
		return fmt.Errorf("--agent %q: not an agent's name in a swarm (letters, digits, _ -)", agent)
	}
	sctx, cancel := context.WithTimeout(ctx, OpTimeout)
	stream, err := c.js.Stream(sctx, Stream(c.c.Swarm))
	if err == nil {
		_, err = stream.Info(sctx)
	}
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) && !follow {
		return nil // no agent joined yet
	}
	for errors.Is(err, jetstream.ErrStreamNotFound) { // -f: wait for the first agent
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		sctx, cancel := context.WithTimeout(ctx, OpTimeout)
		stream, err = c.js.Stream(sctx, Stream(c.c.Swarm))
		cancel()
	}
	if err != nil {
		return fmt.Errorf("swarm %s: notices: %w", c.c.Swarm, err)
	}
	cctx, cancel := context.WithTimeout(ctx, OpTimeout)
	cons, err := stream.OrderedConsumer(cctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{NoticeSubject(c.c.Swarm, agent, "*")}})
	if err == nil && !follow {
		var info *jetstream.ConsumerInfo
		if info, err = cons.Info(cctx); err == nil && info.NumPending == 0 {
			cancel()
			return nil
		}
	}
	cancel()
	if err != nil {
		return fmt.Errorf("swarm %s: notices: %w", c.c.Swarm, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("swarm %s: notices: %w", c.c.Swarm, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("swarm %s: notices: %w", c.c.Swarm, err)
		}
		var n Notice
		if err := json.Unmarshal(m.Data(), &n); err != nil {
			continue // not a notice of ours
		}
		md, err := m.Metadata()
		if err == nil {
			n.Seq = md.Sequence.Stream
		}
		if err := fn(n); err != nil {
			return err
		}
		if !follow && err == nil && md.NumPending == 0 {
			return nil
		}
	}
}
