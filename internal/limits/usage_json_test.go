package limits

import (
	"encoding/json"
	"testing"
)

// Usage.AppendJSON is json.Marshal's encoding: each omitempty field left
// out when 0, written when not, negative values too (FuzzEnvelopeJSON in
// internal/tools and FuzzKeptEndLine in internal/holder fuzz it inside
// the values that embed it).
func TestUsageAppendJSON(t *testing.T) {
	for _, u := range []Usage{
		{},
		{CPUUserMS: 3, CPUSystemMS: 1},
		{MemoryPeakBytes: 1 << 40, CPUUserMS: -1, CPUSystemMS: 9, MemoryBytes: 7, OOMKills: 2, PidsRefused: 5, Throttled: 11},
		{MemoryBytes: 1},
		{OOMKills: -4, Throttled: 1},
	} {
		want, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("%+v: AppendJSON %s, json.Marshal %s", u, got, want)
		}
	}
}
