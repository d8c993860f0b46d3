// Package swarm joins a daemon to a swarm of agents over NATS JetStream
// (docs/swarm.md): it keeps the agent's entry in the swarm's directory
// (a KV bucket), publishes its notices (a stream) and reads the others'.
// It is one more surface of the service: it watches the service's
// events and reads its state, and runs no command for anyone: NATS
// carries data, never commands.
//
// Without a Swarm nothing of this runs: a daemon started without --nats
// opens no connection.
package swarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/service"
)

// Defaults of Options.
const (
	DefaultHeartbeat = 10 * time.Second
	// EntryLife is how long a directory entry outlives its last
	// heartbeat: an agent silent that long drops out.
	EntryLife     = 30 * time.Second
	DefaultBuffer = 10000
	// OpTimeout bounds every NATS operation a tool call or the CLI waits
	// for.
	OpTimeout = 2 * time.Second
)

// Retention of a swarm's notices stream.
const (
	NoticesMaxAge   = 7 * 24 * time.Hour
	NoticesMaxBytes = 256 << 20
)

// Conn says how to reach the NATS server of a swarm.
type Conn struct {
	// URL is the server's URL (nats://host:4222, tls://...); a comma
	// separates several servers of a cluster.
	URL string
	// Swarm is the swarm's name: letters, digits, _ and -.
	Swarm string
	// CredsFile is a NATS credentials file (a user JWT and its nkey
	// seed); TokenFile a file holding a token. At most one.
	CredsFile, TokenFile string
	// TLSCA is a PEM file of the CAs the server's certificate must chain
	// to; "" uses the system's.
	TLSCA string
}

// nameRE is what a swarm's or an agent's name may be in a swarm: one
// token of a NATS subject and a KV key.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Check checks c: an error names the field and the rule.
func (c Conn) Check() error {
	if c.URL == "" {
		return errors.New("--nats: the NATS server's URL is required (nats://HOST:4222)")
	}
	if c.Swarm == "" {
		return errors.New("--swarm: a swarm's name is required with --nats")
	}
	if !nameRE.MatchString(c.Swarm) || len(c.Swarm) > 64 {
		return fmt.Errorf("--swarm %q: must be 1-64 letters, digits, _ or - (it is a token of the swarm's subjects)", c.Swarm)
	}
	if c.CredsFile != "" && c.TokenFile != "" {
		return errors.New("--nats-creds and --nats-token-file: give one or the other")
	}
	return nil
}

// CheckAgent checks an agent's name for a swarm.
func CheckAgent(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("--name %q: an agent of a swarm is named by 1-128 letters, digits, _ or - (no dot: the name is a token of its subjects)", name)
	}
	return nil
}

// Bucket is the name of the swarm's directory (a KV bucket).
func Bucket(swarm string) string { return "hive_agents_" + swarm }

// Stream is the name of the swarm's notices stream.
func Stream(swarm string) string { return "hive_notices_" + swarm }

// NoticeSubject is the subject of an agent's notice of a kind; agent or
// kind "*" match all.
func NoticeSubject(swarm, agent, kind string) string {
	return "hive." + swarm + ".notice." + agent + "." + kind
}

// options are the NATS connection options of c.
func (c Conn) options(name string) ([]nats.Option, error) {
	opts := []nats.Option{nats.Name(name), nats.Timeout(OpTimeout)}
	if c.CredsFile != "" {
		if _, err := os.Stat(c.CredsFile); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return nil, fmt.Errorf("--nats-token-file %s: empty", c.TokenFile)
		}
		opts = append(opts, nats.Token(tok))
	}
	if c.TLSCA != "" {
		if _, err := os.Stat(c.TLSCA); err != nil {
			return nil, fmt.Errorf("--nats-tls-ca: %w", err)
		}
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	return opts, nil
}

