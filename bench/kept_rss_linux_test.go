package bench

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// BenchmarkKeptRSS is internal/holder's BenchmarkHolderRSS for the jobs a
// daemon starts itself and has its holder keep (the default where the
// holder can keep): 20 000 `terminal_exec("true")` on a `hive daemon`,
// over 4 bridges at once, and the VmRSS of the holder and of the daemon
// once 1 000, 5 000, 10 000 and 20 000 calls have been answered.
// Skipped where the daemon does not keep its jobs (hive version --json:
// holder.keeps_jobs). One iteration takes a minute or more:
// -benchtime=1x.
//
// Metrics: holder-rss-1k-MiB, holder-rss-20k-MiB, holder-growth-MiB
// (issue 20's target: at most 10), daemon-rss-1k-MiB, daemon-rss-20k-MiB.
func BenchmarkKeptRSS(b *testing.B) {
	const bridges = 4
	marks := []int{1000, 5000, 10000, 20000}
	var h1k, h20k, d1k, d20k float64
	for range b.N {
		d := startDaemon(b)
		if d.holderPID == 0 || !keepsJobs(b, d) {
			d.stop(b)
			b.Skip("this daemon does not keep its jobs with its holder (holder.keeps_jobs)")
		}
		var sessions [bridges]*rawSession
		for k := range sessions {
			sessions[k] = connectRaw(b, d)
		}
		rss := func(pid int) float64 {
			kib, err := procStatusKiB(pid, "VmRSS")
			if err != nil {
				b.Fatal(err)
			}
			return float64(kib) / 1024
		}
		var holder, daemon []float64
		done := 0
		for _, mark := range marks {
			per := (mark - done) / bridges
			errs := make([]error, bridges)
			var wg sync.WaitGroup
			for k, s := range sessions {
				wg.Go(func() {
					for range per {
						if err := execTrue(s); err != nil {
							errs[k] = err
							return
						}
					}
				})
			}
			wg.Wait()
			for k, err := range errs {
				if err != nil {
					b.Fatalf("bridge %d: %v", k, err)
				}
			}
			done = mark
			holder = append(holder, rss(d.holderPID))
			daemon = append(daemon, rss(d.Pid))
		}
		b.Logf("after %v calls: holder RSS %.1f MiB, daemon RSS %.1f MiB", marks, holder, daemon)
		h1k += holder[0]
		h20k += holder[len(holder)-1]
		d1k += daemon[0]
		d20k += daemon[len(daemon)-1]
		for _, s := range sessions {
			s.close(b) // before their daemon stops
		}
		d.stop(b)
	}
	n := float64(b.N)
	b.ReportMetric(h1k/n, "holder-rss-1k-MiB")
	b.ReportMetric(h20k/n, "holder-rss-20k-MiB")
	b.ReportMetric((h20k-h1k)/n, "holder-growth-MiB")
	b.ReportMetric(d1k/n, "daemon-rss-1k-MiB")
	b.ReportMetric(d20k/n, "daemon-rss-20k-MiB")
}

// execTrue is one terminal_exec("true") on s, its answer checked: exit 0.
func execTrue(s *rawSession) error {
	res, err := s.call("tools/call", `{"name":"terminal_exec","arguments":{"cmd":"true"}}`)
	if err != nil {
		return err
	}
	var r struct {
		IsError bool `json:"isError"`
		S       struct {
			ExitCode *int `json:"exit_code"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError || r.S.ExitCode == nil || *r.S.ExitCode != 0 {
		return fmt.Errorf("terminal_exec(true): %s (%v)", res, err)
	}
	return nil
}

// keepsJobs reports whether d starts its jobs itself and its holder
// keeps them (hive version --json: holder.keeps_jobs).
func keepsJobs(b *testing.B, d *daemon) bool {
	b.Helper()
	out, err := hivetest.Run(b, d.Dir, "version", "--json")
	if err != nil {
		b.Fatal(out, err)
	}
	var v struct {
		Holder *struct {
			KeepsJobs bool `json:"keeps_jobs"`
		} `json:"holder"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		b.Fatalf("hive version --json: %s: %v", out, err)
	}
	return v.Holder != nil && v.Holder.KeepsJobs
}
