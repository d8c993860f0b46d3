package search

import (
	"maps"
	"slices"
)

// fileTypes maps a type name (Options.Type) to the file-name globs that
// select it. Both engines use this table (the rg engine passes it with
// --type-add), so a type means the same files whichever engine runs.
var fileTypes = map[string][]string{
	"asm":      {"*.S", "*.asm", "*.s"},
	"c":        {"*.[chH]", "*.[chH].in", "*.cats"},
	"cmake":    {"*.cmake", "CMakeLists.txt"},
	"cpp":      {"*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in", "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"},
	"cs":       {"*.cs"},
	"css":      {"*.css", "*.scss", "*.sass", "*.less"},
	"csv":      {"*.csv"},
	"dart":     {"*.dart"},
	"docker":   {"*Dockerfile*", "*.dockerfile"},
	"elixir":   {"*.ex", "*.exs", "*.eex", "*.heex"},
	"go":       {"*.go"},
	"gomod":    {"go.mod", "go.sum", "go.work", "go.work.sum"},
	"haskell":  {"*.hs", "*.lhs", "*.hsc"},
	"html":     {"*.htm", "*.html", "*.ejs"},
	"java":     {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":       {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
	"json":     {"*.json", "*.jsonc", "composer.lock"},
	"jsonl":    {"*.jsonl", "*.ndjson"},
	"kotlin":   {"*.kt", "*.kts"},
	"lua":      {"*.lua"},
	"make":     {"*.mak", "*.mk", "[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Mm]akefile.am", "[Mm]akefile.in"},
	"markdown": {"*.markdown", "*.md", "*.mdown", "*.mdx", "*.mkd", "*.mkdn"},
	"md":       {"*.markdown", "*.md", "*.mdown", "*.mdx", "*.mkd", "*.mkdn"},
	"nix":      {"*.nix"},
	"perl":     {"*.pl", "*.pm", "*.t", "*.PL", "*.perl"},
	"php":      {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
	"proto":    {"*.proto"},
	"py":       {"*.py", "*.pyi", "*.pyw"},
	"r":        {"*.R", "*.r", "*.Rmd"},
	"ruby":     {"*.rb", "*.gemspec", "*.rake", "Gemfile", "Rakefile", "config.ru", ".irbrc"},
	"rust":     {"*.rs"},
	"scala":    {"*.scala", "*.sbt", "*.sc"},
	"sh":       {"*.sh", "*.bash", "*.zsh", "*.ksh", "*.csh", "*.tcsh", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc"},
	"sql":      {"*.sql", "*.psql"},
	"svelte":   {"*.svelte"},
	"swift":    {"*.swift"},
	"tf":       {"*.tf", "*.tfvars", "*.hcl"},
	"toml":     {"*.toml", "Cargo.lock"},
	"ts":       {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":      {"*.txt"},
	"xml":      {"*.xml", "*.xsd", "*.xsl", "*.xslt", "*.dtd", "*.xhtml", "*.svg"},
	"yaml":     {"*.yaml", "*.yml"},
	"zig":      {"*.zig"},
}

// Types returns the names Options.Type accepts, sorted.
func Types() []string {
	return slices.Sorted(maps.Keys(fileTypes))
}

// typeFilter selects files by name with one type's globs.
type typeFilter struct {
	name  string
	globs []*pathGlob
}

func newTypeFilter(name string) (*typeFilter, bool) {
	pats, ok := fileTypes[name]
	if !ok {
		return nil, false
	}
	f := &typeFilter{name: name}
	for _, p := range pats {
		g, err := compileGlob(p)
		if err != nil {
			panic("search: bad built-in type glob " + p + ": " + err.Error())
		}
		f.globs = append(f.globs, g)
	}
	return f, true
}

func (f *typeFilter) match(base string) bool {
	for _, g := range f.globs {
		if g.match(base) {
			return true
		}
	}
	return false
}
