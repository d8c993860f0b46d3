package holder

import (
	"strconv"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/jsonenc"
)

// keptEndLine is the kept_end line that tells the holder how job e ended
// (wire.Request{Op: OpKeptEnd, ID: e.ID, End: &e, NoReply: true}), byte for
// byte as json.Marshal encodes it, without the newline. It is written
// between a kept job's end and the daemon's answer for it, where
// encoding/json walked the request through reflection (a job end with its
// counts and usage inside); this takes 0.28 of that time
// (BenchmarkKeptEndLine). TestKeptEndLineAgrees
// and FuzzKeptEndLine keep the two the same; ok is false where this does
// not encode it (an end time json.Marshal refuses): the caller marshals.
func keptEndLine(e *wire.JobEnd) (line []byte, ok bool) {
	b := make([]byte, 0, 320+len(e.Error))
	b = append(b, `{"op":"kept_end"`...)
	if e.ID != "" {
		b = append(b, `,"id":`...)
		b = jsonenc.AppendString(b, e.ID)
	}
	b = append(b, `,"no_reply":true,"end":`...)
	if b, ok = appendJobEnd(b, e); !ok {
		return nil, false
	}
	return append(b, '}'), true
}

// keepEndedLine is the keep line of a job that ended before it was kept
// (protocol 6: wire.Request{Op: OpKeep, Keep: k, End: e, NoReply: true}),
// byte for byte as json.Marshal encodes it, for a keep keepLine encodes
// (ok false otherwise: the caller marshals). TestKeepEndedLineAgrees.
func keepEndedLine(k *wire.Kept, e *wire.JobEnd) (line []byte, ok bool) {
	b, ok := keepLine(k)
	if !ok {
		return nil, false
	}
	b = append(b[:len(b)-1], `,"end":`...) // the request's closing brace
	if b, ok = appendJobEnd(b, e); !ok {
		return nil, false
	}
	return append(b, '}'), true
}

// appendJobEnd appends e as json.Marshal encodes it; ok is false for an
// end time it refuses.
func appendJobEnd(b []byte, e *wire.JobEnd) (_ []byte, ok bool) {
	ended, err := e.Ended.MarshalJSON()
	if err != nil {
		return nil, false
	}
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, e.ID)
	if e.Exited {
		b = append(b, `,"exited":true`...)
	}
	b = append(b, `,"exit_code":`...)
	b = strconv.AppendInt(b, int64(e.ExitCode), 10)
	if e.Signal != nil {
		b = append(b, `,"signal":`...)
		b = strconv.AppendInt(b, int64(*e.Signal), 10)
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonenc.AppendString(b, e.Error)
	}
	if e.Leftover != 0 {
		b = append(b, `,"leftover":`...)
		b = strconv.AppendInt(b, int64(e.Leftover), 10)
	}
	if e.Stopped {
		b = append(b, `,"stopped":true`...)
	}
	b = append(b, `,"ended":`...)
	b = append(b, ended...)
	b = append(b, `,"stdout":`...)
	b = appendCounts(b, e.Stdout)
	b = append(b, `,"stderr":`...)
	b = appendCounts(b, e.Stderr)
	if u := e.Usage; u != nil {
		b = append(b, `,"usage":`...)
		b = u.AppendJSON(b)
	}
	if e.LimitHit != "" {
		b = append(b, `,"limit_hit":`...)
		b = jsonenc.AppendString(b, e.LimitHit)
	}
	return append(b, '}'), true
}

func appendCounts(b []byte, c wire.Counts) []byte {
	b = append(b, `{"total":`...)
	b = strconv.AppendInt(b, c.Total, 10)
	b = append(b, `,"in_file":`...)
	b = strconv.AppendInt(b, c.InFile, 10)
	if c.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, c.Dropped, 10)
	}
	return append(b, '}')
}
