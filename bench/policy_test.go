package bench

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/policy"
	"github.com/hivetools/hive/internal/policy/policytest"
)

// policyRules are the deny rules of BenchmarkPolicyExec's policy daemon:
// the corpus's and a few more, as an operator might list them.
var policyRules = append([]string{"rm -r -f /", "git push origin +*", "git reset --hard", "dd of=/dev/*", "mkfs*"},
	policytest.Rules...)

// policyCommands are typical agent command lines, for the in-process
// cost of a check.
var policyCommands = []string{
	"true",
	"go test ./internal/job/ -run TestStart -count=1",
	"cd /src/app && git status --short && git diff --stat",
	"grep -rn 'func main' --include=*.go . | head -20",
	`bash -c 'for f in *.go; do gofmt -l "$f"; done'`,
}

// BenchmarkPolicyExec measures what the command policy adds to
// terminal_exec("true"): two daemons, one with no policy and one with
// policyRules (deny) and two warn rules, each called in turn through a
// raw JSON-RPC client in one run, so that both see the same machine.
// It also times the check itself in this process (policy.Check of
// policyCommands, one per iteration, round robin).
//
// Metrics: plain-ns/op and policy-ns/op (the two round trips),
// delta-pct = (policy − plain) / plain × 100 (noisy: two daemons on
// shared cores), check-ns/op (the check alone) and check-pct = check /
// plain × 100. Target: the check adds under 5% (check-pct < 5).
func BenchmarkPolicyExec(b *testing.B) {
	args := []string{"--policy-warn", "make deploy*", "--policy-warn", "git push"}
	for _, r := range policyRules {
		args = append(args, "--policy-deny", r)
	}
	plain := connectRaw(b, startDaemon(b))
	guarded := connectRaw(b, startDaemonArgs(b, nil, args))
	p, err := policy.New(policy.Options{Deny: policyRules, Warn: []string{"make deploy*", "git push"}})
	if err != nil {
		b.Fatal(err)
	}
	const params = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	call := func(s *rawSession) time.Duration {
		t0 := time.Now()
		out, err := s.call("tools/call", params)
		d := time.Since(t0)
		var r struct {
			IsError bool `json:"isError"`
		}
		if err != nil || json.Unmarshal(out, &r) != nil || r.IsError {
			b.Fatalf("terminal_exec: %v %s", err, out)
		}
		return d
	}
	call(plain)
	call(guarded)
	var plainD, policyD, checkD time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 { // alternate which goes first
			plainD += call(plain)
			policyD += call(guarded)
		} else {
			policyD += call(guarded)
			plainD += call(plain)
		}
		cmd := policyCommands[i%len(policyCommands)]
		t0 := time.Now()
		d := p.Check(cmd, "/src/app")
		checkD += time.Since(t0)
		if d.Refused {
			b.Fatalf("Check(%q) refused it: %v", cmd, d.Err())
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(plainD), "plain-ns/op")
	b.ReportMetric(per(policyD), "policy-ns/op")
	b.ReportMetric((per(policyD)-per(plainD))/per(plainD)*100, "delta-pct")
	b.ReportMetric(per(checkD), "check-ns/op")
	b.ReportMetric(per(checkD)/per(plainD)*100, "check-pct")
}

// BenchmarkPolicyCheck is the check alone, per typical command (and the
// corpus's denied ones), in this process.
func BenchmarkPolicyCheck(b *testing.B) {
	p, err := policy.New(policy.Options{Deny: policyRules, Warn: []string{"make deploy*", "git push"}})
	if err != nil {
		b.Fatal(err)
	}
	cmds := append(append([]string{}, policyCommands...), "denied: "+strings.Join(policytest.Denied[:5], "; "))
	for i, cmd := range cmds {
		b.Run(strconv.Itoa(i), func(b *testing.B) {
			cmd := strings.TrimPrefix(cmd, "denied: ")
			for b.Loop() {
				p.Check(cmd, "/src/app")
			}
		})
	}
}
