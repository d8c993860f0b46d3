package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/config"
	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/policy"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/swarm"
)

func init() {
	register(command{name: "daemon", usage: "daemon [--config F] [--http 127.0.0.1:PORT] [--http-token-file F | --http-no-auth] [--http-max-conns N] [--http-max-sessions N] [--http-session-idle D] [--http-read-timeout D] [--http-write-timeout D] [--max-running N] [--grace D] [--file-cap BYTES] [--retain D] [--handle-ttl D] [--handle-cap BYTES] [--log-max BYTES] [--max-line-bytes N] [--name NAME] [--remind-max N] [--policy-deny RULE]... [--policy-warn RULE]... [--policy-refuse-unknown=false] [--nats URL --swarm NAME [--hive NAME] [--nats-creds F | --nats-token-file F] [--nats-tls-ca F]]", run: runDaemon})
}

// daemonOpts are the daemon's settings, as its flags (and hive.toml) set them.
type daemonOpts struct {
	httpAddr, token, name                  *string
	noAuth                                 *bool
	maxConns, maxSessions, maxRunning      *int
	remindMax, maxLine                     *int
	sessionIdle, readTimeout, writeTimeout *time.Duration
	grace, retain, handleTTL               *time.Duration
	fileCap, handleCap, logMax             *int64
	dir, config                            *string
	holdJobs                               *bool
	policyDeny, policyWarn                 config.List
	refuseUnknown                          *bool
	nats                                   natsFlags
	hive                                   *string
	limits                                 limits.Policy
	fs                                     *flagSet
	sources                                map[string]config.Source
	configFile                             string   // the file read, "" if none
	skip                                   []string // flags of the command, not the daemon's (config's --json)
}

// notInConfig are the daemon flags hive.toml cannot set.
var notInConfig = []string{"state-dir", "config"}

// daemonFlags makes the flag set of `hive daemon` (and of `hive config`,
// which shows what a daemon would use) under the command name.
func daemonFlags(name string, e Env) *daemonOpts {
	fs, dir := newFlags(name, e)
	o := &daemonOpts{fs: fs, dir: dir}
	o.config = fs.String("config", "", "settings file (default <state>/hive.toml, read if present): keys are these flags' names with _ for -; flags override it")
	o.httpAddr = fs.String("http", "", "serve streamable HTTP MCP at /mcp on this address (loopback unless --http-token-file is given)")
	o.token = fs.String("http-token-file", "", "file of the bearer token HTTP requires (mode 0600; re-read when it changes); default: <state>/http-token, generated")
	o.noAuth = fs.Bool("http-no-auth", false, "serve HTTP without a bearer token (loopback --http only)")
	o.maxConns = fs.Int("http-max-conns", daemon.DefaultHTTPMaxConns, "HTTP connections served at once; more wait in the kernel's backlog")
	o.maxSessions = fs.Int("http-max-sessions", daemon.DefaultHTTPMaxSessions, "live HTTP MCP sessions; a new one past it gets 503")
	o.sessionIdle = fs.Duration("http-session-idle", daemon.DefaultHTTPSessionIdle, "an HTTP MCP session with no request for this long is closed")
	o.readTimeout = fs.Duration("http-read-timeout", daemon.DefaultHTTPReadTimeout, "time an HTTP request body may take to arrive (then 408)")
	o.writeTimeout = fs.Duration("http-write-timeout", daemon.DefaultHTTPWriteTimeout, "time one write to an HTTP client may take (a client that stops reading loses its stream)")
	o.maxRunning = fs.Int("max-running", 64, "jobs running at once; the rest wait pending")
	o.grace = fs.Duration("grace", 10*time.Second, "time between SIGINT and SIGKILL when a job is stopped")
	o.fileCap = fs.Int64("file-cap", 1<<30, "cap of each job output file in bytes (past it bytes are counted as dropped)")
	o.retain = fs.Duration("retain", 7*24*time.Hour, "how long ended jobs (records and output files) are kept; 0 keeps them forever")
	o.handleTTL = fs.Duration("handle-ttl", 5*time.Minute, "how long a terminal_exec output handle lives after its last use")
	o.handleCap = fs.Int64("handle-cap", 64<<20, "bytes all output handles together may refer to (least recently used go first)")
	o.name = fs.String("name", "", "the agent's name, as get_agent_meta tells it (default: the state dir's base name)")
	o.remindMax = fs.Int("remind-max", envInt(remindMaxEnv, envInt("HIVE_REMIND_MAX_PENDING", inbox.DefaultRemindMax)),
		"pending reminders at most (env "+remindMaxEnv+", else HIVE_REMIND_MAX_PENDING; the first wins if both are set)")
	o.maxLine = fs.Int("max-line-bytes", daemon.DefaultMaxLine, "longest JSON-RPC line an MCP session on the socket or stdio may send (longer ones are answered with an error and skipped)")
	o.holdJobs = fs.Bool("hold-jobs", runtime.GOOS == "linux", "run jobs in the holder of the jobs (hive holder), so that they keep running when the daemon ends (a crash, hive restart, a new build): the next daemon adopts them")
	o.logMax = fs.Int64("log-max", 16<<20, "size in bytes at which daemon.log (when it is this daemon's stderr) moves to daemon.log.1; 0 never")
	o.policyDeny.Check, o.policyWarn.Check = checkRule, checkRule
	fs.Var(&o.policyDeny, "policy-deny", "refuse the commands this rule matches (docs/policy.md): 'git push --force', 'rm -r -f /', 'curl | sh'; repeatable ([policy] deny = [...] in hive.toml)")
	fs.Var(&o.policyWarn, "policy-warn", "warn of the commands this rule matches; repeatable ([policy] warn = [...])")
	o.refuseUnknown = fs.Bool("policy-refuse-unknown", true, "refuse a command part of which cannot be known before it runs ($(...) as its program, eval \"$x\") when a deny rule could match it")
	o.nats = addNATSFlags(fs.FlagSet)
	o.hive = fs.String("hive", "", "the name this host goes by in the swarm (default: the host name)")
	limitFlags(fs, &o.limits)
	return o
}

