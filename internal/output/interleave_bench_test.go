package output

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkInterleaveWrite writes 4 KiB chunks to a job's two streams,
// each op one chunk, through an Interleave and, as the baseline in the
// same run, to the streams directly. The pattern alternates streams every
// `switch` chunks (1: every chunk, the worst case: a mark per chunk).
// Metrics: ratio (interleave time over direct), idx-B/MiB (index bytes per
// MiB of output).
func BenchmarkInterleaveWrite(b *testing.B) {
	for _, sw := range []struct {
		name  string
		every int
	}{{"switch=1", 1}, {"switch=64", 64}, {"one-stream", 0}} {
		b.Run(sw.name, func(b *testing.B) {
			chunk := bytes.Repeat([]byte("x"), 4<<10)
			dir := b.TempDir()
			mk := func(name string) (*Stream, *Stream) {
				o, _ := Create(filepath.Join(dir, name+".out"), nil)
				e, _ := Create(filepath.Join(dir, name+".err"), nil)
				return o, e
			}
			o1, e1 := mk("il")
			x, err := NewInterleave(filepath.Join(dir, "il.idx"), o1, e1, 0)
			if err != nil {
				b.Fatal(err)
			}
			o2, e2 := mk("direct")
			ws := [2]interface{ Write([]byte) (int, error) }{x.Writer(0), x.Writer(1)}
			ds := [2]*Stream{o2, e2}
			var tIL, tDirect time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := 0
				if sw.every > 0 {
					s = (i / sw.every) % 2
				}
				// Which goes first alternates: neither gets the warmer cache.
				if i%2 == 0 {
					t0 := time.Now()
					ws[s].Write(chunk)
					t1 := time.Now()
					ds[s].Write(chunk)
					tIL += t1.Sub(t0)
					tDirect += time.Since(t1)
				} else {
					t0 := time.Now()
					ds[s].Write(chunk)
					t1 := time.Now()
					ws[s].Write(chunk)
					tDirect += t1.Sub(t0)
					tIL += time.Since(t1)
				}
			}
			b.StopTimer()
			x.Close()
			for _, s := range []*Stream{o1, e1, o2, e2} {
				s.Close()
			}
			fi, _ := os.Stat(filepath.Join(dir, "il.idx"))
			var idx int64
			if fi != nil {
				idx = fi.Size()
			}
			b.ReportMetric(float64(tIL)/float64(tDirect), "ratio")
			b.ReportMetric(float64(idx)/(float64(b.N)*float64(len(chunk))/(1<<20)), "idx-B/MiB")
		})
	}
}