// Options configure a Swarm.
type Options struct {
	Conn
	// Name is the agent's name in the swarm (see CheckAgent).
	Name string
	// Hive is the name of the host the daemon runs on. If empty, the
	// host name.
	Hive string
	// Version is hive's version, DashboardURL the agent's dashboard ("":
	// none).
	Version, DashboardURL string
	// Heartbeat is how often the directory entry is written when nothing
	// changes. If zero, DefaultHeartbeat.
	Heartbeat time.Duration
	// Buffer bounds the notices kept while NATS is away; past it the
	// oldest go, counted. If zero, DefaultBuffer.
	Buffer int
	// Logger: if nil, discards.
	Logger *slog.Logger
}

// Swarm is the daemon's membership of a swarm: made by New, started by
// Start, ended by Close. It implements service.Swarm. Safe for
// concurrent use.
type Swarm struct {
	o    Options
	boot string // this daemon's start, in message ids

	svc    *service.Service
	nc     *nats.Conn
	js     jetstream.JetStream
	cancel context.CancelFunc
	wg     sync.WaitGroup // the run loop
	stopW  func()         // stops watching the service's events

	kick chan struct{} // write the directory entry now
	pub  chan struct{} // a notice is queued
	up   chan struct{} // the connection is (back) up
	// conn is closed, and replaced, at each (re)connection (under mu):
	// a Watch starts its watch of the directory again then.
	conn chan struct{}

	mu      sync.Mutex
	kv      jetstream.KeyValue // nil until the bucket is set up
	queue   []Notice           // not yet published, oldest first
	seq     uint64             // notices queued so far
	dropped int                // dropped since the last published notice
	lost    int                // dropped in all
	jobs    map[string]string  // state of jobs not yet ended
	ended   []string           // ids of the latest ended jobs (a ring)
	turn    string
	last    *service.SwarmNotice // the latest notice queued, told in short
	closing bool
	// wake consumes the agent's wake messages; nil until set up, and
	// after StopWake (then wakeStopped).
	wake        jetstream.ConsumeContext
	wakeStopped bool
}

// New checks o and returns a Swarm that has not connected yet.
func New(o Options) (*Swarm, error) {
	if err := o.Conn.Check(); err != nil {
		return nil, err
	}
	if err := CheckAgent(o.Name); err != nil {
		return nil, err
	}
	if o.Hive == "" {
		o.Hive, _ = os.Hostname()
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Swarm{o: o, boot: fmt.Sprint(time.Now().UnixNano()), kick: make(chan struct{}, 1), pub: make(chan struct{}, 1), up: make(chan struct{}, 1),
		conn: make(chan struct{}), jobs: map[string]string{}}, nil
}

// Name is the swarm's name.
func (s *Swarm) Name() string { return s.o.Swarm }

// Hive is the name of this daemon's host.
func (s *Swarm) Hive() string { return s.o.Hive }

// Start connects in the background (a server down now is joined when it
// comes up) and starts telling the swarm of svc's agent. It fails only
// on a bad setting (a credentials file that cannot be read).
func (s *Swarm) Start(svc *service.Service) error {
	opts, err := s.o.Conn.options("hive " + s.o.Name)
	if err != nil {
		return err
	}
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	opts = append(opts, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond),
		nats.ConnectHandler(func(*nats.Conn) { s.o.Logger.Info("swarm: connected", "url", s.o.URL); s.connected(); signal(s.up) }),
		nats.ReconnectHandler(func(*nats.Conn) { s.o.Logger.Info("swarm: reconnected", "url", s.o.URL); s.connected(); signal(s.up) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.o.Logger.Warn("swarm: disconnected", "url", s.o.URL, "err", err)
			}
		}))
	nc, err := nats.Connect(s.o.URL, opts...)
	if err != nil {
		return fmt.Errorf("--nats %s: %w", s.o.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("--nats %s: %w", s.o.URL, err)
	}
	s.svc, s.nc, s.js = svc, nc, js
	s.stopW = svc.Watch(s.event)
	s.enqueue(Notice{Kind: KindDaemonStarted, Version: s.o.Version})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx)
	}()
	if nc.IsConnected() {
		signal(s.up)
	}
	return nil
}

