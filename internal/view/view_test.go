package view

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The record's exit status is spelled in few places: a struct type that
// carries an ExitCode field is either the record itself (the engines'
// Info, the store's row, the holder's wire end, the view) or the one
// state type answers embed (view.SessionState, the tools' jobState).
// A new one is a new copy of the record: map from the view instead.
func TestFewTypesCarryAnExitCode(t *testing.T) {
	const most = 8
	var found []string
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				for _, name := range field.Names {
					if name.Name == "ExitCode" {
						rel, _ := filepath.Rel(root, path)
						found = append(found, rel+": "+ts.Name.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	if len(found) == 0 {
		t.Fatal("found no struct with an ExitCode: the walk is broken")
	}
	if len(found) > most {
		t.Errorf("%d struct types in internal/ carry an ExitCode (at most %d):\n%s", len(found), most, strings.Join(found, "\n"))
	}
	t.Logf("%d struct types carry an ExitCode:\n%s", len(found), strings.Join(found, "\n"))
}
