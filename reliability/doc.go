// Package reliability is hive's reliability suite: each row of
// docs/reliability.md is a test here that drives a real daemon, built from
// this tree, as an attacker or a clumsy client would, and prints its
// figure ("row N: ...").
//
// `go test ./reliability` runs every row at the small counts CI uses;
// `go test ./reliability -full -v` (or reliability/run.sh) runs the full
// counts the document reports.
package reliability
