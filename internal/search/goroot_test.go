package search

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestGOROOTAgree compares both engines on a large real tree: the Go
// source, with its binary and oddly encoded testdata.
func TestGOROOTAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	rg := rgPath(t)
	src := filepath.Join(runtime.GOROOT(), "src")
	for _, o := range []Options{
		{Pattern: "func main", FixedStrings: true, MaxResults: 100000},
		{Pattern: `func \w+Handler\(`, Context: 2, MaxResults: 100000},
		{Pattern: "PK", MaxResults: 100000, Path: "archive"},
		{Pattern: `\x{FFFD}|[^\x00-\x7F]{3}`, MaxResults: 100000, Path: "unicode"},
		{Pattern: "goroutine", IgnoreCase: true, MaxResults: 300, Context: 1},
		{Pattern: "e", MaxResults: 50, Path: "compress", Hidden: true, NoIgnore: true},
		{Pattern: `[\x01-\x08\x0e-\x1f]`, MaxResults: 100000, Context: 1, Path: "compress"},
		{Pattern: "ELF|PNG|GIF8|PK", MaxResults: 100000},
	} {
		o.Dir = src
		got, diff := compareEngines(t, rg, o)
		if diff != "" {
			t.Errorf("%q in %s:\n%s", o.Pattern, o.Path, diff)
		} else if got.Count == 0 {
			t.Errorf("%q in %s: no match", o.Pattern, o.Path)
		}
	}
}
