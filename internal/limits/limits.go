// Package limits is a job's resource limits: what a request asks
// (memory, processes, CPUs, open files), the operator's defaults and
// ceilings that bound it, and how each one is enforced (a cgroup v2
// file, a cgroup v1 one, or an rlimit set in the job's process before
// it runs the command: see Wrap).
package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hivetools/hive/internal/errdefs"
)

// Limits are a job's resource limits. A zero field is no limit. The JSON
// names are the tools' (`limits: {"memory_mb": 512}`) and hive.toml's
// ([limits] memory_mb = 512).
type Limits struct {
	// MemoryMB is the memory of the job's processes together, in MiB
	// (cgroup memory.max, no swap); with rlimits, the address space of
	// each process (RLIMIT_AS and RLIMIT_DATA).
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// Pids is how many processes and threads the job may have at once
	// (cgroup pids.max); with rlimits, RLIMIT_NPROC, which counts every
	// process of the job's user and does not bind root.
	Pids int64 `json:"pids,omitempty"`
	// CPUs is the processor time per wall second (cgroup cpu.max: 0.5 is
	// half a core); with rlimits, the CPU seconds of the whole run
	// (RLIMIT_CPU = CPUs × the job's timeout; none without a timeout).
	CPUs float64 `json:"cpus,omitempty"`
	// Nofile is the open files of each process (RLIMIT_NOFILE, always).
	Nofile int64 `json:"nofile,omitempty"`
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// The fields' names, as errors, limits_enforced_by and limit_hit name them.
const (
	Memory = "memory_mb"
	Pids   = "pids"
	CPUs   = "cpus"
	Nofile = "nofile"
)

// How a limit is enforced (the values of Enforced).
const (
	// ByCgroup: a file of the job's cgroup v2.
	ByCgroup = "cgroup"
	// ByCgroupV1: a file of a cgroup v1 of the job's own, where the
	// cgroup v2 hierarchy does not have the controller (a hybrid
	// mount: v1 and v2 side by side).
	ByCgroupV1 = "cgroup-v1"
	ByRlimit   = "rlimit"
	// ByNone: asked but not enforced (cpus with rlimits and no timeout).
	ByNone = "none"
)

// Enforced says how each limit a job has is enforced, by field name
// (Memory...): ByCgroup, ByCgroupV1, ByRlimit or ByNone. Nil for a job
// without limits.
type Enforced map[string]string

// minCPUs is the least cpus: cpu.max takes a quota of 1 ms at least, a
// hundredth of its period.
const minCPUs = 0.01

// Check checks each field's range; the error names the field (of
// errdefs.ErrInvalid).
func (l Limits) Check() error {
	bad := func(field string, v any, rule string) error {
		return errdefs.Newf(errdefs.ErrInvalid, "limits.%s %v: %s", field, v, rule)
	}
	switch {
	case l.MemoryMB < 0:
		return bad(Memory, l.MemoryMB, "must be >= 1 (MiB), or 0 for no limit")
	case l.Pids < 0:
		return bad(Pids, l.Pids, "must be >= 1, or 0 for no limit")
	case l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) || (l.CPUs > 0 && l.CPUs < minCPUs):
		return bad(CPUs, l.CPUs, "must be >= 0.01 (a hundredth of a core), or 0 for no limit")
	case l.Nofile < 0 || (l.Nofile > 0 && l.Nofile < 8):
		return bad(Nofile, l.Nofile, "must be >= 8 (stdin, stdout, stderr and a few), or 0 for no limit")
	case l.MemoryMB > 1<<40:
		return bad(Memory, l.MemoryMB, "too large")
	}
	return nil
}

// Policy is the operator's: the limits a job gets when its request sets
// none (Default), and the most a request may ask (Max). A zero field of
// Default is no default; a zero field of Max is no ceiling.
type Policy struct {
	Default, Max Limits
}

// Check checks the policy: each value's range, and each default within
// its ceiling. The error names the setting (limits.max_memory_mb).
func (p Policy) Check() error {
	if err := p.Default.Check(); err != nil {
		return err
	}
	if err := p.Max.Check(); err != nil {
		return fmt.Errorf("ceiling: %w", err)
	}
	for _, f := range fields(&p.Default, &p.Max) {
		if *f.max > 0 && *f.req > *f.max {
			return errdefs.Newf(errdefs.ErrInvalid, "limits.%s %v: above limits.max_%s %v", f.name, *f.req, f.name, *f.max)
		}
	}
	return nil
}

// Resolve is the limits a job with request req gets: each field req
// sets, else the default, else the ceiling (a job never runs above
// it). A request above a ceiling is refused with an error (of
// errdefs.ErrInvalid) naming the field and the ceiling: a request may
// lower a default, never raise it past the ceiling.
func (p Policy) Resolve(req Limits) (Limits, error) {
	if err := req.Check(); err != nil {
		return Limits{}, err
	}
	out := req
	for _, f := range fields(&out, &p.Max) {
		if *f.max > 0 && *f.req > *f.max {
			return Limits{}, errdefs.Newf(errdefs.ErrInvalid, "limits.%s %v: above the operator's ceiling (limits.max_%s = %v in hive.toml)", f.name, *f.req, f.name, *f.max)
		}
	}
	d := p.Default
	if out.MemoryMB == 0 {
		out.MemoryMB = firstSet(d.MemoryMB, p.Max.MemoryMB)
	}
	if out.Pids == 0 {
		out.Pids = firstSet(d.Pids, p.Max.Pids)
	}
	if out.Nofile == 0 {
		out.Nofile = firstSet(d.Nofile, p.Max.Nofile)
	}
	if out.CPUs == 0 {
		out.CPUs = d.CPUs
		if out.CPUs == 0 {
			out.CPUs = p.Max.CPUs
		}
	}
	return out, nil
}

func firstSet(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// field is one limit of two Limits, for the checks of each.
type field struct {
	name     string
	req, max *float64
}

// fields pairs the fields of a and b, as float64 copies' pointers: only
// for comparisons.
func fields(a, b *Limits) []field {
	f := func(x int64) *float64 { v := float64(x); return &v }
	return []field{
		{Memory, f(a.MemoryMB), f(b.MemoryMB)},
		{Pids, f(a.Pids), f(b.Pids)},
		{CPUs, &a.CPUs, &b.CPUs},
		{Nofile, f(a.Nofile), f(b.Nofile)},
	}
}

// ParseMemory reads a memory size as `hive run --memory` takes it: a
// number of bytes with a unit, binary (KiB, MiB, GiB, TiB) or decimal
// (K, M, G, T, KB, MB, GB, TB: taken as the binary ones, as ulimit and
// docker do), or a bare number of MiB. The result is in MiB, rounded
// up.
func ParseMemory(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("memory %q: want a size such as 512MiB or 2GiB", s)
	}
	shift, ok := map[string]uint{"": 20, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
		"g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}[unit]
	if !ok {
		return 0, fmt.Errorf("memory %q: unknown unit %q (KiB, MiB, GiB or TiB)", s, unit)
	}
	return int64(math.Ceil(v * float64(uint64(1)<<shift) / (1 << 20))), nil
}

// FormatMB is n MiB as a person reads it: "512 MiB", "2 GiB".
func FormatMB(n int64) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.FormatInt(n/1024, 10) + " GiB"
	}
	return strconv.FormatInt(n, 10) + " MiB"
}
