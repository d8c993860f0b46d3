package service

import (
	"os"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/shell"
)

// The command policy (internal/policy): every command that enters, by
// any surface (run, terminal_exec, terminal_job_start, hive run, the
// dashboard's Run again, terminal_pty_open's cmd), is checked before
// anything is spawned, and each input sent to a PTY session before it is
// written. A refusal is an error of class errdefs.ErrPolicy whose text
// has the word "policy", the rule and the part of the command that
// matched; it is logged, and one that does not come from a tool call
// (whose envelope records it) is added to the activity feed.

// checkJob checks a job's command under the policy and returns its
// warning (Service.Warning) with checked true, or, with no rules, none
// and false.
func (s *Service) checkJob(spec JobSpec) (warning string, checked bool, err error) {
	if s.Policy.Empty() {
		return "", false, nil
	}
	dir := spec.Dir
	if dir == "" {
		dir, _ = os.Getwd() // the daemon's, where the job runs
	}
	cmd := spec.Cmd
	d := s.Policy.Check(cmd, dir)
	if cmd == "" {
		cmd = strings.Join(spec.Argv, " ")
		d = s.Policy.CheckArgv(spec.Argv, dir)
	}
	if err := d.Err(); err != nil {
		s.refused(spec.Source, cmd, d.Rule, d.Part, err)
		return "", true, err
	}
	return d.Warning, true, nil
}

// checkInput checks what is typed into a PTY session: best effort, the
// program reading it may be anything.
func (s *Service) checkInput(session, input string) error {
	if s.Policy.Empty() {
		return nil
	}
	d := s.Policy.CheckInput(input, "") // the shell's directory is its own
	if err := d.Err(); err != nil {
		s.refused("pty "+session, input, d.Rule, d.Part, err)
		return err
	}
	return nil
}

// refused logs a refusal and, for a source that is no tool call, adds it
// to the activity feed.
func (s *Service) refused(source, cmd, rule, part string, err error) {
	s.Logger.Warn("policy refused a command", "source", source, "rule", rule, "part", Clip(part, 200), "cmd", Clip(cmd, 200))
	switch source {
	case "run", "terminal":
	default:
		if strings.HasPrefix(source, "pty ") {
			return
		}
		s.Activity.Add(Call{At: time.Now(), Session: source, Tool: "run (" + source + ")", Outcome: "tool error: " + err.Error()})
	}
}

// Warning is the warning of cmd, run in dir: the built-in destructive
// warnings (shell.Warning) and the policy's warn rules that match, joined
// by "; ", or "".
func (s *Service) Warning(cmd, dir string) string {
	if s.Policy.Empty() {
		return shell.Warning(cmd)
	}
	return s.Policy.Check(cmd, dir).Warning
}
