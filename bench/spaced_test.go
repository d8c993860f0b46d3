package bench

import (
	"os"
	"testing"
	"time"
)

// BenchmarkSpacedExec measures terminal_exec("true") as an agent makes
// it: after a pause (the model thinking), not back to back. Per
// iteration: a pause, terminal_exec on hive and on the floor (bench/floor,
// SQLite) by raw clients, each after a pause of its own, then a pause
// and a spawn of `true` from this process. The pause (HIVE_BENCH_PAUSE,
// default 20ms) lets every process of each side go idle, as between an
// agent's calls; on a VM each hop to an idle process pays a vCPU's
// wake-up. Medians, as VsBase reports them.
//
// Metrics: hive-p50-us, floor-p50-us, spawn-p50-us and the ratios
// hive/spawn, floor/spawn, hive/floor (the medians of the iterations'
// own ratios).
func BenchmarkSpacedExec(b *testing.B) {
	pause := 20 * time.Millisecond
	if v := os.Getenv("HIVE_BENCH_PAUSE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("HIVE_BENCH_PAUSE %q: %v", v, err)
		}
		pause = d
	}
	d := startDaemon(b)
	sides := []*rawSession{connectRaw(b, d), startFloor(b, "sqlite")}
	const exec1 = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	for k := range sides { // warm up
		timedTrue(b, sides[k], k, exec1, false, false)
	}
	timedSpawn(b, "true")
	var hive, floor, spawn, hs, fs, hf []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var t [2]time.Duration
		for j := range sides {
			k := (i + j) % len(sides)
			time.Sleep(pause)
			t[k] = timedTrue(b, sides[k], k, exec1, false, false)
		}
		time.Sleep(pause)
		s := timedSpawn(b, "true")
		hive, floor, spawn = append(hive, us(t[0])), append(floor, us(t[1])), append(spawn, us(s))
		hs, fs, hf = append(hs, float64(t[0])/float64(s)), append(fs, float64(t[1])/float64(s)), append(hf, float64(t[0])/float64(t[1]))
	}
	b.StopTimer()
	b.ReportMetric(medianOf(hive), "hive-p50-us")
	b.ReportMetric(medianOf(floor), "floor-p50-us")
	b.ReportMetric(medianOf(spawn), "spawn-p50-us")
	b.ReportMetric(medianOf(hs), "hive/spawn")
	b.ReportMetric(medianOf(fs), "floor/spawn")
	b.ReportMetric(medianOf(hf), "hive/floor")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
