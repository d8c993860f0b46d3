package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hivetools/hive/internal/config"
	"github.com/hivetools/hive/internal/swarm"
	"github.com/hivetools/hive/internal/termsafe"
)

const (
	swarmLsUsage     = "swarm ls [--format table|json] [--nats URL --swarm NAME ...]   list the swarm's agents (settings default to hive.toml's)"
	swarmEventsUsage = "swarm events [-f] [--agent A] [--format table|json] [--nats URL --swarm NAME ...]   the swarm's notices, oldest first"
)

func init() {
	register(command{name: "swarm", usage: swarmLsUsage + "\n  hive " + swarmEventsUsage, run: runSwarm})
	registerSub("swarm ls", swarmLsUsage)
	registerSub("swarm events", swarmEventsUsage)
}

func runSwarm(ctx context.Context, e Env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "ls":
			return runSwarmLs(ctx, e, args[1:])
		case "events":
			return runSwarmEvents(ctx, e, args[1:])
		}
	}
	fs, _ := newFlags("swarm", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: hive swarm ls|events (hive swarm -h)", ErrUsage)
	}
	return fmt.Errorf("%w: hive swarm %q: want ls or events", ErrUsage, args[0])
}

// swarmDial parses the NATS flags of flags (the state dir's hive.toml gives
// those not on the command line) and connects.
func swarmDial(flags *flagSet, dir *string, n natsFlags) (*swarm.Client, error) {
	l, err := layout(*dir)
	if err != nil {
		return nil, err
	}
	if err := l.Check(); err == nil {
		entries, err := config.Read(l.Config(), true)
		if err != nil {
			return nil, err
		}
		var ours []config.Entry
		for _, e := range entries {
			if name := strings.ReplaceAll(e.Key, "_", "-"); slices.Contains(natsFlagNames, name) {
				ours = append(ours, e)
			}
		}
		if _, err := config.Apply(flags.FlagSet, ours, l.Config()); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if !n.on() {
		return nil, fmt.Errorf("%w: --nats and --swarm: which swarm? (give them, or set nats and swarm in %s)", ErrUsage, l.Config())
	}
	if err := n.conn().Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return swarm.Dial(n.conn())
}

// swarmCmd is what hive swarm ls and hive swarm events share: the state
// dir's flag, the NATS flags (hive.toml gives those not on the command
// line), --format, and no arguments.
type swarmCmd struct {
	name string
	fs   *flagSet
	dir  *string
	nats natsFlags
	out  *output
}

// newSwarmCmd makes the shared flags of hive NAME; the command adds its
// own to fs before dial.
func newSwarmCmd(name string, e Env) *swarmCmd {
	fs, dir := newFlags(name, e)
	return &swarmCmd{name: name, fs: fs, dir: dir, nats: addNATSFlags(fs.FlagSet), out: outputFlags(fs, false)}
}

// dial parses and checks args and connects to the swarm's server. The
// caller closes the client.
func (c *swarmCmd) dial(args []string) (*swarm.Client, error) {
	if err := parse(c.fs, args); err != nil {
		return nil, err
	}
	if err := c.out.check(); err != nil {
		return nil, err
	}
	if c.fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: hive %s takes no arguments", ErrUsage, c.name)
	}
	return swarmDial(c.fs, c.dir, c.nats)
}

func runSwarmLs(ctx context.Context, e Env, args []string) error {
	sc := newSwarmCmd("swarm ls", e)
	c, err := sc.dial(args)
	if err != nil {
		return err
	}
	defer c.Close()
	n, out := sc.nats, sc.out
	agents, err := c.Agents(ctx)
	if err != nil {
		return err
	}
	if out.json {
		return jsonOut(e, map[string]any{"swarm": *n.swarm, "agents": agents})
	}
	if len(agents) == 0 {
		fmt.Fprintf(e.Stdout, "no agents in swarm %s\n", termsafe.Line(*n.swarm))
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHIVE\tTURN\tJOBS\tLOOSE ENDS\tHEARTBEAT\tSTATUS")
	now := time.Now()
	for _, a := range agents {
		le := "-"
		if a.LooseEnds != nil {
			le = fmt.Sprintf("%d/%d/%d", a.LooseEnds.Todos, a.LooseEnds.Reminders, a.LooseEnds.Inbox)
		}
		turn := a.Turn
		if turn == "" {
			turn = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", termsafe.Line(a.Name), termsafe.Line(a.Hive), termsafe.Line(turn),
			a.JobsRunning, le, humanTime(a.Heartbeat, now), clipLine(a.StatusText, 80))
	}
	return tw.Flush()
}

func runSwarmEvents(ctx context.Context, e Env, args []string) error {
	sc := newSwarmCmd("swarm events", e)
	follow := sc.fs.Bool("f", false, "follow: wait for new notices until interrupted")
	agent := sc.fs.String("agent", "", "only this agent's notices")
	c, err := sc.dial(args)
	if err != nil {
		return err
	}
	defer c.Close()
	out := sc.out
	if *follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
	}
	return c.Notices(ctx, *agent, *follow, func(nt swarm.Notice) error {
		if out.json {
			return jsonOut(e, nt)
		}
		_, err := fmt.Fprintln(e.Stdout, noticeLine(nt))
		return err
	})
}

// noticeLine is a notice on one line: when, who, what.
func noticeLine(n swarm.Notice) string {
	var what string
	switch {
	case n.Job != nil:
		what = n.Job.ID
		if n.Job.Name != "" {
			what += " (" + n.Job.Name + ")"
		}
		what += " " + n.Job.State
		if n.Job.ExitCode != nil {
			what += fmt.Sprintf(", exit %d", *n.Job.ExitCode)
		}
		if n.Job.SemanticStatus != "" {
			what += " (" + n.Job.SemanticStatus + ")"
		}
		what += ": " + n.Job.Cmd
	case n.Status != nil:
		what = *n.Status
		if what == "" {
			what = "(cleared)"
		}
	case n.Turn != "":
		what = n.Turn
	case n.Version != "":
		what = "hive " + n.Version
	}
	s := fmt.Sprintf("%s  %s  %s  %s", n.At.Local().Format("2006-01-02 15:04:05"), termsafe.Line(n.Agent), n.Kind, clipLine(what, 160))
	if n.Dropped > 0 {
		s += fmt.Sprintf("  (%d notice(s) before this one dropped)", n.Dropped)
	}
	return s
}

// natsFlagNames are the flags swarmDial takes from hive.toml.
var natsFlagNames = []string{"nats", "swarm", "nats-creds", "nats-token-file", "nats-tls-ca"}
