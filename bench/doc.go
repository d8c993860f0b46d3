// Package bench holds hive's benchmarks: they build the real binary, start a
// real daemon in a temp state dir and compare each hive path against a
// baseline measured in the same process (see README.md). It has no code of
// its own; everything is in the _test files and runs only with -bench.
package bench
