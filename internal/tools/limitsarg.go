package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	Usage            usageOut        `json:"usage,omitzero"`
}

// usageOut is a job's usage as an answer tells it: whenever it is known
// (an ended job's, even all 0: a short job's CPU time rounds to 0 ms and
// its memory peak may not be known, see job.rusageOf), not only when
// some of it is not 0. The fields are limits.Usage's (embedded), so the
// answer and its schema are as they were.
type usageOut struct {
	limits.Usage
	known bool
}

// IsZero is what omitzero asks: an unknown usage is left out.
func (u usageOut) IsZero() bool { return !u.known }

func limitsOutOf(v view.Job) limitsOut {
	o := limitsOut{LimitHit: v.LimitHit, LimitsEnforcedBy: v.LimitsEnforcedBy}
	if v.Usage != nil {
		o.Usage = usageOut{Usage: *v.Usage, known: true}
	}
	return o
}

// text is o as a text answer tells it (the text form carries no
// structuredContent): a line on how each limit is enforced and what the
// job used, "" when there is neither. The limit hit is the answer's
// meaning already.
func (o limitsOut) text() string {
	var parts []string
	if len(o.LimitsEnforcedBy) > 0 {
		var by []string
		for _, f := range slices.Sorted(maps.Keys(o.LimitsEnforcedBy)) {
			by = append(by, f+" by "+o.LimitsEnforcedBy[f])
		}
		parts = append(parts, "limits: "+strings.Join(by, ", "))
	}
	if u := o.Usage; u.known {
		s := fmt.Sprintf("usage: cpu %d ms user, %d ms system", u.CPUUserMS, u.CPUSystemMS)
		for _, v := range []struct {
			what string
			n    int64
		}{{"memory peak", u.MemoryPeakBytes}, {"memory now", u.MemoryBytes}} {
			if v.n > 0 {
				s += fmt.Sprintf(", %s %.1f MiB", v.what, float64(v.n)/(1<<20))
			}
		}
		for _, v := range []struct {
			what string
			n    int64
		}{{"oom kills", u.OOMKills}, {"forks refused", u.PidsRefused}, {"cpu throttled periods", u.Throttled}} {
			if v.n > 0 {
				s += fmt.Sprintf(", %s %d", v.what, v.n)
			}
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return "\n" + strings.Join(parts, "; ")
}
