package limits

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
)

func TestResolve(t *testing.T) {
	p := Policy{Default: Limits{MemoryMB: 512, Nofile: 1024}, Max: Limits{MemoryMB: 1024, Pids: 256, CPUs: 2}}
	for _, c := range []struct {
		name    string
		req     Limits
		want    Limits
		wantErr string
	}{
		{"defaults and ceilings", Limits{}, Limits{MemoryMB: 512, Pids: 256, CPUs: 2, Nofile: 1024}, ""},
		{"lower", Limits{MemoryMB: 64, Pids: 10, CPUs: 0.5, Nofile: 64}, Limits{MemoryMB: 64, Pids: 10, CPUs: 0.5, Nofile: 64}, ""},
		{"up to the ceiling", Limits{MemoryMB: 1024}, Limits{MemoryMB: 1024, Pids: 256, CPUs: 2, Nofile: 1024}, ""},
		{"past the ceiling", Limits{MemoryMB: 2048}, Limits{}, "limits.memory_mb 2048: above the operator's ceiling (limits.max_memory_mb = 1024"},
		{"cpus past", Limits{CPUs: 2.5}, Limits{}, "limits.cpus 2.5: above the operator's ceiling (limits.max_cpus = 2"},
		{"negative", Limits{Pids: -1}, Limits{}, "limits.pids -1: must be >= 1"},
		{"tiny cpus", Limits{CPUs: 0.001}, Limits{}, "limits.cpus 0.001: must be >= 0.01"},
		{"few files", Limits{Nofile: 3}, Limits{}, "limits.nofile 3: must be >= 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Resolve(c.req)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Resolve(%+v) = %+v, %v; want the error %q", c.req, got, err, c.wantErr)
				}
				if !errors.Is(err, errdefs.ErrInvalid) {
					t.Errorf("error %v is not errdefs.ErrInvalid", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Resolve(%+v) = %+v, %v; want %+v", c.req, got, err, c.want)
			}
		})
	}
	if err := (Policy{Default: Limits{Pids: 512}, Max: Limits{Pids: 256}}).Check(); err == nil || !strings.Contains(err.Error(), "limits.pids 512: above limits.max_pids 256") {
		t.Errorf("a default above its ceiling: %v", err)
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512, "512": 512, "1GiB": 1024, "2G": 2048, "1.5GiB": 1536, "64M": 64,
		"100KiB": 1, "1048576B": 1, "1TiB": 1 << 20, " 16 MiB ": 16} {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "12 parsecs", "1e999"} {
		if got, err := ParseMemory(in); err == nil {
			t.Errorf("ParseMemory(%q) = %d; want an error", in, got)
		}
	}
}

func TestSplit(t *testing.T) {
	l := Limits{MemoryMB: 64, Pids: 32, CPUs: 0.5, Nofile: 100}
	r, by := Split(l, Enforced{Memory: ByCgroup, CPUs: ByCgroupV1}, 0)
	// RLIMIT_NPROC does not bind root: pids is then not enforced.
	nproc, pidsBy := uint64(32), ByRlimit
	if !nprocBinds() {
		nproc, pidsBy = 0, ByNone
	}
	if want := (Rlimits{Nproc: nproc, Nofile: 100}); r != want {
		t.Errorf("rlimits %+v, want %+v", r, want)
	}
	if by[Memory] != ByCgroup || by[Pids] != pidsBy || by[CPUs] != ByCgroupV1 || by[Nofile] != ByRlimit {
		t.Errorf("enforced by %v", by)
	}
	r, by = Split(l, nil, 10*time.Second)
	if want := (Rlimits{AS: 64 << 20, Nproc: nproc, CPU: 5, Nofile: 100}); r != want {
		t.Errorf("rlimits %+v, want %+v", r, want)
	}
	if _, by = Split(Limits{CPUs: 1}, nil, 0); by[CPUs] != ByNone {
		t.Errorf("cpus without cgroup nor timeout: %v, want none", by)
	}
	if r, by = Split(Limits{}, nil, time.Second); !r.IsZero() || by != nil {
		t.Errorf("no limits: %+v %v", r, by)
	}
}
