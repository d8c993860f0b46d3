package search

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkGrep searches the Go source tree ($GOROOT/src) with both
// engines. literal and regex use the default MaxResults (truncated, as an
// agent's searches usually are); the -all variants read every match, so
// they measure a full scan.
func BenchmarkGrep(b *testing.B) {
	src := filepath.Join(runtime.GOROOT(), "src")
	patterns := []struct {
		name string
		o    Options
	}{
		{"literal", Options{Pattern: "func main", FixedStrings: true}},
		{"regex", Options{Pattern: `func \w+Handler\(`}},
		{"literal-all", Options{Pattern: "func main", FixedStrings: true, MaxResults: 1 << 20}},
		{"regex-all", Options{Pattern: `func \w+Handler\(`, MaxResults: 1 << 20}},
		{"ignorecase-all", Options{Pattern: "handler", IgnoreCase: true, MaxResults: 1 << 20}},
	}
	rg, rgErr := exec.LookPath("rg")
	engines := []struct {
		name string
		grep func(context.Context, Options) (Result, error)
	}{
		{"builtin", GrepBuiltin},
		{"rg", func(ctx context.Context, o Options) (Result, error) { return GrepRG(ctx, rg, o) }},
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			if e.name == "rg" && rgErr != nil {
				b.Skip("rg is not installed")
			}
			for _, p := range patterns {
				b.Run(p.name, func(b *testing.B) {
					o := p.o
					o.Dir = src
					var n int
					for b.Loop() {
						r, err := e.grep(context.Background(), o)
						if err != nil {
							b.Fatal(err)
						}
						n = r.Count
					}
					b.ReportMetric(float64(n), "matches")
				})
			}
		})
	}
}

// BenchmarkGlob lists the Go files of $GOROOT/src.
func BenchmarkGlob(b *testing.B) {
	src := filepath.Join(runtime.GOROOT(), "src")
	for b.Loop() {
		if _, err := Glob(context.Background(), GlobOptions{Pattern: "**/*.go", Dir: src}); err != nil {
			b.Fatal(err)
		}
	}
}