// checkRule checks a --policy-deny or --policy-warn rule.
func checkRule(s string) error {
	_, err := policy.ParseRule(s)
	return err
}

// policy is the command policy the settings make.
func (o *daemonOpts) policy() (*policy.Policy, error) {
	p, err := policy.New(policy.Options{Deny: o.policyDeny.Values, Warn: o.policyWarn.Values, AllowUnknown: !*o.refuseUnknown})
	if err != nil {
		return nil, fmt.Errorf("%w: %v%s", ErrUsage, err, o.from("policy-deny", "policy-warn"))
	}
	return p, nil
}

// load reads the settings file (--config, else <state>/hive.toml if
// present) into the flags not given on the command line, and checks
// every setting. An error names the flag, and the file and line when the
// value came from there.
func (o *daemonOpts) load(l paths.Layout) error {
	path, optional := *o.config, false
	if path == "" {
		path, optional = l.Config(), true
		if err := l.Check(); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			path = "" // no state dir yet: no file in it
		}
	} else if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	var entries []config.Entry
	if path != "" {
		var err error
		if entries, err = config.Read(path, optional); err != nil {
			return err
		}
		if entries != nil || !optional {
			o.configFile = path
		}
	}
	src, err := config.Apply(o.fs.FlagSet, entries, path, append(o.skip, notInConfig...)...)
	if err != nil {
		return err
	}
	o.sources = src
	return o.check()
}

// from says where a flag's bad value came from, for its error: "" for the
// command line or a default, " (set by /s/hive.toml:3: grace)" for the
// file.
func (o *daemonOpts) from(flags ...string) string {
	for _, f := range flags {
		if s := o.sources[f]; s.From == "file" {
			return fmt.Sprintf(" (set by %s:%d: %s)", s.File, s.Line, strings.ReplaceAll(f, "-", "_"))
		}
	}
	return ""
}