// connected tells the Watches that the connection is (back) up.
func (s *Swarm) connected() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.conn)
	s.conn = make(chan struct{})
}

// connChan is closed at the next (re)connection.
func (s *Swarm) connChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// Close tells the swarm the daemon stops (a notice, and its directory
// entry goes), publishing what is queued for up to OpTimeout, and ends
// the connection. It returns once the goroutines Start started have
// ended. A Swarm never started closes at once.
func (s *Swarm) Close() {
	if s.nc == nil {
		return
	}
	s.stopW()
	s.StopWake()
	s.enqueue(Notice{Kind: KindDaemonStopped})
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.nc.Close()
}

// run keeps the directory entry and publishes the notices until ctx
// ends, then flushes what it can.
func (s *Swarm) run(ctx context.Context) {
	tick := time.NewTicker(s.o.Heartbeat)
	defer tick.Stop()
	ready := false
	for {
		if !ready && s.nc.IsConnected() {
			ready = s.setup(ctx)
		}
		if ready {
			if err := s.flush(ctx); err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("swarm: notices wait", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			s.final(ready)
			return
		case <-s.up:
			// (Re)connected: the bucket and stream may be new (a server
			// that lost its store); set them up and write the entry.
			ready = false
		case <-s.pub:
		case <-s.kick:
			if ready {
				s.heartbeat(ctx)
			}
		case <-tick.C:
			if ready {
				s.heartbeat(ctx)
			}
		}
	}
}

// final publishes what is queued and removes the entry, bounded by
// OpTimeout in all.
func (s *Swarm) final(ready bool) {
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	if !ready && s.nc.IsConnected() {
		ready = s.setup(ctx)
	}
	if !ready || !s.nc.IsConnected() {
		s.mu.Lock()
		n := len(s.queue)
		s.mu.Unlock()
		if n > 0 {
			s.o.Logger.Warn("swarm: notices not published: NATS is away", "count", n)
		}
		return
	}
	if err := s.flush(ctx); err != nil {
		s.o.Logger.Warn("swarm: notices not published", "err", err)
	}
	s.mu.Lock()
	kv := s.kv
	s.mu.Unlock()
	if err := kv.Delete(ctx, s.o.Name); err != nil {
		s.o.Logger.Warn("swarm: directory entry not removed (it drops out after its life)", "err", err)
	}
}

// setup makes the swarm's bucket and stream (or takes them as they are)
// and writes the entry; false if NATS did not answer.
func (s *Swarm) setup(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	kv, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket(s.o.Swarm),
		Description: "hive swarm " + s.o.Swarm + ": its agents, by name", History: 1,
		TTL: EntryLife, LimitMarkerTTL: EntryLife, Replicas: s.replicas(ctx, "KV_"+Bucket(s.o.Swarm))})
	if err != nil {
		s.o.Logger.Warn("swarm: set up the directory", "bucket", Bucket(s.o.Swarm), "err", err)
		return false
	}
	if _, err := s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: Stream(s.o.Swarm),
		Description: "hive swarm " + s.o.Swarm + ": its agents' notices",
		Subjects:    []string{NoticeSubject(s.o.Swarm, "*", "*")},
		MaxAge:      NoticesMaxAge, MaxBytes: NoticesMaxBytes, Discard: jetstream.DiscardOld,
		Replicas: s.replicas(ctx, Stream(s.o.Swarm))}); err != nil {
		s.o.Logger.Warn("swarm: set up the notices stream", "stream", Stream(s.o.Swarm), "err", err)
		return false
	}
	if err := s.setupWake(ctx); err != nil {
		s.o.Logger.Warn("swarm: set up the wake messages", "stream", WakeStream(s.o.Swarm), "err", err)
		return false
	}
	s.mu.Lock()
	s.kv = kv
	s.mu.Unlock()
	s.heartbeat(ctx)
	return true
}

