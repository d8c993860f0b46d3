package bench

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// backToBackCalls is how many calls each client makes an iteration.
const backToBackCalls = 100

// BenchmarkBackToBack measures terminal_exec("true") made back to back:
// per iteration, 100 calls from one raw client, then 100 from each of
// three raw clients at once. A call's job is the daemon's own start (the
// short path: forked by the daemon into a cgroup its holder lent, the
// holder keeping it) or, when the daemon has no lent cgroup at hand, the
// holder's spawn; the daemon's stats count both (starts_own,
// starts_holder, starts_no_spare), read before and after each part.
//
// Metrics: p50-1-us and p50-3-us (the calls' medians, one client and
// three), own-frac-1 and own-frac-3 (the short path's share of the
// calls), no-spare-frac-1 and no-spare-frac-3 (the share that was the
// holder's spawn for want of a lent cgroup; with the holder's loan of
// four spares, 0.16 and 0.43 on the 2-core VM; of sixteen, 0 and 0.02).
func BenchmarkBackToBack(b *testing.B) {
	d := startDaemon(b)
	sessions := []*rawSession{connectRaw(b, d), connectRaw(b, d), connectRaw(b, d)}
	const params = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	call := func(s *rawSession) (time.Duration, error) {
		t0 := time.Now()
		out, err := s.call("tools/call", params)
		took := time.Since(t0)
		if err != nil {
			return 0, err
		}
		var r struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				ExitCode *int `json:"exit_code"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.IsError || r.StructuredContent.ExitCode == nil || *r.StructuredContent.ExitCode != 0 {
			return 0, fmt.Errorf("terminal_exec: %s", out)
		}
		return took, nil
	}
	for _, s := range sessions { // each path once
		if _, err := call(s); err != nil {
			b.Fatal(err)
		}
	}
	stats := func() proto.Stats {
		resp, err := client.Call(paths.Layout{Dir: d.Dir}, proto.Request{Cmd: proto.CmdStats})
		if err != nil || resp.Stats == nil {
			b.Fatalf("stats: %v %+v", err, resp)
		}
		return *resp.Stats
	}
	// part runs n clients' calls at once; it returns their times and
	// the starts the daemon counted meanwhile.
	part := func(n int) (times []time.Duration, own, noSpare int64) {
		before := stats()
		all := make([][]time.Duration, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range backToBackCalls {
					t, err := call(sessions[k])
					if err != nil {
						errs[k] = err
						return
					}
					all[k] = append(all[k], t)
				}
			}()
		}
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				b.Fatalf("client %d: %v", k, err)
			}
			times = append(times, all[k]...)
		}
		after := stats()
		started := (after.StartsOwn - before.StartsOwn) + (after.StartsHolder - before.StartsHolder)
		if started != int64(n*backToBackCalls) {
			b.Fatalf("%d calls, %d starts counted (before %+v, after %+v)", n*backToBackCalls, started, before, after)
		}
		return times, after.StartsOwn - before.StartsOwn, after.StartsNoSpare - before.StartsNoSpare
	}
	var one, three []time.Duration
	var own1, own3, none1, none3 int64
	b.ResetTimer()
	for range b.N {
		t, own, none := part(1)
		one, own1, none1 = append(one, t...), own1+own, none1+none
		t, own, none = part(3)
		three, own3, none3 = append(three, t...), own3+own, none3+none
	}
	b.StopTimer()
	p50 := func(v []time.Duration) float64 {
		slices.Sort(v)
		return float64(v[len(v)/2].Microseconds())
	}
	b.ReportMetric(p50(one), "p50-1-us")
	b.ReportMetric(p50(three), "p50-3-us")
	b.ReportMetric(float64(own1)/float64(len(one)), "own-frac-1")
	b.ReportMetric(float64(own3)/float64(len(three)), "own-frac-3")
	b.ReportMetric(float64(none1)/float64(len(one)), "no-spare-frac-1")
	b.ReportMetric(float64(none3)/float64(len(three)), "no-spare-frac-3")
}
