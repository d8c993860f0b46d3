package search

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// verdict is what a set of ignore rules says about one path.
type verdict uint8

const (
	noVerdict verdict = iota
	ignored
	whitelisted
)

// ignoreRule is one line of an ignore file.
type ignoreRule struct {
	glob      *pathGlob
	whitelist bool // the line started with '!'
	dirOnly   bool // the line ended with '/'
}

// ignoreRules is the compiled content of one ignore file (or of a list of
// --glob overrides), matched against paths relative to the file's directory.
// The last matching rule wins, as in git.
type ignoreRules struct {
	rules []ignoreRule
	// ignores counts rules without '!': for --glob overrides these are the
	// whitelist globs.
	ignores int
}

// parseIgnoreLine compiles one gitignore line the way ripgrep does. ok is
// false for blank lines and comments.
func parseIgnoreLine(line string) (r ignoreRule, ok bool, err error) {
	if strings.HasPrefix(line, "#") {
		return r, false, nil
	}
	if !strings.HasSuffix(line, "\\ ") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
	}
	if line == "" {
		return r, false, nil
	}
	anchored := false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
		anchored = strings.HasPrefix(line, "/")
	} else {
		if strings.HasPrefix(line, "!") {
			r.whitelist = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			// Anchored to the ignore file's directory: wildcards can't match '/'
			// anyway, so dropping the slash is all it takes.
			line = line[1:]
			anchored = true
		}
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	actual := line
	if !anchored && !strings.Contains(line, "/") {
		if !strings.HasPrefix(actual, "**/") && actual != "**" {
			actual = "**/" + actual
		}
	}
	if strings.HasSuffix(actual, "/**") {
		// "dir/**" matches what is inside dir, not dir itself.
		actual += "/*"
	}
	g, err := compileGlob(actual)
	if err != nil {
		return r, false, err
	}
	r.glob = g
	return r, true, nil
}

// parseIgnoreFile compiles an ignore file's content. Invalid lines are
// skipped; like ripgrep, reading stops at the first line that is not UTF-8.
func parseIgnoreFile(data []byte) *ignoreRules {
	rs := &ignoreRules{}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !utf8.Valid(line) {
			break
		}
		r, ok, err := parseIgnoreLine(string(line))
		if err != nil || !ok {
			continue
		}
		rs.add(r)
	}
	if len(rs.rules) == 0 {
		return nil
	}
	return rs
}

func (rs *ignoreRules) add(r ignoreRule) {
	rs.rules = append(rs.rules, r)
	if !r.whitelist {
		rs.ignores++
	}
}

// match returns the verdict of the last rule matching path (slash-separated,
// relative to the rules' directory).
func (rs *ignoreRules) match(path string, isDir bool) verdict {
	if rs == nil {
		return noVerdict
	}
	for i := len(rs.rules) - 1; i >= 0; i-- {
		r := &rs.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.glob.match(path) {
			if r.whitelist {
				return whitelisted
			}
			return ignored
		}
	}
	return noVerdict
}

// dirIgnore holds the ignore files of one directory, linked to its parent's.
// Directories above the search root ("absolute parents") contribute too, as
// in ripgrep; their rules see the path from that directory down.
type dirIgnore struct {
	parent *dirIgnore
	rel    string // walked dir: path from the search root ("" is the root)
	prefix string // absolute parent: path from this dir to the search root
	above  bool   // an absolute parent of the search root
	hasGit bool   // the directory contains .git
	anyGit bool   // this directory or an ancestor contains .git
	rules  bool   // this directory or an ancestor has any ignore rules

	rgignore, ignore, gitignore, exclude *ignoreRules
}

func (d *dirIgnore) empty() bool {
	return d.rgignore == nil && d.ignore == nil && d.gitignore == nil && d.exclude == nil
}

// loadDirIgnore reads the ignore files of dir. has reports which of the
// relevant names exist in dir (so absent files cost no syscall).
func loadDirIgnore(parent *dirIgnore, dir string, has func(name string) bool) *dirIgnore {
	d := &dirIgnore{parent: parent}
	read := func(name string) *ignoreRules {
		if !has(name) {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		return parseIgnoreFile(data)
	}
	d.rgignore = read(".rgignore")
	d.ignore = read(".ignore")
	d.gitignore = read(".gitignore")
	if has(".git") {
		d.hasGit = true
		if data, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude")); err == nil {
			d.exclude = parseIgnoreFile(data)
		}
	}
	d.anyGit = d.hasGit || (parent != nil && parent.anyGit)
	d.rules = !d.empty() || (parent != nil && parent.rules)
	return d
}

// loadParents builds the ignore chain of the directories above root (an
// absolute, clean path), outermost first.
func loadParents(root string) *dirIgnore {
	var dirs []string
	for p := root; ; {
		q := filepath.Dir(p)
		if q == p {
			break
		}
		dirs = append(dirs, q)
		p = q
	}
	var d *dirIgnore
	for i := len(dirs) - 1; i >= 0; i-- {
		dir := dirs[i]
		d = loadDirIgnore(d, dir, func(name string) bool {
			_, err := os.Stat(filepath.Join(dir, name))
			return err == nil
		})
		d.above = true
		rel, err := filepath.Rel(dir, root)
		if err != nil {
			rel = root
		}
		d.prefix = filepath.ToSlash(rel)
	}
	return d
}

// childIgnore is the context for a walked directory at rel.
func childIgnore(parent *dirIgnore, dir, rel string, has func(string) bool) *dirIgnore {
	d := loadDirIgnore(parent, dir, has)
	d.rel = rel
	return d
}

// matchIgnored applies ripgrep's precedence to the entry rel (relative to
// the search root) whose containing directory has context d: for each kind
// of file (.rgignore, .ignore, .gitignore, .git/info/exclude, in that
// order of priority) the deepest directory with a matching rule decides.
// .gitignore and exclude rules count only inside a git repository and stop
// at the repository's root.
func matchIgnored(d *dirIgnore, rel string, isDir bool) verdict {
	if d == nil || !d.rules {
		return noVerdict
	}
	var mRg, mIg, mGit, mEx verdict
	anyGit := d.anyGit
	sawGit := false
	for x := d; x != nil; x = x.parent {
		if !x.empty() {
			var p string
			switch {
			case x.above:
				p = x.prefix + "/" + rel
			case x.rel == "":
				p = rel
			default:
				p = rel[len(x.rel)+1:]
			}
			if mRg == noVerdict {
				mRg = x.rgignore.match(p, isDir)
			}
			if mIg == noVerdict {
				mIg = x.ignore.match(p, isDir)
			}
			if anyGit && !sawGit {
				if mGit == noVerdict {
					mGit = x.gitignore.match(p, isDir)
				}
				if mEx == noVerdict {
					mEx = x.exclude.match(p, isDir)
				}
			}
		}
		sawGit = sawGit || x.hasGit
	}
	for _, v := range [...]verdict{mRg, mIg, mGit, mEx} {
		if v != noVerdict {
			return v
		}
	}
	return noVerdict
}
