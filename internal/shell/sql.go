package shell

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// SQL is not shell: these patterns run on the SQL text that the shell parser has
// already extracted from a database client's argument, heredoc or here-string.
var (
	sqlDrop     = regexp.MustCompile(`(?i)\bDROP\s+(TABLE|DATABASE|SCHEMA)\b`)
	sqlTruncate = regexp.MustCompile(`(?i)\bTRUNCATE\b`)
	sqlDelete   = regexp.MustCompile(`(?is)^\s*DELETE\s+FROM\s+\S+\s*$`)
)

// sqlWarning returns the warning for a piece of SQL, or "".
func sqlWarning(sql string) string {
	if m := sqlDrop.FindStringSubmatch(sql); m != nil {
		return "may drop database objects (DROP " + strings.ToUpper(m[1]) + ")"
	}
	if sqlTruncate.MatchString(sql) {
		return "may delete all rows (TRUNCATE)"
	}
	for stmt := range strings.SplitSeq(sql, ";") {
		if sqlDelete.MatchString(stmt) {
			return "may delete all rows (DELETE without WHERE)"
		}
	}
	return ""
}

// sqlClient reports whether name is a database client whose input is SQL.
func sqlClient(name string) bool {
	switch name {
	case "psql", "mysql", "mariadb", "sqlite3", "duckdb", "clickhouse-client",
		"clickhouse", "clickhouse-local", "cockroach":
		return true
	}
	return false
}

// sqlArgs returns the SQL that database client name receives in its arguments:
// psql -c/--command, mysql and mariadb -e/--execute, sqlite3 and duckdb operands
// after the database (and -cmd), clickhouse-client -q/--query, cockroach sql
// -e/--execute.
func sqlArgs(name string, args []string) []string {
	switch name {
	case "psql":
		opts, _ := getopt{short: "cdfhLoPpRTUvF", long: []string{"command", "dbname", "file",
			"host", "log-file", "output", "pset", "port", "record-separator", "table-attr",
			"username", "variable", "set", "field-separator"}}.parse(args)
		return values(opts, "c", "command")
	case "mysql", "mariadb":
		opts, _ := getopt{short: "eDhPSuOB", optional: "p", long: []string{"execute",
			"database", "host", "port", "socket", "user", "defaults-file", "protocol"}}.parse(args)
		return values(opts, "e", "execute")
	case "sqlite3", "duckdb":
		var sql, operands []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			if len(a) < 2 || a[0] != '-' {
				operands = append(operands, a)
				continue
			}
			switch strings.TrimLeft(a, "-") {
			case "cmd", "c", "s":
				if i+1 < len(args) {
					sql = append(sql, args[i+1])
				}
				i++
			case "init", "separator", "newline", "nullvalue", "mmap", "lookaside",
				"pagecache", "heap", "maxsize", "vfs", "escape", "f":
				i++
			}
		}
		if len(operands) > 1 {
			sql = append(sql, operands[1:]...)
		}
		return sql
	case "clickhouse-client", "clickhouse", "clickhouse-local":
		opts, _ := getopt{short: "qhdu", long: []string{"query", "host", "port", "user",
			"password", "database", "format"}}.parse(args)
		return values(opts, "q", "query")
	case "cockroach":
		opts, operands := getopt{short: "edu", long: []string{"execute", "url", "host",
			"database", "user", "certs-dir", "port", "format"}}.parse(args)
		if len(operands) > 0 && operands[0] == "sql" {
			return values(opts, "e", "execute")
		}
	}
	return nil
}

// stdin examines the heredoc or here-string given to a database client as SQL
// (psql <<'EOF' … EOF).
func (w *warner) stdin(s *syntax.Stmt) {
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	args, _ := unwrap(words(c.Args))
	if len(args) == 0 {
		return
	}
	if !sqlClient(base(args[0])) {
		return
	}
	for _, r := range s.Redirs {
		var body string
		switch {
		case (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil:
			body, _ = unquote(r.Hdoc)
		case r.Op == syntax.WordHdoc:
			body, _ = unquote(r.Word)
		default:
			continue
		}
		w.add(sqlWarning(body))
	}
}

// pipedSQL examines echo or printf output piped into a database client
// (echo 'DROP TABLE t' | psql).
func (w *warner) pipedSQL(b *syntax.BinaryCmd) {
	if b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
		return
	}
	dst, ok := b.Y.Cmd.(*syntax.CallExpr)
	if !ok || !clientCall(dst) {
		return
	}
	src := b.X
	if inner, ok := src.Cmd.(*syntax.BinaryCmd); ok && (inner.Op == syntax.Pipe || inner.Op == syntax.PipeAll) {
		src = inner.Y
	}
	c, ok := src.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	args, _ := unwrap(words(c.Args))
	if len(args) > 0 && (base(args[0]) == "echo" || base(args[0]) == "printf") {
		w.add(sqlWarning(strings.Join(args[1:], " ")))
	}
}

// readsStdin reports whether a shell given args reads its script from stdin:
// only options, none of them -c, and no script file.
func readsStdin(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return false
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return false
		}
	}
	return true
}

// clientCall reports whether c runs a database client.
func clientCall(c *syntax.CallExpr) bool {
	args, _ := unwrap(words(c.Args))
	return len(args) > 0 && sqlClient(base(args[0]))
}
