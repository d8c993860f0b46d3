package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/inbox"
)

func init() {
	register(command{name: "daemon", usage: "daemon [--http 127.0.0.1:PORT] [--http-token-file F | --http-no-auth] [--http-max-conns N] [--http-max-sessions N] [--http-session-idle D] [--http-read-timeout D] [--http-write-timeout D] [--max-running N] [--grace D] [--file-cap BYTES] [--retain D] [--handle-ttl D] [--handle-cap BYTES] [--log-max BYTES] [--max-line-bytes N] [--name NAME] [--remind-max N]", run: runDaemon})
}

func runDaemon(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("daemon", e)
	httpAddr := fs.String("http", "", "serve streamable HTTP MCP at /mcp on this address (loopback unless --http-token-file is given)")
	token := fs.String("http-token-file", "", "file of the bearer token HTTP requires (mode 0600; re-read when it changes); default: <state>/http-token, generated")
	noAuth := fs.Bool("http-no-auth", false, "serve HTTP without a bearer token (loopback --http only)")
	maxConns := fs.Int("http-max-conns", daemon.DefaultHTTPMaxConns, "HTTP connections served at once; more wait in the kernel's backlog")
	maxSessions := fs.Int("http-max-sessions", daemon.DefaultHTTPMaxSessions, "live HTTP MCP sessions; a new one past it gets 503")
	sessionIdle := fs.Duration("http-session-idle", daemon.DefaultHTTPSessionIdle, "an HTTP MCP session with no request for this long is closed")
	readTimeout := fs.Duration("http-read-timeout", daemon.DefaultHTTPReadTimeout, "time an HTTP request body may take to arrive (then 408)")
	writeTimeout := fs.Duration("http-write-timeout", daemon.DefaultHTTPWriteTimeout, "time one write to an HTTP client may take (a client that stops reading loses its stream)")
	maxRunning := fs.Int("max-running", 64, "jobs running at once; the rest wait pending")
	grace := fs.Duration("grace", 10*time.Second, "time between SIGINT and SIGKILL when a job is stopped")
	fileCap := fs.Int64("file-cap", 1<<30, "cap of each job output file in bytes (past it bytes are counted as dropped)")
	retain := fs.Duration("retain", 7*24*time.Hour, "how long ended jobs (records and output files) are kept; 0 keeps them forever")
	handleTTL := fs.Duration("handle-ttl", 5*time.Minute, "how long a terminal_exec output handle lives after its last use")
	handleCap := fs.Int64("handle-cap", 64<<20, "bytes all output handles together may refer to (least recently used go first)")
	name := fs.String("name", "", "the agent's name, as get_agent_meta tells it (default: the state dir's base name)")
	remindMax := fs.Int("remind-max", envInt("HIVE_REMIND_MAX_PENDING", inbox.DefaultRemindMax), "pending reminders at most (env HIVE_REMIND_MAX_PENDING)")
	maxLine := fs.Int("max-line-bytes", daemon.DefaultMaxLine, "longest JSON-RPC line an MCP session on the socket or stdio may send (longer ones are answered with an error and skipped)")
	logMax := fs.Int64("log-max", 16<<20, "size in bytes at which daemon.log (when it is this daemon's stderr) moves to daemon.log.1; 0 never")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *maxRunning < 1 {
		return fmt.Errorf("%w: --max-running %d: must be >= 1", ErrUsage, *maxRunning)
	}
	if *grace <= 0 {
		return fmt.Errorf("%w: --grace %v: must be > 0", ErrUsage, *grace)
	}
	if *handleTTL <= 0 || *handleCap <= 0 {
		return fmt.Errorf("%w: --handle-ttl and --handle-cap must be > 0", ErrUsage)
	}
	if *fileCap <= 0 {
		return fmt.Errorf("%w: --file-cap %d: must be > 0", ErrUsage, *fileCap)
	}
	if *remindMax < 1 {
		return fmt.Errorf("%w: --remind-max %d: must be >= 1", ErrUsage, *remindMax)
	}
	if *name != "" && !validName(*name) {
		return fmt.Errorf("%w: --name %q: must be 1-128 characters of letters, digits, . _ -", ErrUsage, *name)
	}
	if *maxLine < 1024 {
		return fmt.Errorf("%w: --max-line-bytes %d: must be >= 1024", ErrUsage, *maxLine)
	}
	if *noAuth && *token != "" {
		return fmt.Errorf("%w: --http-no-auth and --http-token-file: give one or the other", ErrUsage)
	}
	if *maxConns < 1 || *maxSessions < 1 {
		return fmt.Errorf("%w: --http-max-conns %d, --http-max-sessions %d: must be >= 1", ErrUsage, *maxConns, *maxSessions)
	}
	for _, v := range []struct {
		flag string
		d    time.Duration
	}{{"--http-session-idle", *sessionIdle}, {"--http-read-timeout", *readTimeout}, {"--http-write-timeout", *writeTimeout}} {
		if v.d <= 0 {
			return fmt.Errorf("%w: %s %v: must be > 0", ErrUsage, v.flag, v.d)
		}
	}
	if *logMax < 0 {
		return fmt.Errorf("%w: --log-max %d: must be >= 0", ErrUsage, *logMax)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	tuneGC()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logOut := e.Stderr
	if f, ok := e.Stderr.(*os.File); ok && *logMax > 0 {
		if r := newRotatingLog(l.Log(), *logMax, f, os.Stdout, os.Stderr); r != nil {
			logOut = r
		}
	}
	log, closeLog := newAsyncLog(logOut, nil)
	defer closeLog()
	return daemon.Run(ctx, daemon.Config{
		StateDir: l.Dir, HTTPAddr: *httpAddr, TokenFile: *token, HTTPNoAuth: *noAuth,
		HTTPMaxConns: *maxConns, HTTPMaxSessions: *maxSessions, HTTPSessionIdle: *sessionIdle,
		HTTPReadTimeout: *readTimeout, HTTPWriteTimeout: *writeTimeout, MaxRunning: *maxRunning,
		Grace: *grace, FileCap: *fileCap, Version: Version, Logger: log,
		HandleTTL: *handleTTL, HandleCap: *handleCap, Retain: retainArg(*retain), MaxLine: *maxLine,
		Name: *name, RemindMax: *remindMax, Subreaper: true,
	})
}

// tuneGC makes the daemon's collector less eager unless the user set
// GOGC or GOMEMLIMIT: its live heap is small (job records, sessions) plus
// the output rings, and a collection every few hundred KiB of garbage
// showed up as latency on every tool call. The soft limit keeps a daemon
// with many busy jobs collecting as usual.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
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
