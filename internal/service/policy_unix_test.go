//go:build !windows

package service

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/errdefs"
)

// A line typed into a PTY session is checked before it is written; the
// operator's (the dashboard's) is not. The session runs cat, which only
// echoes what it is sent.
func TestPolicyChecksPTYInput(t *testing.T) {
	ctx := context.Background()
	s := withPolicy(t, "git push --force")
	withPTY(t, s)
	if _, err := s.OpenPTY(PTYOpen{Cmd: "git push -f"}); !errors.Is(err, errdefs.ErrPolicy) {
		t.Errorf("OpenPTY of a denied command: %v, want a policy refusal", err)
	}
	v, err := s.OpenPTY(PTYOpen{Cmd: "cat", Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.SendPTY(ctx, PTYSend{Session: v.ID, Input: "git push -f\n"})
	if !errors.Is(err, errdefs.ErrPolicy) || !strings.Contains(err.Error(), "git push -f") {
		t.Errorf("SendPTY of a denied line: %v, want a policy refusal naming it", err)
	}
	out, err := s.SendPTY(ctx, PTYSend{Session: v.ID, Input: "fine\n", WaitFor: regexp.MustCompile(`fine\s+fine`)})
	if err != nil || !out.Matched {
		t.Fatalf("SendPTY of an allowed line: %+v %v", out, err)
	}
	out, err = s.SendPTY(ctx, PTYSend{Session: v.ID, Input: "git push -f\n", Operator: true,
		WaitFor: regexp.MustCompile(`git push -f\s+git push -f`)})
	if err != nil || !out.Matched {
		t.Errorf("the operator's input: %+v %v, want it written (and echoed)", out, err)
	}
	r, err := s.ReadPTY(v.ID, 0, false, 1<<16)
	if err != nil || strings.Count(r.Data, "git push -f") != 2 || strings.Index(r.Data, "git push") < strings.Index(r.Data, "fine") {
		t.Errorf("the session's output %q, %v: want the operator's line (echoed) after fine, and not the refused one", r.Data, err)
	}
}
