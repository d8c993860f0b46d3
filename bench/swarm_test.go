package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/swarm"
)

// Scale of BenchmarkSwarmScale (issue 22).
const (
	scaleAgents    = 1000             // simulated agents, one NATS connection each
	scaleBeat      = 10 * time.Second // an agent's heartbeat, as a daemon's
	scaleSpeedup   = 10               // heartbeats come this many times faster
	scaleNotices   = 10000            // notices a second, all agents together
	scalePhase     = 3 * time.Second  // each phase's length
	scaleEntrySize = 400              // bytes of a directory entry, about a real one's
	// The notices' generator: scalePacers goroutines, each publishing
	// for its share of the agents every scaleTick, asynchronously on
	// each agent's connection, at most scaleWindow publishes of an agent
	// unacknowledged.
	scalePacers = 4
	scaleTick   = 10 * time.Millisecond
	scaleWindow = 256
)

// BenchmarkSwarmScale loads one NATS server (a real `hive hub` process)
// as a swarm of 1,000 agents would, in two phases:
//
//  1. heartbeats: every agent puts its directory entry (400 bytes) into
//     the swarm's bucket every 10 s, compressed 10× in time (1,000 puts a
//     second, each agent every second);
//  2. notices: the agents publish 10,000 notices a second into the
//     swarm's notices stream (acknowledged publishes, sent
//     asynchronously with a bounded window so that the generator is not
//     what limits the rate: a daemon's queue publishes one at a time),
//     while one reader follows them with an ordered consumer (as `hive
//     swarm events -f`), and the heartbeats go on at their real rate.
//
// A real daemon (`hive daemon --nats`) is a member of the swarm
// throughout: in phase 1 as any member (its own heartbeat and wake
// consumer), in phase 2 with its dashboard's event stream open, so that
// it watches the whole directory and every notice (the live swarm page).
//
// Metrics: put-p50-µs and put-p99-µs (a heartbeat's KV put, acknowledged);
// hub-cpu-%-beats (the server's CPU, share of one core, in phase 1) and
// hub-cpu-%-beats-real (the same divided by the speed-up: 1,000 agents
// beating every 10 s); daemon-cpu-%-beats (the real daemon's, phase 1);
// ack-p50-ms and ack-p99-ms (a notice from its publish to the stream's
// acknowledgement: the hub's part); notice-p50-ms and notice-p99-ms (a
// notice from its publish to its delivery to the reader); published/s (acknowledged by the stream) and
// notices/s (delivered to the reader), over the time from the first
// publish to the last acknowledgement, and sent/s (handed to the client,
// over the publishing alone); hub-cpu-%-notices,
// daemon-cpu-%-notices-page (the daemon with a page open) and
// gen-cpu-%-notices (this process: the generator and the reader), all in
// phase 2, and hub-cpu-µs/notice and daemon-cpu-µs/notice-page, the CPU
// time a notice costs each (what a busy machine changes least). The load generator shares the machine with the server and
// the daemon: on 2 cores the figures are an upper bound.
func BenchmarkSwarmScale(b *testing.B) {
	for range b.N {
		swarmScale(b)
	}
}

