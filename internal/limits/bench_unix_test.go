//go:build linux || darwin

package limits

import (
	"os/exec"
	"testing"
)

// BenchmarkStart is what rlimits add to a job's start: /bin/true run
// as it is, and through Wrap (a start of this binary, which sets them
// and execs it).
func BenchmarkStart(b *testing.B) {
	for _, c := range []struct {
		name string
		r    Rlimits
	}{{"plain", Rlimits{}}, {"rlimits", Rlimits{Nofile: 256, AS: 1 << 30}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				Wrap(cmd, c.r)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
