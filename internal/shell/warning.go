package shell

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Warning returns a short message when cmd looks destructive ("may force-remove
// files recursively (rm -rf)"), several joined by "; ", or "" when nothing is
// found. It is informational: the command runs anyway.
//
// Every simple command of cmd is examined, wherever it is (lists, pipelines,
// subshells, functions, command and process substitutions, bash -c / sh -c / su -c
// / eval strings, env -S strings, find -exec), after stripping wrappers such as
// sudo, env, nice, nohup, time, command, exec, timeout and xargs. Quoted arguments
// are data: echo 'rm -rf /' gives no warning. A command bash cannot parse is
// examined as far as it parses.
//
// A plain command (plainArgv: what Plan runs without the parser) is
// walked as its words, without the parser: the same warnings
// (FuzzWarning holds the two the same), at a fraction of the cost.
func Warning(cmd string) string {
	var w Warner
	if argv, ok := plainArgv(cmd); ok {
		WalkArgv(argv, "", w.Visitor())
	} else {
		Walk(cmd, "", w.Visitor())
	}
	return w.String()
}

// parsedWarning is Warning through the parser whatever cmd is.
func parsedWarning(cmd string) string {
	var w Warner
	Walk(cmd, "", w.Visitor())
	return w.String()
}

// Warner collects the warnings of [Warning] from a [Walk] of its own
// (Visitor) or one shared with another visitor (Call, Node), so that one
// walk of a command line serves both. The zero value is ready to use; a
// Warner is not safe for concurrent use.
type Warner struct{ w warner }

// Visitor returns a Visitor of w alone.
func (w *Warner) Visitor() Visitor { return Visitor{Call: w.Call, Node: w.Node} }

// Call examines one call a Walk found.
func (w *Warner) Call(c *Call) { w.w.visit(c) }

// Node examines one node a Walk found.
func (w *Warner) Node(n syntax.Node) bool { return w.w.node(n) }

// String returns the warnings found, joined by "; ", or "".
func (w *Warner) String() string { return strings.Join(w.w.msgs, "; ") }

// maxDepth bounds the nesting of scripts inside arguments (bash -c "sh -c '…'").
const maxDepth = 4

type warner struct {
	msgs []string
}

// add records msg once. A message can quote an argument (dd of=PATH),
// and an argument can hold a line break: it is escaped, so a warning
// stays one line.
func (w *warner) add(msg string) {
	msg = lineBreaks.Replace(msg)
	if msg != "" && !slices.Contains(w.msgs, msg) {
		w.msgs = append(w.msgs, msg)
	}
}

var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// node examines what is seen in the syntax itself: SQL fed to a database
// client, redirections to devices, fork bombs.
func (w *warner) node(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		w.stdin(n)
	case *syntax.BinaryCmd:
		w.pipedSQL(n)
	case *syntax.Redirect:
		w.redirect(n)
	case *syntax.FuncDecl:
		w.forkBomb(n)
	}
	return true
}

// visit examines one simple command (Walk has seen through its wrappers
// and into the scripts it runs).
func (w *warner) visit(c *Call) {
	if _, ok := c.Program(); ok {
		w.call(texts(c.Args), c.Wrappers)
	}
}