// check checks the settings.
func (o *daemonOpts) check() error {
	bad := func(format string, flags []string, a ...any) error {
		return fmt.Errorf("%w: "+format+"%s", append(append([]any{ErrUsage}, a...), o.from(flags...))...)
	}
	one := func(f string) []string { return []string{f} }
	if *o.maxRunning < 1 {
		return bad("--max-running %d: must be >= 1", one("max-running"), *o.maxRunning)
	}
	if *o.grace <= 0 {
		return bad("--grace %v: must be > 0", one("grace"), *o.grace)
	}
	if *o.handleTTL <= 0 || *o.handleCap <= 0 {
		return bad("--handle-ttl and --handle-cap must be > 0", []string{"handle-ttl", "handle-cap"})
	}
	if *o.fileCap <= 0 {
		return bad("--file-cap %d: must be > 0", one("file-cap"), *o.fileCap)
	}
	if *o.remindMax < 1 {
		return bad("--remind-max %d: must be >= 1", one("remind-max"), *o.remindMax)
	}
	if *o.name != "" && !validName(*o.name) {
		return bad("--name %q: must be 1-128 characters of letters, digits, . _ -", one("name"), *o.name)
	}
	if *o.maxLine < 1024 {
		return bad("--max-line-bytes %d: must be >= 1024", one("max-line-bytes"), *o.maxLine)
	}
	if *o.noAuth && *o.token != "" {
		return bad("--http-no-auth and --http-token-file: give one or the other", []string{"http-no-auth", "http-token-file"})
	}
	if *o.maxConns < 1 || *o.maxSessions < 1 {
		return bad("--http-max-conns %d, --http-max-sessions %d: must be >= 1", []string{"http-max-conns", "http-max-sessions"}, *o.maxConns, *o.maxSessions)
	}
	for _, v := range []struct {
		flag string
		d    time.Duration
	}{{"http-session-idle", *o.sessionIdle}, {"http-read-timeout", *o.readTimeout}, {"http-write-timeout", *o.writeTimeout}} {
		if v.d <= 0 {
			return bad("--%s %v: must be > 0", one(v.flag), v.flag, v.d)
		}
	}
	if *o.logMax < 0 {
		return bad("--log-max %d: must be >= 0", one("log-max"), *o.logMax)
	}
	if _, err := o.policy(); err != nil {
		return err
	}
	if o.nats.on() {
		if err := o.nats.conn().Check(); err != nil {
			return bad("%v", []string{"nats", "swarm", "nats-creds", "nats-token-file"}, err)
		}
		if *o.name != "" {
			if err := swarm.CheckAgent(*o.name); err != nil {
				return bad("%v", one("name"), err)
			}
		}
	}
	return o.checkLimits()
}

// settings lists every setting the file may hold, with its value and
// where it came from.
func (o *daemonOpts) settings() []proto.Setting {
	var out []proto.Setting
	o.fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(notInConfig, f.Name) || slices.Contains(o.skip, f.Name) {
			return
		}
		s := o.sources[f.Name]
		if s.From == "" {
			s.From = "default"
		}
		out = append(out, proto.Setting{Name: f.Name, Value: f.Value.String(), Source: s.From, File: s.File, Line: s.Line})
	})
	return out
}

// checkDaemonArgs checks the settings a daemon started with args (as a
// daemon tells them: "daemon", then its flags) in the directory cwd would
// run with, reading hive.toml now, with the code runDaemon uses: an error
// is what that daemon would refuse to start with, naming the flag, and
// the file, line and key when the file set it.
func checkDaemonArgs(args []string, cwd string) error {
	if len(args) == 0 || args[0] != "daemon" {
		return fmt.Errorf("the daemon's arguments %q: want daemon and its flags", args)
	}
	o := daemonFlags("daemon", Env{Stdout: io.Discard, Stderr: io.Discard})
	if err := parse(o.fs, args[1:]); err != nil {
		return err
	}
	if *o.config != "" && !filepath.IsAbs(*o.config) && cwd != "" {
		*o.config = filepath.Join(cwd, *o.config)
	}
	l, err := layout(*o.dir)
	if err != nil {
		return err
	}
	return o.load(l)
}