func swarmScale(b *testing.B) {
	const name = "scale"
	dir := hivetest.StateDir(b)
	hub := hivetest.Command(b, dir, "hub", "--listen", "127.0.0.1:0")
	out, err := hub.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := hub.Start(); err != nil {
		b.Fatalf("start hive hub: %v", err)
	}
	done := make(chan struct{})
	urlc := make(chan string, 1)
	go func() {
		defer close(done)
		r := bufio.NewReader(out)
		s, _ := r.ReadString('\n')
		urlc <- strings.TrimSpace(s)
		io.Copy(io.Discard, r)
		hub.Wait()
	}()
	defer func() {
		hub.Process.Signal(syscall.SIGTERM)
		<-done
	}()
	var url string
	select {
	case url = <-urlc:
	case <-time.After(20 * time.Second):
		b.Fatal("hive hub printed no URL in 20 s")
	}
	if url == "" {
		b.Fatal("hive hub ended without a URL")
	}
	pid := hub.Process.Pid

	ctx := context.Background()
	conns := make([]*nats.Conn, scaleAgents)
	jss := make([]jetstream.JetStream, scaleAgents)
	for i := range conns {
		nc, err := nats.Connect(url, nats.Name(fmt.Sprintf("agent-%d", i)))
		if err != nil {
			b.Fatalf("agent %d: %v", i, err)
		}
		defer nc.Close()
		conns[i] = nc
		if jss[i], err = jetstream.New(nc); err != nil {
			b.Fatal(err)
		}
	}
	// The bucket and the stream as a daemon sets them up.
	if _, err := jss[0].CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: swarm.Bucket(name), History: 1,
		TTL: swarm.EntryLife, LimitMarkerTTL: swarm.EntryLife}); err != nil {
		b.Fatal(err)
	}
	if _, err := jss[0].CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: swarm.Stream(name),
		Subjects: []string{swarm.NoticeSubject(name, "*", "*")}, MaxAge: swarm.NoticesMaxAge,
		MaxBytes: swarm.NoticesMaxBytes, Discard: jetstream.DiscardOld}); err != nil {
		b.Fatal(err)
	}
	entry := []byte(`{"name":"agent","status_text":"` + strings.Repeat("x", scaleEntrySize-32) + `"}`)
	kvs := make([]jetstream.KeyValue, scaleAgents)
	for i := range kvs {
		var err error
		if kvs[i], err = jss[i].KeyValue(ctx, swarm.Bucket(name)); err != nil {
			b.Fatal(err)
		}
	}

	// The real daemon, a member of the swarm, its HTTP front end on.
	member := startDaemonArgs(b, nil, []string{"--nats", url, "--swarm", name, "--name", "real", "--http", "127.0.0.1:0"})
	hivetest.Eventually(b, 20*time.Second, "the real daemon to join the swarm", func() error {
		_, err := kvs[0].Get(ctx, "real")
		return err
	})

	// beat runs every agent's heartbeat, one every period (staggered),
	// until stop closes; it returns each put's latency.
	beat := func(period time.Duration, stop <-chan struct{}) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		for i := range scaleAgents {
			wg.Go(func() {
				key := fmt.Sprintf("agent-%d", i)
				select { // stagger the agents over one period
				case <-time.After(period * time.Duration(i) / scaleAgents):
				case <-stop:
					return
				}
				t := time.NewTicker(period)
				defer t.Stop()
				for {
					t0 := time.Now()
					pctx, cancel := context.WithTimeout(ctx, swarm.OpTimeout)
					_, err := kvs[i].Put(pctx, key, entry)
					cancel()
					d := time.Since(t0)
					if err == nil {
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
					select {
					case <-t.C:
					case <-stop:
						return
					}
				}
			})
		}
		wg.Wait()
		return lat
	}

	b.ResetTimer()
	// Phase 1: heartbeats, compressed.
	cpu0, _ := procCPU(pid)
	dcpu0, _ := procCPU(member.Pid)
	t0 := time.Now()
	stop := make(chan struct{})
	time.AfterFunc(scalePhase, func() { close(stop) })
	puts := beat(scaleBeat/scaleSpeedup, stop)
	cpu1, _ := procCPU(pid)
	dcpu1, _ := procCPU(member.Pid)
	beatsCPU := 100 * float64(cpu1-cpu0) / float64(time.Since(t0))
	memberBeatsCPU := 100 * float64(dcpu1-dcpu0) / float64(time.Since(t0))
	if len(puts) == 0 {
		b.Fatal("no heartbeat was stored")
	}

	// Phase 2: notices, with a reader following them, and the heartbeats
	// at their real rate.
	type noticeMsg struct {
		Agent string `json:"agent"`
		Kind  string `json:"kind"`
		Sent  int64  `json:"sent_ns"`
	}
	st, err := jss[0].Stream(ctx, swarm.Stream(name))
	if err != nil {
		b.Fatal(err)
	}
	oc, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	var lmu sync.Mutex
	var nlat []time.Duration
	cc, err := oc.Consume(func(m jetstream.Msg) {
		var n noticeMsg
		if json.Unmarshal(m.Data(), &n) == nil && n.Sent > 0 {
			d := time.Since(time.Unix(0, n.Sent))
			lmu.Lock()
			nlat = append(nlat, d)
			lmu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	// The daemon's dashboard, open: its event stream, read and dropped.
	pageEvents, closePage := openPage(b, member.Dir)
	defer closePage()
	stop2 := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { beat(scaleBeat, stop2) })
	// The publishers' JetStream contexts, with a bounded async window.
	pjs := make([]jetstream.JetStream, scaleAgents)
	for i := range pjs {
		if pjs[i], err = jetstream.New(conns[i], jetstream.WithPublishAsyncMaxPending(scaleWindow)); err != nil {
			b.Fatal(err)
		}
	}
	cpu2, _ := procCPU(pid)
	dcpu2, _ := procCPU(member.Pid)
	gcpu2, _ := procCPU(os.Getpid())
	ev2 := pageEvents.Load()
	t2 := time.Now()
	// Each pacer publishes, every scaleTick, its share of the notices due
	// by then (a late tick catches up), for its agents in turn; a
	// collector of its own waits for their acknowledgements, in the order
	// sent (so a late one delays the next ones' figures: an upper bound).
	type pending struct {
		f  jetstream.PubAckFuture
		at time.Time
	}
	var pw, aw sync.WaitGroup
	var amu sync.Mutex
	var acks []time.Duration
	sent, published := 0, 0
	stopPub := make(chan struct{})
	// The collectors give up 5 s after the last publish.
	actx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	for k := range scalePacers {
		q := make(chan pending, scaleNotices*int(scalePhase/time.Second))
		aw.Go(func() {
			var lat []time.Duration
			n := 0
			defer func() {
				amu.Lock()
				acks, published = append(acks, lat...), published+n
				amu.Unlock()
			}()
			for p := range q {
				select {
				case <-p.f.Ok():
					lat = append(lat, time.Since(p.at))
					n++
				case <-p.f.Err():
				case <-actx.Done():
					return
				}
			}
		})
		pw.Go(func() {
			defer close(q)
			t := time.NewTicker(scaleTick)
			defer t.Stop()
			next, done := k, 0
			for {
				due := int(time.Since(t2) * scaleNotices / scalePacers / time.Second)
				for ; done < due; done++ {
					i := next
					next += scalePacers
					if next >= scaleAgents {
						next = k
					}
					agent := fmt.Sprintf("agent-%d", i)
					now := time.Now()
					data, _ := json.Marshal(noticeMsg{Agent: agent, Kind: "job_ended", Sent: now.UnixNano()})
					f, err := pjs[i].PublishAsync(swarm.NoticeSubject(name, agent, "job_ended"), data)
					if err == nil {
						q <- pending{f, now}
						amu.Lock()
						sent++
						amu.Unlock()
					}
				}
				select {
				case <-t.C:
				case <-stopPub:
					return
				}
			}
		})
	}
	time.Sleep(scalePhase)
	close(stopPub)
	pw.Wait()
	sending := time.Since(t2)
	// The acknowledgements of what was sent, within a few seconds.
	stopAcks := time.AfterFunc(5*time.Second, giveUp)
	aw.Wait()
	stopAcks.Stop()
	elapsed := time.Since(t2)
	cpu3, _ := procCPU(pid)
	dcpu3, _ := procCPU(member.Pid)
	gcpu3, _ := procCPU(os.Getpid())
	ev3 := pageEvents.Load()
	// Let the reader catch up with what was published.
	time.Sleep(500 * time.Millisecond)
	cc.Stop()
	close(stop2)
	bg.Wait()
	b.StopTimer()
	lmu.Lock()
	got := slices.Clone(nlat)
	lmu.Unlock()
	if len(got) == 0 {
		b.Fatal("the reader got no notice")
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(us(quantile(puts, 0.50)), "put-p50-µs")
	b.ReportMetric(us(quantile(puts, 0.99)), "put-p99-µs")
	b.ReportMetric(beatsCPU, "hub-cpu-%-beats")
	b.ReportMetric(beatsCPU/scaleSpeedup, "hub-cpu-%-beats-real")
	if len(acks) > 0 {
		b.ReportMetric(ms(quantile(acks, 0.50)), "ack-p50-ms")
		b.ReportMetric(ms(quantile(acks, 0.99)), "ack-p99-ms")
	}
	b.ReportMetric(ms(quantile(got, 0.50)), "notice-p50-ms")
	b.ReportMetric(ms(quantile(got, 0.99)), "notice-p99-ms")
	b.ReportMetric(float64(sent)/sending.Seconds(), "sent/s")
	b.ReportMetric(float64(published)/elapsed.Seconds(), "published/s")
	b.ReportMetric(float64(len(got))/elapsed.Seconds(), "notices/s")
	b.ReportMetric(100*float64(cpu3-cpu2)/float64(elapsed), "hub-cpu-%-notices")
	b.ReportMetric(memberBeatsCPU, "daemon-cpu-%-beats")
	b.ReportMetric(100*float64(dcpu3-dcpu2)/float64(elapsed), "daemon-cpu-%-notices-page")
	b.ReportMetric(100*float64(gcpu3-gcpu2)/float64(elapsed), "gen-cpu-%-notices")
	b.ReportMetric(float64(ev3-ev2)/elapsed.Seconds(), "page-events/s")
	if published > 0 {
		b.ReportMetric(us(cpu3-cpu2)/float64(published), "hub-cpu-µs/notice")
		b.ReportMetric(us(dcpu3-dcpu2)/float64(published), "daemon-cpu-µs/notice-page")
	}
}

// openPage opens the event stream of the dashboard of the daemon on
// state dir dir (/api/events, as a page does) and reads it, counting its
// events, until stop is called (which waits for the reader).
func openPage(b *testing.B, dir string) (events *atomic.Int64, stop func()) {
	b.Helper()
	out, err := hivetest.Run(b, dir, "version", "--json")
	if err != nil {
		b.Fatalf("hive version: %v: %s", err, out)
	}
	var v struct {
		Addr string `json:"daemon_http_addr"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Addr == "" {
		b.Fatalf("hive version --json: no daemon_http_addr in %s", out)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "http-token"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+v.Addr+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		b.Fatalf("GET /api/events: %v %v", resp, err)
	}
	events = new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events.Add(1)
			}
		}
	}()
	return events, func() {
		cancel()
		resp.Body.Close()
		<-done
	}
}

// quantile is the q-quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
