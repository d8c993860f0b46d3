package cli

import (
	"context"
	"flag"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// The help of every command, as -h prints it, is the one source of hive's
// completion scripts and man page: each command is run with -h (which
// starts nothing, see Run) while newFlags records the flag sets it makes.

var capture struct {
	mu   sync.Mutex
	on   bool
	sets []*flag.FlagSet
}

// captureFlags records a flag set made while a help is being collected.
func captureFlags(name string, fs *flag.FlagSet) {
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if capture.on {
		capture.sets = append(capture.sets, fs)
	}
}

// cmdHelp is one command's (or subcommand's) help.
type cmdHelp struct {
	name  string   // "ps", "todo upsert"
	usage []string // its usage lines, without "hive "
	about string   // what it does (from the usage line)
	text  string   // its -h output
	flags []*flag.Flag
	subs  []string // subcommand words ("upsert", "clear")
}

var collectMu sync.Mutex

// collectHelp runs every registered command and subcommand with -h and
// returns their help, in registration order.
func collectHelp() []cmdHelp {
	collectMu.Lock()
	defer collectMu.Unlock()
	var out []cmdHelp
	run := func(c command, name string, args []string) cmdHelp {
		var b strings.Builder
		capture.mu.Lock()
		capture.on, capture.sets = true, nil
		capture.mu.Unlock()
		c.run(context.Background(), Env{Stdin: strings.NewReader(""), Stdout: &b, Stderr: io.Discard}, args)
		capture.mu.Lock()
		sets := capture.sets
		capture.on, capture.sets = false, nil
		capture.mu.Unlock()
		h := cmdHelp{name: name, text: b.String()}
		line := c.usage
		if u, ok := subUsages[name]; ok {
			line = u
		}
		for _, l := range strings.Split(line, "\n") {
			l = strings.TrimPrefix(strings.TrimSpace(l), "hive ")
			h.usage = append(h.usage, l)
		}
		h.about = about(h.usage[0])
		if len(sets) > 0 {
			sets[len(sets)-1].VisitAll(func(f *flag.Flag) { h.flags = append(h.flags, f) })
		}
		return h
	}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		h := run(c, c.name, []string{"-h"})
		var subs []string
		for name := range subUsages {
			if w, ok := strings.CutPrefix(name, c.name+" "); ok {
				subs = append(subs, w)
			}
		}
		sort.Strings(subs)
		h.subs = subs
		out = append(out, h)
		for _, w := range subs {
			out = append(out, run(c, c.name+" "+w, []string{w, "-h"}))
		}
	}
	return out
}

var aboutRE = regexp.MustCompile(`\S\s{2,}(\S.*)$`)

// about is the description at the end of a usage line (after two or more
// spaces), or "".
func about(usage string) string {
	if m := aboutRE.FindStringSubmatch(usage); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}
