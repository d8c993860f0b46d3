package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
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
)

// BenchmarkSwarmScale loads one NATS server (a real `hive hub` process)
// as a swarm of 1,000 agents would, in two phases:
//
//  1. heartbeats: every agent puts its directory entry (400 bytes) into
//     the swarm's bucket every 10 s, compressed 10× in time (1,000 puts a
//     second, each agent every second);
//  2. notices: the agents publish 10,000 notices a second into the
//     swarm's notices stream (acknowledged publishes, as a daemon's),
//     while one reader follows them with an ordered consumer (as `hive
//     swarm events -f`), and the heartbeats go on at their real rate.
//
// Metrics: put-p50-µs and put-p99-µs (a heartbeat's KV put, acknowledged);
// hub-cpu-%-beats (the server's CPU, share of one core, in phase 1) and
// hub-cpu-%-beats-real (the same divided by the speed-up: 1,000 agents
// beating every 10 s); notice-p50-ms and notice-p99-ms (a notice from its
// publish to its delivery to the reader); published/s (acknowledged by
// the stream) and notices/s (delivered to the reader);
// hub-cpu-%-notices (phase 2). The load generator shares the machine
// with the server: on 2 cores the figures are an upper bound.
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
	t0 := time.Now()
	stop := make(chan struct{})
	time.AfterFunc(scalePhase, func() { close(stop) })
	puts := beat(scaleBeat/scaleSpeedup, stop)
	cpu1, _ := procCPU(pid)
	beatsCPU := 100 * float64(cpu1-cpu0) / float64(time.Since(t0))
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
	stop2 := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { beat(scaleBeat, stop2) })
	cpu2, _ := procCPU(pid)
	t2 := time.Now()
	// Each agent publishes its share: 10 notices a second, one every
	// 100 ms, acknowledged one by one as a daemon's queue does.
	var pw sync.WaitGroup
	var pmu sync.Mutex
	published := 0
	per := time.Second * scaleAgents / scaleNotices
	stopPub := make(chan struct{})
	for i := range scaleAgents {
		pw.Go(func() {
			subj := swarm.NoticeSubject(name, fmt.Sprintf("agent-%d", i), "job_ended")
			select {
			case <-time.After(per * time.Duration(i) / scaleAgents):
			case <-stopPub:
				return
			}
			t := time.NewTicker(per)
			defer t.Stop()
			for {
				data, _ := json.Marshal(noticeMsg{Agent: fmt.Sprintf("agent-%d", i), Kind: "job_ended", Sent: time.Now().UnixNano()})
				pctx, cancel := context.WithTimeout(ctx, swarm.OpTimeout)
				_, err := jss[i].Publish(pctx, subj, data)
				cancel()
				if err == nil {
					pmu.Lock()
					published++
					pmu.Unlock()
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
	elapsed := time.Since(t2)
	cpu3, _ := procCPU(pid)
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
	b.ReportMetric(ms(quantile(got, 0.50)), "notice-p50-ms")
	b.ReportMetric(ms(quantile(got, 0.99)), "notice-p99-ms")
	b.ReportMetric(float64(published)/elapsed.Seconds(), "published/s")
	b.ReportMetric(float64(len(got))/elapsed.Seconds(), "notices/s")
	b.ReportMetric(100*float64(cpu3-cpu2)/float64(elapsed), "hub-cpu-%-notices")
}

// quantile is the q-quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