// call examines one simple command given as its words, without its
// wrappers (outer).
func (w *warner) call(args []string, outer []string) {
	name, rest := base(args[0]), args[1:]
	switch name {
	case "rm":
		// xargs supplies the operands.
		opts, operands := getopt{}.parse(rest)
		if has(opts, "r", "R", "recursive") && has(opts, "f", "force") &&
			(len(operands) > 0 || slices.Contains(outer, "xargs")) {
			w.add("may force-remove files recursively (rm -rf)")
		}
	case "git":
		w.git(rest)
	case "kubectl", "oc":
		_, operands := getopt{short: "ns", long: []string{"namespace", "context", "cluster",
			"kubeconfig", "server", "user", "token", "as", "as-group", "request-timeout",
			"cache-dir", "certificate-authority", "client-certificate", "client-key",
			"tls-server-name"}}.parse(rest)
		if len(operands) > 0 && operands[0] == "delete" {
			w.add("may delete cluster resources (" + name + " delete)")
		}
	case "terraform", "tofu", "terragrunt":
		w.terraform(name, rest)
	case "dd":
		for _, a := range rest {
			if dev, ok := strings.CutPrefix(a, "of="); ok && device(dev) {
				w.add("may overwrite a disk device (dd of=" + dev + ")")
			}
		}
	case "mkfs", "mke2fs":
		w.add("may format a filesystem (" + name + ")")
	case "chmod":
		opts, operands := getopt{long: []string{"reference"}}.parse(rest)
		if has(opts, "R", "recursive") && len(operands) > 0 && worldWritable[operands[0]] {
			w.add("may make files world-writable recursively (chmod -R " + operands[0] + ")")
		}
	case "chown", "chgrp":
		opts, operands := getopt{long: []string{"from"}}.parse(rest)
		if !has(opts, "reference") && len(operands) > 0 {
			operands = operands[1:] // the owner or group
		}
		if has(opts, "R", "recursive") && slices.ContainsFunc(operands, func(p string) bool {
			return p == "/" || p == "/*"
		}) {
			w.add("may change ownership of the whole filesystem (" + name + " -R /)")
		}
	case "shred":
		if _, operands := (getopt{short: "ns", long: []string{"iterations", "size", "random-source"}}).parse(rest); len(operands) > 0 {
			w.add("may irrecoverably overwrite files (shred)")
		}
	case "wipefs":
		if opts, _ := (getopt{short: "otO", long: []string{"offset", "types", "output"}}).parse(rest); has(opts, "a", "all", "o", "offset") {
			w.add("may erase filesystem signatures (wipefs)")
		}
	case "truncate":
		opts, _ := getopt{short: "sr", long: []string{"size", "reference"}}.parse(rest)
		if slices.ContainsFunc(values(opts, "s", "size"), zeroSize) {
			w.add("may empty files (truncate -s 0)")
		}
	case "tee":
		_, operands := getopt{long: []string{"output-error"}}.parse(rest)
		for _, p := range operands {
			if device(p) {
				w.add("may overwrite a disk device (tee " + p + ")")
			}
		}
	case "find":
		if slices.Contains(rest, "-delete") {
			w.add("may delete files (find -delete)")
		}
	default:
		if strings.HasPrefix(name, "mkfs.") {
			w.add("may format a filesystem (" + name + ")")
		}
		for _, sql := range sqlArgs(name, rest) {
			w.add(sqlWarning(sql))
		}
	}
}

func (w *warner) git(args []string) {
	sub, rest := gitSub(args)
	switch sub {
	case "push":
		opts, operands := getopt{short: "o", long: []string{"push-option", "repo", "receive-pack", "exec"}}.parse(rest)
		plus := slices.ContainsFunc(operands, func(r string) bool { return strings.HasPrefix(r, "+") })
		if has(opts, "f", "force", "force-with-lease") || plus {
			w.add("may overwrite remote history (git push --force)")
		}
		colon := slices.ContainsFunc(operands, func(r string) bool { return len(r) > 1 && r[0] == ':' })
		if has(opts, "d", "delete") || colon {
			w.add("may delete a remote branch (git push --delete)")
		}
	case "reset":
		if opts, _ := (getopt{}).parse(rest); has(opts, "hard") {
			w.add("may discard uncommitted changes (git reset --hard)")
		}
	case "clean":
		opts, _ := getopt{short: "e", long: []string{"exclude"}}.parse(rest)
		if has(opts, "f", "force") && !has(opts, "n", "dry-run") {
			w.add("may delete untracked files (git clean -f)")
		}
	case "checkout":
		opts, operands := getopt{short: "bB", long: []string{"orphan", "conflict", "pathspec-from-file"}}.parse(rest)
		switch {
		case slices.ContainsFunc(operands, broadPath):
			w.add("may discard uncommitted changes (git checkout .)")
		case has(opts, "f", "force"):
			w.add("may discard uncommitted changes (git checkout -f)")
		}
	case "restore":
		opts, operands := getopt{short: "s", long: []string{"source", "conflict", "pathspec-from-file"}}.parse(rest)
		worktree := !has(opts, "S", "staged") || has(opts, "W", "worktree")
		if worktree && slices.ContainsFunc(operands, broadPath) {
			w.add("may discard uncommitted changes (git restore .)")
		}
	case "stash":
		if len(rest) > 0 && rest[0] == "clear" {
			w.add("may delete all stashes (git stash clear)")
		}
	case "branch":
		opts, _ := getopt{}.parse(rest)
		if has(opts, "D") || has(opts, "d", "delete") && has(opts, "f", "force") {
			w.add("may delete an unmerged branch (git branch -D)")
		}
	}
}

