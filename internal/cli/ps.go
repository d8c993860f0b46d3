package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
	"github.com/hivetools/hive/internal/view"
)

const psUsage = "ps [-a] [-n N] [-q] [--format table|json] [--filter state=S] [--filter status=ok|error] [--filter name=N]   list jobs (-a: also ended ones; -n: the N newest; status=error: every job that did not succeed)"

func init() {
	register(command{name: "ps", usage: psUsage, run: runPs})
}

// multiFlag is a flag that may be given several times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runPs(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("ps", e)
	var all bool
	fs.BoolVar(&all, "a", false, "all jobs: ended ones too")
	fs.BoolVar(&all, "all", false, "same as -a")
	var last int
	fs.IntVar(&last, "n", 0, "only the N newest jobs, ended ones too (0: all); the table says how many more there are")
	fs.IntVar(&last, "last", 0, "same as -n")
	out := outputFlags(fs, true)
	var filters multiFlag
	fs.Var(&filters, "filter", "state=S (pending, running, done, timed_out, killed, interrupted, failed; repeat for any of several), status=ok|error (what an ended job's end means; error: every job that did not succeed) or name=N")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if err := out.check(); err != nil {
		return err
	}
	if last < 0 {
		return fmt.Errorf("%w: -n %d: must be >= 0 (0: all)", ErrUsage, last)
	}
	req := proto.Request{Cmd: proto.CmdPs, All: all || last > 0, Last: last} // -n lists ended jobs too, as docker's
	for _, f := range filters {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok || v == "":
			return fmt.Errorf("%w: --filter %q: must be KEY=VALUE (state=running, name=build)", ErrUsage, f)
		case k == "status" && (v == "ok" || v == "error"):
			if req.Status != "" && req.Status != v {
				return fmt.Errorf("%w: --filter status=: ok or error, not both", ErrUsage)
			}
			req.Status = v
			req.All = true // only ended jobs have one
		case k == "state" || k == "status":
			req.States = append(req.States, v)
			req.All = true // a filter on ended states looks among ended jobs
		case k == "name":
			if req.Name != "" && req.Name != v {
				return fmt.Errorf("%w: --filter name=: one name at a time", ErrUsage)
			}
			req.Name = v
		default:
			return fmt.Errorf("%w: --filter %q: unknown key %q (want state, status or name)", ErrUsage, f, k)
		}
	}
	if req.Name != "" && len(req.States) == 0 && !all {
		req.States = []string{"pending", "running"}
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	resp, err := client.Call(l, req)
	if err != nil {
		return err
	}
	switch {
	case out.quiet:
		for _, j := range resp.Jobs {
			fmt.Fprintln(e.Stdout, j.ID)
		}
		return nil
	case out.json:
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(resp.Jobs)
	}
	if err := psTable(e.Stdout, resp.Jobs, time.Now()); err != nil {
		return err
	}
	if more := resp.Total - len(resp.Jobs); more > 0 {
		// On stderr: the table stays what a pipe counts or cuts.
		fmt.Fprintf(e.Stderr, "%d older job(s) not shown (-n %d); without -n, ps lists them all\n", more, last)
	}
	return nil
}

func psTable(w io.Writer, jobs []view.Job, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tEXIT\tCREATED\tDURATION\tMEM\tCPU\tCMD")
	for _, j := range jobs {
		exit := "-"
		if j.ExitCode != nil {
			exit = fmt.Sprint(*j.ExitCode)
		}
		name := termsafe.Line(j.Name)
		if name == "" {
			name = "-"
		}
		cmd := clipLine(strings.Join(strings.Fields(j.Cmd), " "), 60)
		dur := "-"
		if !j.Started.IsZero() {
			dur = humanDuration(time.Duration(j.DurationMs) * time.Millisecond)
		}
		// Padded to the longest: the columns stay put whatever the ages.
		created := fmt.Sprintf("%-*s", len(lessThanASecond), ago(j.Created, now))
		mem, cpu := usageColumns(j)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, name, j.State, exit, created, dur, mem, cpu, cmd)
	}
	return tw.Flush()
}

// lessThanASecond is the longest text ago returns.
const lessThanASecond = "Less than a second ago"

// ago is how long before now t was, as docker ps says it: "Less than a
// second ago", "1 second ago", "About a minute ago", "5 minutes ago",
// "About an hour ago", "3 hours ago" (up to two days), then days, weeks
// (from two weeks), months (from two months) and years (from two years).
// A zero t is "-"; a t after now (another clock) is less than a second.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	n := func(k int, unit string) string {
		if k == 1 {
			return "1 " + unit + " ago"
		}
		return fmt.Sprintf("%d %ss ago", k, unit)
	}
	const day = 24 * time.Hour
	switch {
	case d < time.Second:
		return lessThanASecond
	case d < time.Minute:
		return n(int(d/time.Second), "second")
	case d < 2*time.Minute:
		return "About a minute ago"
	case d < time.Hour:
		return n(int(d/time.Minute), "minute")
	case d < 2*time.Hour:
		return "About an hour ago"
	case d < 2*day:
		return n(int(d/time.Hour), "hour")
	case d < 14*day:
		return n(int(d/day), "day")
	case d < 60*day:
		return n(int(d/(7*day)), "week")
	case d < 730*day:
		return n(int(d/(30*day)), "month")
	}
	return n(int(d/(365*day)), "year")
}

// usageColumns are ps's MEM and CPU of a job: its memory peak (a running
// job's memory now) and its processor time, user and system; "-" when
// not known.
func usageColumns(j view.Job) (mem, cpu string) {
	u := j.Usage
	if u == nil {
		return "-", "-"
	}
	mem = "-"
	if b := u.MemoryPeakBytes; b > 0 || u.MemoryBytes > 0 {
		if j.State == "running" && u.MemoryBytes > 0 {
			b = u.MemoryBytes
		}
		mem = humanBytes(b)
	}
	return mem, humanDuration(time.Duration(u.CPUUserMS+u.CPUSystemMS) * time.Millisecond)
}

// humanBytes is n in the largest binary unit it fills: 512B, 4.0KiB, 23MiB, 1.5GiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
}

// humanTime is a time of today as 15:04:05, an older one with its date
// (jobs are kept for days).
func humanTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.Local()
	if now.Sub(t) < 24*time.Hour && t.YearDay() == now.Local().YearDay() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// humanDuration is d in at most two units: 850ms, 4.2s, 3m12s, 2h05m, 3d4h.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// jobExitCode is the status a job ended with, as a shell reports it: its
// exit code, 128+n for a signal n, 127 for a job that could not start,
// 1 for one that ended without a status (cancelled before it started,
// interrupted with its process gone).
func jobExitCode(j view.Job) int {
	switch {
	case j.ExitCode != nil && *j.ExitCode >= 0:
		return *j.ExitCode
	case j.Signal != nil:
		return 128 + *j.Signal
	case j.State == "failed":
		return 127
	}
	return 1
}
