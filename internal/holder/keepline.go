package holder

import (
	"strconv"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/jsonenc"
)

// keepLine is the keep line that gives the holder a job the daemon
// started (wire.Request{Op: OpKeep, Keep: k, NoReply: true}), byte for
// byte as json.Marshal encodes it, without the newline, for a keep as
// the daemon sends it: a spec of no command, environment, directory,
// stdin or limits, a start of no limits, and a record (k.Record) that is
// compact and HTML-escaped already, as json.Marshal and store.Job's
// AppendJSON write it (it is copied as it is). ok is false for any other
// keep, or a start time json.Marshal refuses: the caller marshals.
//
// It is encoded after the fork, before the daemon waits for the child:
// on a machine of few processors the child often runs to its end first,
// and what the daemon does between the fork and the wait is then on the
// call's path (TestKeepLineAgrees, FuzzKeepLine; BenchmarkKeepLine).
func keepLine(k *wire.Kept) (line []byte, ok bool) {
	s, st := &k.Spec, &k.Start
	if s.Path != "" || s.Argv != nil || s.Env != nil || s.EnvRef != "" || s.EnvBase != 0 || s.Dir != "" ||
		s.Stdin != nil || s.Limits != nil || len(st.LimitsBy) > 0 {
		return nil, false
	}
	started, err := st.Started.MarshalJSON()
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, 384+len(k.Record)+len(s.Stdout)+len(s.Stderr)+len(s.Index))
	b = append(b, `{"op":"keep","no_reply":true,"keep":{"spec":{"id":`...)
	b = jsonenc.AppendString(b, s.ID)
	b = append(b, `,"path":"","argv":null,"env":null,"stdout":`...)
	b = jsonenc.AppendString(b, s.Stdout)
	b = append(b, `,"stderr":`...)
	b = jsonenc.AppendString(b, s.Stderr)
	if s.Index != "" {
		b = append(b, `,"index":`...)
		b = jsonenc.AppendString(b, s.Index)
	}
	if s.FileCap != 0 {
		b = append(b, `,"file_cap":`...)
		b = strconv.AppendInt(b, s.FileCap, 10)
	}
	if s.Owner != "" {
		b = append(b, `,"owner":`...)
		b = jsonenc.AppendString(b, s.Owner)
	}
	b = appendDuration(b, `,"leftover_grace":`, s.LeftoverGrace)
	b = appendDuration(b, `,"timeout":`, s.Timeout)
	b = append(b, `},"start":{"pid":`...)
	b = strconv.AppendInt(b, int64(st.Pid), 10)
	if st.PidStart != 0 {
		b = append(b, `,"pid_start":`...)
		b = strconv.AppendUint(b, st.PidStart, 10)
	}
	b = append(b, `,"started":`...)
	b = append(b, started...)
	if st.Cgroup != "" {
		b = append(b, `,"cgroup":`...)
		b = jsonenc.AppendString(b, st.Cgroup)
	}
	b = append(b, '}')
	if len(k.Record) > 0 {
		b = append(b, `,"record":`...)
		b = append(b, k.Record...)
	}
	return append(b, `}}`...), true
}

// appendDuration appends member (with its comma and colon) and d, unless
// d is zero.
func appendDuration(b []byte, member string, d time.Duration) []byte {
	if d == 0 {
		return b
	}
	b = append(b, member...)
	return strconv.AppendInt(b, int64(d), 10)
}
