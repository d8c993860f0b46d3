// Command floor is the least an MCP server can do for terminal_exec and
// run: the floor that bench's BenchmarkFloorRoundTrip measures hive
// against. It reads newline-delimited JSON-RPC on stdin (the framing of
// `hive mcp`), answers initialize, tools/list and ping, and for a
// tools/call of terminal_exec or run with {"cmd": ...} it spawns the
// command, waits for it, appends the job's record and answers with its
// exit code and output. Nothing else: no envelope, no output files, no
// limits, one request at a time.
//
// terminal_exec runs a command with no shell syntax directly (as hive
// does, "direct"), anything else and every run under `bash -c`.
//
// The record (-record):
//   - sqlite (the default): one INSERT a job into a SQLite database
//     (modernc.org/sqlite, as hive's store) in WAL mode with
//     synchronous=NORMAL, hive's settings: a record survives the
//     process's crash, not a power loss; the same durability as hive's,
//     so the two compare like for like.
//   - fsync: one JSON line a job appended to a file and fsynced: durable
//     against a power loss, which hive's store is not; slower on most
//     disks.
//
// Usage: floor [-record sqlite|fsync] DIR (DIR holds the record).
package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

func main() {
	kind := flag.String("record", "sqlite", "how a job is recorded: sqlite or fsync")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: floor [-record sqlite|fsync] DIR")
		os.Exit(2)
	}
	rec, err := openRecorder(*kind, flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	defer rec.Close()
	if err := serve(os.Stdin, os.Stdout, rec); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// record is what the floor keeps of one job.
type record struct {
	ID       int64     `json:"id"`
	Cmd      string    `json:"cmd"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	ExitCode int       `json:"exit_code"`
}

type recorder interface {
	Append(record) error
	Close() error
}

func openRecorder(kind, dir string) (recorder, error) {
	switch kind {
	case "sqlite":
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "floor.db")+"?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("open the record db: %w", err)
		}
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS jobs (job INTEGER, cmd TEXT, started INTEGER, ended INTEGER, exit_code INTEGER)`); err != nil {
			db.Close()
			return nil, fmt.Errorf("create the jobs table: %w", err)
		}
		ins, err := db.Prepare(`INSERT INTO jobs (job, cmd, started, ended, exit_code) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("prepare the insert: %w", err)
		}
		return &sqliteRecorder{db: db, ins: ins}, nil
	case "fsync":
		f, err := os.OpenFile(filepath.Join(dir, "floor.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open the record file: %w", err)
		}
		return &fileRecorder{f: f}, nil
	}
	return nil, fmt.Errorf("-record %q: must be sqlite or fsync", kind)
}

type sqliteRecorder struct {
	db  *sql.DB
	ins *sql.Stmt
}

func (r *sqliteRecorder) Append(x record) error {
	_, err := r.ins.Exec(x.ID, x.Cmd, x.Started.UnixNano(), x.Ended.UnixNano(), x.ExitCode)
	return err
}

func (r *sqliteRecorder) Close() error { r.ins.Close(); return r.db.Close() }

type fileRecorder struct{ f *os.File }

func (r *fileRecorder) Append(x record) error {
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return r.f.Sync()
}

func (r *fileRecorder) Close() error { return r.f.Close() }

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Cmd string `json:"cmd"`
		} `json:"arguments"`
	} `json:"params"`
}

// serve answers the requests read from in until it ends.
func serve(in *os.File, out *os.File, rec recorder) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 64<<10)
	var next int64
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil // stdin closed: the client went
			}
			continue
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			return fmt.Errorf("request %q: %w", line, err)
		}
		if req.ID == nil {
			continue // a notification
		}
		var result any
		var rpcErr string
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "floor", "version": "0"}}
		case "ping":
			result = map[string]any{}
		case "tools/list":
			schema := map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}, "required": []string{"cmd"}}
			result = map[string]any{"tools": []any{
				map[string]any{"name": "terminal_exec", "description": "Run a command.", "inputSchema": schema},
				map[string]any{"name": "run", "description": "Run a command under bash.", "inputSchema": schema},
			}}
		case "tools/call":
			next++
			result, rpcErr = call(rec, next, req.Params.Name, req.Params.Arguments.Cmd)
		default:
			rpcErr = fmt.Sprintf("method %q: unknown", req.Method)
		}
		var msg []byte
		if rpcErr != "" {
			msg, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": rpcErr}})
		} else if msg, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}); err != nil {
			return err
		}
		w.Write(msg)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// callResult is a tool's structured answer.
type callResult struct {
	ID        int64  `json:"id"`
	ExitCode  int    `json:"exit_code"`
	ShellKind string `json:"shell_kind"`
	Output    string `json:"output"`
}

// call runs one tool call; a non-empty second result is a protocol error.
func call(rec recorder, id int64, tool, cmd string) (any, string) {
	if cmd == "" {
		return nil, "arguments.cmd: required"
	}
	var argv []string
	kind := "bash"
	switch tool {
	case "terminal_exec":
		if plain(cmd) {
			argv, kind = strings.Fields(cmd), "direct"
		}
	case "run":
	default:
		return nil, fmt.Sprintf("tool %q: unknown", tool)
	}
	if argv == nil {
		argv = []string{"bash", "-c", cmd}
	}
	x := record{ID: id, Cmd: cmd, Started: time.Now()}
	c := exec.Command(argv[0], argv[1:]...)
	var buf bytes.Buffer
	c.Stdout, c.Stderr = &buf, &buf
	c.SysProcAttr = ownGroup() // its own group, as hive's jobs
	err := c.Run()
	x.Ended = time.Now()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		x.ExitCode = ee.ExitCode()
	default:
		return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": err.Error()}}}, ""
	}
	if err := rec.Append(x); err != nil {
		return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "record: " + err.Error()}}}, ""
	}
	res := callResult{ID: id, ExitCode: x.ExitCode, ShellKind: kind, Output: buf.String()}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("exit %d\n%s", x.ExitCode, res.Output)}},
		"structuredContent": res}, ""
}

// plain: cmd has no shell syntax (words of letters, digits and ./_-=:,
// separated by spaces), so it can run without a shell.
func plain(cmd string) bool {
	for _, r := range cmd {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("./_-=:, ", r):
		default:
			return false
		}
	}
	return strings.TrimSpace(cmd) != ""
}
