package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/policy"
)

// withPolicy is newService with deny rules and an activity feed.
func withPolicy(t *testing.T, deny ...string) *Service {
	t.Helper()
	s := newService(t)
	p, err := policy.New(policy.Options{Deny: deny, Warn: []string{"echo warned"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Policy, s.Activity = p, &Activity{}
	return s
}

// Every way a job starts is checked before anything is spawned. SAFETY:
// the refused commands touch only a canary in the test's temp dir.
func TestPolicyRefusesJobs(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	canary := filepath.Join(tmp, "canary")
	if err := os.MkdirAll(canary, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(canary, "alive"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := withPolicy(t, "rm -r -f */canary", "git push --force")
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, errdefs.ErrPolicy) || !strings.Contains(err.Error(), "policy") || !strings.Contains(err.Error(), "rm -r -f */canary") {
			t.Errorf("%s: %v, want a policy refusal naming the rule", what, err)
		}
	}
	_, err := s.StartJob(JobSpec{Cmd: "cd " + tmp + " && rm -rf canary", Source: "terminal"})
	refused("StartJob", err)
	_, err = s.RunJob(JobSpec{Cmd: "rm -fr " + canary, Source: "cli"})
	refused("RunJob from the CLI", err)
	_, err = s.RunJob(JobSpec{Argv: []string{"/bin/rm", "-r", "-f", canary}, Dir: tmp, Source: "run"})
	refused("RunJob of an argv", err)
	jobs, err := s.ListJobs(ctx, 0, "")
	if err != nil || len(jobs) != 0 {
		t.Errorf("jobs after refusals: %v %v, want none", jobs, err)
	}
	if _, err := os.Stat(filepath.Join(canary, "alive")); err != nil {
		t.Fatalf("the canary is gone: %v", err)
	}
	calls, _ := s.Activity.Since(0)
	if len(calls) != 1 || calls[0].Session != "cli" || !strings.Contains(calls[0].Outcome, "policy") {
		t.Errorf("activity: %+v, want the CLI's refusal (a tool call's is the envelope's)", calls)
	}

	// Run again checks the command anew: a rule added since refuses it.
	v, err := s.RunJob(JobSpec{Cmd: "true", Dir: tmp, Source: "run"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := policy.New(policy.Options{Deny: []string{"true"}}); err == nil {
		s.Policy = p
	}
	if _, err := s.RerunJob(ctx, v.ID, "dashboard"); !errors.Is(err, errdefs.ErrPolicy) {
		t.Errorf("RerunJob under a rule that denies it: %v, want a policy refusal", err)
	}
}

func TestPolicyWarning(t *testing.T) {
	s := withPolicy(t, "git push --force")
	if w := s.Warning("echo warned && rm -rf x", "/"); w != `may force-remove files recursively (rm -rf); matches warn rule "echo warned" (echo warned)` {
		t.Errorf("Warning = %q", w)
	}
	s.Policy = nil
	if w := s.Warning("echo warned && rm -rf x", "/"); w != "may force-remove files recursively (rm -rf)" {
		t.Errorf("Warning without a policy = %q", w)
	}
}
