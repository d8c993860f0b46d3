package dashboard

import (
	"github.com/hivetools/hive/internal/view"
	"os"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/proc"
)

// Sample is one measure of the daemon's own use: CPU (the share of one
// core over the time since the previous sample, from the Go runtime's
// estimate) and RSS (from /proc on Linux; elsewhere the memory the Go
// runtime holds).
type Sample struct {
	At  time.Time `json:"at"`
	CPU float64   `json:"cpu"`
	RSS int64     `json:"rss_bytes"`
}

// Usage sampling: every sampleEvery while the watcher runs, the latest
// keepSamples kept (ten minutes).
const (
	sampleEvery = 5 * time.Second
	keepSamples = 120
)

// sampler keeps the latest samples. Safe for concurrent use.
type sampler struct {
	mu      sync.Mutex
	samples []Sample
	lastCPU float64
	lastAt  time.Time
}

var cpuMetrics = []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/memory/classes/total:bytes"}}

// processStart is about when the process started: the first sample's
// interval begins there.
var processStart = time.Now()

// sample takes a sample (the first measures the time since the process
// started); ok is false when no time has passed.
func (s *sampler) sample() (smp Sample, ok bool) {
	m := make([]metrics.Sample, len(cpuMetrics))
	copy(m, cpuMetrics)
	metrics.Read(m)
	var busy float64
	if m[0].Value.Kind() == metrics.KindFloat64 && m[1].Value.Kind() == metrics.KindFloat64 {
		busy = m[0].Value.Float64() - m[1].Value.Float64()
	}
	var rss int64
	if u, ok := proc.ReadUsage(os.Getpid()); ok {
		rss = u.RSS
	} else if m[2].Value.Kind() == metrics.KindUint64 {
		rss = int64(m[2].Value.Uint64())
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.lastCPU, s.lastAt = busy, now }()
	if s.lastAt.IsZero() {
		s.lastAt = processStart
	}
	dt := now.Sub(s.lastAt).Seconds()
	if dt <= 0 {
		return Sample{}, false
	}
	cpu := max(0, (busy-s.lastCPU)/dt)
	smp = Sample{At: view.Time(now), CPU: cpu, RSS: rss}
	s.samples = append(s.samples, smp)
	if len(s.samples) > keepSamples {
		s.samples = append(s.samples[:0], s.samples[len(s.samples)-keepSamples:]...)
	}
	return smp, true
}

func (s *sampler) list() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample{}, s.samples...)
}
