package tools

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/view"
)

// limitsArg is the limits argument of the tools that start a job, and of
// terminal_pty_open ({"memory_mb", "pids", "cpus", "nofile"}): listed as
// a bare object (the instructions name the keys once; tools/list is paid
// for in every turn), and decoded strictly, so a misspelt key is refused,
// not dropped.
type limitsArg struct{ limits.Limits }

func (a *limitsArg) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*a = limitsArg{}
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var l limits.Limits
	if err := d.Decode(&l); err != nil {
		return fmt.Errorf("limits: %v (the keys are memory_mb, pids, cpus, nofile)", err)
	}
	*a = limitsArg{l}
	return nil
}

// of is the limits asked (none for a nil a).
func (a *limitsArg) of() limits.Limits {
	if a == nil {
		return limits.Limits{}
	}
	return a.Limits
}

// limitsOut is what an answer about a job tells of its limits and
// usage, named as in view.Job: how each limit is enforced, the one it
// hit (its semantic_message says how), what it used (so far, with its
// memory now, while it runs).
type limitsOut struct {
	LimitHit         string          `json:"limit_hit,omitempty"`
	LimitsEnforcedBy limits.Enforced `json:"limits_enforced_by,omitempty"`
	Usage            limits.Usage    `json:"usage,omitzero"`
}

func limitsOutOf(v view.Job) limitsOut {
	o := limitsOut{LimitHit: v.LimitHit, LimitsEnforcedBy: v.LimitsEnforcedBy}
	if v.Usage != nil {
		o.Usage = *v.Usage
	}
	return o
}