// MaxReplicas is how many servers of a cluster keep a copy of a swarm's
// bucket and streams: a cluster of three or more outlives the loss of
// one server (or of its meta leader) without losing the directory, the
// notices or the messages waiting.
const MaxReplicas = 3

// replicas is the number of copies the stream name is set up with: one
// on a lone server; in a cluster, one a server up to MaxReplicas. It is
// never fewer than the stream has now (made by an operator, or by a
// daemon that saw more servers): a daemon that connects before it heard
// of the cluster's other servers does not scale the stream down.
func (s *Swarm) replicas(ctx context.Context, name string) int {
	n := 1
	if s.nc.ConnectedClusterName() != "" {
		n = min(len(s.nc.Servers()), MaxReplicas)
	}
	if st, err := s.js.Stream(ctx, name); err == nil {
		n = max(n, st.CachedInfo().Config.Replicas)
	}
	return max(n, 1)
}

// heartbeat writes the agent's entry; nothing while NATS is away (the
// reconnection writes it).
func (s *Swarm) heartbeat(ctx context.Context) {
	if !s.nc.IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	a := s.entry(ctx)
	b, err := marshal(a)
	if err != nil {
		s.o.Logger.Error("swarm: directory entry", "err", err)
		return
	}
	s.mu.Lock()
	kv := s.kv
	s.mu.Unlock()
	if _, err := kv.Put(ctx, s.o.Name, b); err != nil {
		s.o.Logger.Warn("swarm: heartbeat", "err", err)
	}
}

// entry is the agent's directory entry now.
func (s *Swarm) entry(ctx context.Context) service.SwarmAgent {
	st, _ := s.svc.AgentState()
	a := service.SwarmAgent{Name: s.o.Name, Hive: s.o.Hive, Swarm: s.o.Swarm, Version: s.o.Version,
		StatusText: st.StatusText, StatusSetAt: st.StatusSetAt, Turn: st.Turn, TurnSince: st.TurnSince,
		JobsRunning: s.svc.JobsRunning(), Heartbeat: time.Now().UTC()}
	if n, err := s.svc.LooseEndCounts(ctx); err == nil {
		a.LooseEnds = &n
	}
	s.mu.Lock()
	a.LastNotice, a.DashboardURL = s.last, s.o.DashboardURL
	s.mu.Unlock()
	return a
}

// SetDashboardURL sets the dashboard's URL the directory entry tells,
// once the daemon knows the address its HTTP front end listens on (a
// port 0 is known only then); the entry is written again at once. Safe
// for concurrent use.
func (s *Swarm) SetDashboardURL(url string) {
	s.mu.Lock()
	s.o.DashboardURL = url
	s.mu.Unlock()
	s.kickHeartbeat()
}

func (s *Swarm) kickHeartbeat() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// ErrAway is the answer of a directory read while NATS is away.
var ErrAway = errdefs.New(errdefs.ErrUnavailable, "swarm: the NATS server is not connected")

// Agent is the directory's entry of name.
func (s *Swarm) Agent(ctx context.Context, name string) (service.SwarmAgent, error) {
	kv, err := s.bucket()
	if err != nil {
		return service.SwarmAgent{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	return getAgent(ctx, kv, name)
}

// Agents lists the directory, by name.
func (s *Swarm) Agents(ctx context.Context) ([]service.SwarmAgent, error) {
	kv, err := s.bucket()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	return listAgents(ctx, kv)
}

func (s *Swarm) bucket() (jetstream.KeyValue, error) {
	if !s.nc.IsConnected() {
		return nil, ErrAway
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil {
		return nil, ErrAway
	}
	return s.kv, nil
}