// broadPath reports whether a git pathspec covers the whole tree or directory.
func broadPath(p string) bool {
	switch p {
	case ".", "./", ":/", ":/.", ":(top)", "*":
		return true
	}
	return false
}

func (w *warner) terraform(name string, args []string) {
	var flags, operands []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			flags = append(flags, flag)
		} else {
			operands = append(operands, a)
		}
	}
	if name == "terragrunt" && len(operands) > 1 && (operands[0] == "run-all" || operands[0] == "run") {
		operands = operands[1:]
	}
	if len(operands) == 0 {
		return
	}
	switch {
	case operands[0] == "destroy" || operands[0] == "destroy-all":
		w.add("may destroy infrastructure (" + name + " destroy)")
	case operands[0] == "apply" && slices.Contains(flags, "destroy"):
		w.add("may destroy infrastructure (" + name + " apply -destroy)")
	}
}

// shells are the interpreters whose -c argument or stdin is a shell script.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true,
	"ksh": true, "mksh": true, "ash": true}

// redirect flags output redirected to a block device.
func (w *warner) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrInOut, syntax.DplOut:
	default:
		return
	}
	if p, _ := unquote(r.Word); device(p) {
		w.add("may overwrite a disk device (> " + p + ")")
	}
}

// forkBomb flags a function that calls itself at least twice, at least once in
// the background, like :(){ :|:& };:.
func (w *warner) forkBomb(f *syntax.FuncDecl) {
	if f.Name == nil || f.Body == nil {
		return
	}
	name := f.Name.Value
	self := func(n syntax.Node) int {
		count := 0
		syntax.Walk(n, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				if v, _ := unquote(c.Args[0]); v == name {
					count++
				}
			}
			return true
		})
		return count
	}
	if self(f.Body) < 2 {
		return
	}
	background := false
	syntax.Walk(f.Body, func(n syntax.Node) bool {
		if s, ok := n.(*syntax.Stmt); ok && s.Background && self(s) > 0 {
			background = true
		}
		return !background
	})
	if background {
		w.add("fork bomb: may exhaust the process table")
	}
}

// devicePrefixes are the names of block devices under /dev.
var devicePrefixes = []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk",
	"md", "dm-", "mapper/"}

// device reports whether p names a disk device (/dev/sda, /dev/nvme0n1,
// /dev/disk2…), as opposed to /dev/null, /dev/stdout, /dev/tty, /dev/fd/N….
func device(p string) bool {
	rest, ok := strings.CutPrefix(p, "/dev/")
	return ok && slices.ContainsFunc(devicePrefixes, func(pre string) bool {
		return strings.HasPrefix(rest, pre)
	})
}

var worldWritable = map[string]bool{"777": true, "0777": true, "a+rwx": true,
	"ugo+rwx": true, "a=rwx": true, "ugo=rwx": true}

// zeroSize reports whether a truncate size sets the length to zero (0, 0K…).
func zeroSize(s string) bool {
	digits := strings.TrimRight(s, "KMGTPEZYkmgtpezyiB")
	return digits != "" && strings.Trim(digits, "0") == ""
}
