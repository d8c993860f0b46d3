// Package build tells which build of hive a process runs: the version set
// at link time, the VCS revision and dirty flag the go command stamped, and
// a digest of the executable, for builds no stamp tells apart (go run, a
// dirty checkout, -buildvcs=false).
package build

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info identifies a build. The zero value is a build that said nothing
// about itself (a daemon older than these fields).
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"` // vcs.revision; "" when not stamped
	Time     string `json:"time,omitempty"`     // vcs.time
	Modified bool   `json:"modified,omitempty"` // vcs.modified: built from a dirty tree
	Go       string `json:"go,omitempty"`       // the toolchain
	// Sum is the SHA-256 of the executable, hex; "" when not computed or
	// unreadable. Only builds whose stamp cannot tell them apart compare it.
	Sum string `json:"sum,omitempty"`
	// File identifies the executable file (device, inode, size, time):
	// builds run from one file are one build, whatever their stamps.
	File string `json:"file,omitempty"`
}

// Read returns this process's build with the given link-time version. It
// does not compute Sum (see WithSum).
func Read(version string) Info {
	in := Info{Version: version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// NeedsSum reports whether a and b can be told apart only by their
// executables' digests: their stamps agree but do not pin the source (no
// revision, or a dirty tree).
func NeedsSum(a, b Info) bool {
	return a.Version == b.Version && a.Revision == b.Revision && a.Modified == b.Modified &&
		(a.Revision == "" || a.Modified)
}

// Same reports whether a and b are the same build. Builds whose stamps
// agree but do not pin the source are the same if they run from one file,
// or if both digests are known and equal.
func Same(a, b Info) bool {
	if a.Version != b.Version || a.Revision != b.Revision || a.Modified != b.Modified {
		return false
	}
	if !NeedsSum(a, b) || a.File != "" && a.File == b.File {
		return true
	}
	return a.Sum != "" && a.Sum == b.Sum
}

// String is the build in one short word: version, revision (12 digits),
// "+dirty", and the digest's start where the stamp does not pin it.
func (in Info) String() string {
	s := in.Version
	if s == "" {
		s = "unknown"
	}
	if in.Revision != "" {
		s += " " + short(in.Revision, 12)
	}
	if in.Modified {
		s += "+dirty"
	}
	if (in.Revision == "" || in.Modified) && in.Sum != "" {
		s += " sha256:" + short(in.Sum, 12)
	}
	return s
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// WithSum returns in with Sum set to the digest of the executable at path
// (an error leaves it empty and is returned).
func (in Info) WithSum(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return in, fmt.Errorf("digest of the executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return in, fmt.Errorf("digest of the executable %q: %w", path, err)
	}
	in.Sum = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

// SelfExe is the path to read this process's own executable from: on
// Linux /proc/self/exe, which still reads after the file was deleted
// (go run removes its temporary build when the command exits); elsewhere
// os.Executable.
func SelfExe() string {
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			return "/proc/self/exe"
		}
	}
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

// Temporary reports whether exe is a build the go command made for one
// run (go run, go test): it lives in a go-build directory (under the temp
// dir, or in the build cache), or it no longer exists. Such a path is no
// place to start a service from.
func Temporary(exe string) bool {
	if _, err := os.Stat(exe); err != nil {
		return true
	}
	for _, part := range strings.Split(strings.ReplaceAll(exe, "\\", "/"), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
}

// WithFile returns in with File set to the identity of the executable at
// path (see fileID): two processes of one file agree without reading it.
func (in Info) WithFile(path string) Info {
	if fi, err := os.Stat(path); err == nil {
		in.File = fileID(fi)
	}
	return in
}