func runDaemon(ctx context.Context, e Env, args []string) error {
	o := daemonFlags("daemon", e)
	if err := parse(o.fs, args); err != nil {
		return err
	}
	if o.fs.NArg() > 0 {
		return fmt.Errorf("%w: hive daemon takes no arguments, got %q", ErrUsage, o.fs.Args())
	}
	slackTimers(e, "daemon")
	l, err := layout(*o.dir)
	if err != nil {
		return err
	}
	if err := o.load(l); err != nil {
		return err
	}
	tuneGC(daemonGC)
	tuneProcs() // as the holder's: a search takes them all while it runs
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logOut := e.Stderr
	if f, ok := e.Stderr.(*os.File); ok && *o.logMax > 0 {
		if r := newRotatingLog(l.Log(), *o.logMax, f, os.Stdout, os.Stderr); r != nil {
			logOut = r
		}
	}
	log, closeLog := newAsyncLog(logOut, nil)
	defer closeLog()
	b := build.Read(Version).WithFile(build.SelfExe())
	if exe, _ := os.Executable(); build.Temporary(exe) {
		log.Info("running from a temporary build (go run): the daemon keeps running after the go command deletes it; a changed build replaces it when idle", "exe", exe)
	}
	var holder []string
	if *o.holdJobs {
		holder = []string{e.Exe, "holder", "--state-dir", l.Dir}
	}
	pol, err := o.policy()
	if err != nil {
		return err
	}
	supervisor := os.Getenv(envSupervisor)
	os.Unsetenv(envSupervisor)
	return daemon.Run(ctx, daemon.Config{
		StateDir: l.Dir, HTTPAddr: *o.httpAddr, TokenFile: *o.token, HTTPNoAuth: *o.noAuth,
		HTTPMaxConns: *o.maxConns, HTTPMaxSessions: *o.maxSessions, HTTPSessionIdle: *o.sessionIdle,
		HTTPReadTimeout: *o.readTimeout, HTTPWriteTimeout: *o.writeTimeout, MaxRunning: *o.maxRunning,
		Grace: *o.grace, FileCap: *o.fileCap, Version: Version, Logger: log,
		HandleTTL: *o.handleTTL, HandleCap: *o.handleCap, Retain: retainArg(*o.retain), MaxLine: *o.maxLine,
		Name: *o.name, RemindMax: *o.remindMax, Subreaper: true,
		Build: b, Args: append([]string{"daemon", "--state-dir", l.Dir}, args...), Settings: o.settings(),
		Supervisor: supervisor, Holder: holder, Policy: pol, Swarm: o.swarmOptions(),
		Limits: o.limits,
	})
}

// envSupervisor is set by the systemd unit hive service install writes:
// the daemon then tells `hive restart` to go through systemctl.
const envSupervisor = "HIVE_SUPERVISOR"

// daemonGC and holderGC are the GOGC of each. The holder's live heap is
// next to nothing (a few KiB a job it keeps): at the daemon's 400 its
// heap grew to the runtime's least goal for it, 16 MiB, between two
// collections, most of it garbage, and its resident set swung by as
// much (BenchmarkKeptRSS sampled it 10 MiB apart); at 100 the goal is
// 4 MiB, and a collection of a heap that holds nothing costs under 1 ms
// of CPU (GODEBUG=gctrace=1: 0.7 ms), every ~650 jobs.
const (
	daemonGC = 400
	holderGC = 100
)

// tuneGC makes the daemon's collector less eager unless the user set
// GOGC or GOMEMLIMIT: its live heap is small (job records, sessions) plus
// the output rings, and a collection every few hundred KiB of garbage
// showed up as latency on every tool call. The soft limit keeps a daemon
// with many busy jobs collecting as usual. The holder takes holderGC.
func tuneGC(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}

// retainArg maps the --retain flag (0 = forever) onto Config.Retain
// (negative = forever).
func retainArg(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// envInt reads an integer default from the environment (def when unset
// or not a number).
// remindMaxEnv is the seed's name of --remind-max's variable. The
// shorter HIVE_REMIND_MAX_PENDING is read too; where both are set, this
// one wins (the seed's deployments set it).
const remindMaxEnv = "HIVE_REMIND_MAX_PENDING_PER_AGENT"

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

// validName reports whether name may name an agent: a directory's base
// name of letters, digits, . _ -.
func validName(name string) bool {
	if name == "." || name == ".." || len(name) > 128 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return name != ""
}

// swarmOptions are the daemon's swarm settings; nil without --nats and
// --swarm.
func (o *daemonOpts) swarmOptions() *swarm.Options {
	if !o.nats.on() {
		return nil
	}
	return &swarm.Options{Conn: o.nats.conn(), Hive: *o.hive}
}
