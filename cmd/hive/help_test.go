package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// -h, --help and `help CMD` print the command's usage on stdout and exit
// 0 without starting anything: no daemon, not even a state dir.
func TestHelpStartsNothing(t *testing.T) {
	parent := t.TempDir()
	state := filepath.Join(parent, "never-created")
	cmds := []string{"daemon", "mcp", "ps", "run", "logs", "kill", "wait", "rm", "inspect", "version", "wake", "todo", "inbox", "turn", "loop",
		"todo upsert", "todo clear", "todo ls", "inbox ls", "inbox next", "inbox ack",
		"stop", "restart", "config", "service", "service install", "service uninstall", "service status", "completion", "man", "dashboard", "holder",
		"hub", "swarm", "swarm ls", "swarm events"}
	// Every command the general help lists is in the table above.
	general, err := hivetest.Command(t, state, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^  hive ([a-z]+)`).FindAllStringSubmatch(string(general), -1) {
		if !slices.Contains(cmds, m[1]) {
			t.Errorf("hive --help lists %q, which this test does not try", m[1])
		}
	}
	for _, cmd := range cmds {
		words := strings.Fields(cmd)
		variants := [][]string{append(words, "-h"), append(words, "--help"), append(words, "-help")}
		if len(words) == 1 {
			variants = append(variants, []string{"help", cmd})
		}
		for _, args := range variants {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				c := hivetest.Command(t, state, args...)
				var out, errb strings.Builder
				c.Stdout, c.Stderr = &out, &errb
				if err := c.Run(); err != nil {
					t.Fatalf("exit: %v; stderr: %s", err, errb.String())
				}
				if !strings.HasPrefix(out.String(), "Usage: hive "+cmd) {
					t.Errorf("stdout %q: want the usage of %s", out.String(), cmd)
				}
				if _, err := os.Stat(state); err == nil {
					t.Fatalf("%v created the state dir: something was started", args)
				}
			})
		}
	}
	// "--" ends the flags: a -h after it is an argument, not a request for help.
	c := hivetest.Command(t, state, "kill", "--", "-h")
	out, err := c.CombinedOutput()
	if err == nil || strings.Contains(string(out), "Usage:") || !strings.Contains(string(out), "no hive daemon") {
		t.Errorf("kill -- -h: %v %s", err, out)
	}
}
