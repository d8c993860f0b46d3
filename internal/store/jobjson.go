package store

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hivetools/hive/internal/jsonenc"
)

// AppendJSON appends j's JSON, byte for byte json.Marshal's and the
// pinned form (TestJobJSON, TestJobAppendJSON, FuzzJobJSON), without
// reflection: a kept job's record is encoded on a start's path
// (wire.Kept.Record), an ended one's on its answer's (the journal). ok
// is false, and b as given, for a time json.Marshal refuses, or a cpus
// limit it would write in exponent form (or refuse): json.Marshal
// encodes those.
func (j *Job) AppendJSON(b []byte) (out []byte, ok bool) {
	if c := math.Abs(j.Limits.CPUs); c != 0 && !(c >= 1e-6 && c < 1e21) { // NaN and ±Inf too
		return b, false
	}
	var times [3][]byte
	for i, t := range [3]time.Time{j.Created, j.Started, j.Ended} {
		if t.IsZero() {
			continue
		}
		tb, err := t.MarshalJSON()
		if err != nil {
			return b, false
		}
		times[i] = tb
	}
	out = append(b, '{')
	str := func(name, v string) {
		if v != "" {
			out = appendName(out, name)
			out = jsonenc.AppendString(out, v)
		}
	}
	num := func(name string, v int64) {
		if v != 0 {
			out = appendName(out, name)
			out = strconv.AppendInt(out, v, 10)
		}
	}
	flag := func(name string, v bool) {
		if v {
			out = appendName(out, name)
			out = append(out, "true"...)
		}
	}
	str("id", j.ID)
	str("name", j.Name)
	str("cmd", j.Cmd)
	if len(j.Argv) > 0 {
		out = appendName(out, "argv")
		for i, a := range j.Argv {
			if i == 0 {
				out = append(out, '[')
			} else {
				out = append(out, ',')
			}
			out = jsonenc.AppendString(out, a)
		}
		out = append(out, ']')
	}
	str("shell_kind", j.ShellKind)
	str("cwd", j.Cwd)
	str("source", j.Source)
	str("state", j.State)
	if j.ExitCode != nil {
		out = appendName(out, "exit_code")
		out = strconv.AppendInt(out, int64(*j.ExitCode), 10)
	}
	if j.Signal != nil {
		out = appendName(out, "signal")
		out = strconv.AppendInt(out, int64(*j.Signal), 10)
	}
	str("error", j.Error)
	num("timeout", int64(j.Timeout))
	for i, name := range [3]string{"created", "started", "ended"} {
		if times[i] != nil {
			out = appendName(out, name)
			out = append(out, times[i]...)
		}
	}
	num("pid", int64(j.Pid))
	if j.PidStart != 0 {
		out = appendName(out, "pid_start")
		out = strconv.AppendUint(out, j.PidStart, 10)
	}
	str("boot_id", j.BootID)
	str("stdout_path", j.StdoutPath)
	str("stderr_path", j.StderrPath)
	num("stdout_bytes", j.StdoutBytes)
	num("stderr_bytes", j.StderrBytes)
	num("stdout_dropped", j.StdoutDropped)
	num("stderr_dropped", j.StderrDropped)
	num("leftover", int64(j.Leftover))
	flag("quiet", j.Quiet)
	flag("kill_on_timeout", j.KillOnTimeout)
	if l := j.Limits; !l.IsZero() {
		out = appendName(out, "limits")
		out = append(out, '{')
		num("memory_mb", l.MemoryMB)
		num("pids", l.Pids)
		if l.CPUs != 0 {
			out = appendName(out, "cpus")
			out = strconv.AppendFloat(out, l.CPUs, 'f', -1, 64) // json.Marshal's form in this range
		}
		num("nofile", l.Nofile)
		out = append(out, '}')
	}
	if len(j.LimitsBy) > 0 {
		out = appendName(out, "limits_by")
		out = append(out, '{')
		for _, k := range slices.Sorted(maps.Keys(j.LimitsBy)) {
			if out[len(out)-1] != '{' {
				out = append(out, ',')
			}
			out = jsonenc.AppendString(out, k)
			out = append(out, ':')
			out = jsonenc.AppendString(out, j.LimitsBy[k])
		}
		out = append(out, '}')
	}
	if j.Usage != nil {
		out = appendName(out, "usage")
		out = j.Usage.AppendJSON(out)
	}
	str("limit_hit", j.LimitHit)
	return append(out, '}'), true
}

// appendName appends a member's name and colon, after a comma unless
// it is the object's first.
func appendName(b []byte, name string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}
