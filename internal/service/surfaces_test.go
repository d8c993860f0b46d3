package service_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The surfaces are adapters of the Service: they decode a request, call a
// Service method and encode its answer. They neither import an engine nor
// reach an engine through the Service's fields.
var (
	surfaces = []string{"tools", "sockapi", "httpfront", "dashboard", "swarm"}
	// engines are the packages no surface imports. There is no exception:
	// what a surface needs of them is a Service method, a type in service
	// or a view.
	engines = []string{"job", "pty", "inbox", "agent", "store"}
	// engineFields are the Service's fields that hold an engine.
	engineFields = []string{"Jobs", "Inbox", "Agent", "PTY"}
)

const module = "github.com/hivetools/hive/internal/"

// listed is a package as `go list -json` tells it.
type listed struct {
	ImportPath, Dir         string
	GoFiles, IgnoredGoFiles []string
}

// goList lists the packages pkgs: their directory and their Go files,
// those of other platforms (IgnoredGoFiles) included.
func goList(t *testing.T, pkgs ...string) []listed {
	t.Helper()
	args := []string{"list", "-json"}
	for _, p := range pkgs {
		args = append(args, module+p)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var list []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		list = append(list, p)
	}
	if len(list) != len(pkgs) {
		t.Fatalf("go list: %d packages, want %d", len(list), len(pkgs))
	}
	return list
}

// exportData maps each package pkgs depend on to its export data file,
// built by `go list -export` (for go/types).
func exportData(t *testing.T, pkgs ...string) map[string]string {
	t.Helper()
	args := []string{"list", "-deps", "-export", "-f", "{{.ImportPath}}={{.Export}}"}
	for _, p := range pkgs {
		args = append(args, module+p)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, file, _ := strings.Cut(line, "=")
		m[path] = file
	}
	return m
}

// TestSurfacesImportNoEngine parses every non-test Go file of each
// surface, whatever its platform, and fails on an import of an engine.
func TestSurfacesImportNoEngine(t *testing.T) {
	for _, p := range goList(t, surfaces...) {
		for _, name := range append(p.GoFiles, p.IgnoredGoFiles...) {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, e := range engines {
					if path == module+e {
						t.Errorf("%s: imports %s: a surface calls a service.Service method instead (the engines are behind it)",
							fset.Position(imp.Pos()), path)
					}
				}
			}
		}
	}
}

// TestSurfacesUseNoEngineField type-checks each surface (its files of
// this platform) and fails where it selects an engine field of a
// service.Service (svc.Jobs, svc.PTY, ...), which would reach an engine
// without importing it.
func TestSurfacesUseNoEngineField(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the surfaces")
	}
	export := exportData(t, surfaces...)
	for _, p := range goList(t, surfaces...) {
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			if export[path] == "" {
				return nil, fmt.Errorf("%s: no export data", path)
			}
			return os.Open(export[path])
		})}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		for sel, s := range info.Selections {
			if s.Kind() != types.FieldVal {
				continue
			}
			recv := s.Recv()
			if ptr, ok := recv.(*types.Pointer); ok {
				recv = ptr.Elem()
			}
			named, ok := recv.(*types.Named)
			if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != module+"service" || named.Obj().Name() != "Service" {
				continue
			}
			for _, f := range engineFields {
				if s.Obj().Name() == f {
					t.Errorf("%s: selects service.Service.%s: a surface calls a Service method instead", fset.Position(sel.Pos()), f)
				}
			}
		}
	}
}
