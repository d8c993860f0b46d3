// Package policytest holds the bypass corpus of the command policy, for
// the tests of internal/policy (the matcher, pure) and of a real daemon
// (cmd/hive, which sends every command through terminal_exec and run).
//
// SAFETY. A command of the corpus may run for real if the policy has a
// bug, so each names a harmless stand-in: a push happens in a scratch
// repository with no remote (it goes nowhere), a removal targets a
// canary directory inside the test's temp dir (a bypass shows as a
// missing canary), a download reads a file that does not exist. Nothing
// here names a path outside the temp dir, a remote, a device or the home
// directory.
package policytest

import "strings"

// Rules are the deny rules the corpus is refused by.
var Rules = []string{
	"git push --force",
	"rm -r -f */canary",
	"find */canary -delete",
	"curl | sh",
	"curl | bash",
}

// Placeholders in the commands: T is the test's temp dir (which holds
// canary/, the directory the rules protect, and repo/, the scratch
// repository, the commands' working directory).
const T = "@T@"

// Denied are spellings of commands the Rules refuse, each refused
// outright or as a command that cannot be known before it runs (with
// unknown commands refused, the default).
var Denied = []string{
	// git push --force, run in the scratch repository
	`git push --force`,
	`git push -f`,
	`git push origin main --force`,
	`git push --forc`,
	`/usr/bin/git push --force`,
	`"git" 'push' --force`,
	`g\it pu\sh --for\ce`,
	`git push $'--\x66orce'`,
	`git push $'\055\055force'`,
	`F=--force; git push $F`,
	`A='push --force'; git $A`,
	`y='git push -f'; eval "$y"`,
	`env git push -f`,
	`env -i PATH=/usr/bin:/bin git push -f`,
	`nice -n 5 git push -f`,
	`nohup git push -f`,
	`timeout 5 git push -f`,
	`command git push -f`,
	`time git push -f`,
	`sudo -n git push -f`,
	`bash -c 'git push --force'`,
	`sh -c "bash -c 'git push -f'"`,
	`bash -c 'git push "$1"' _ --force`,
	`eval git push --force`,
	`eval 'git push -f'`,
	`echo $(git push -f)`,
	"echo `git push -f`",
	`cat <(git push -f)`,
	`bash <<< 'git push -f'`,
	"sh <<'EOF'\ngit push -f\nEOF",
	`echo 'git push -f' | bash`,
	`f() { git push "$@"; }; f --force`,
	`git -C ` + T + `/repo push -f`,
	`true && git push -f || true`,
	`(cd ` + T + `/repo; git push -f)`,
	`if true; then git push -f; fi`,
	`for i in 1; do git push -f; done`,
	`$(command -v git) push --force`,
	`eval "$NOT_SET_ANYWHERE"`,
	`xargs git push <<< --force`,
	`git${IFS}push${IFS}-f`,
	"shopt -s expand_aliases\nalias gp='git push -f'\ngp",
	`echo Z2l0IHB1c2ggLWYK | base64 -d | sh`,
	`bash <(echo git push -f)`,
	`source /dev/stdin <<< 'git push -f'`,
	`printf '%s\n' 'git push -f' | sh`,
	// rm -r -f */canary
	`rm -rf ` + T + `/canary`,
	`rm -fr ` + T + `/canary`,
	`rm -r -f ` + T + `/canary`,
	`rm -R --force ` + T + `/canary`,
	`rm --recursive --force ` + T + `/canary`,
	`rm --rec --for ` + T + `/canary`,
	`/bin/rm -rf ` + T + `/canary`,
	`\rm -rf ` + T + `/canary`,
	`rm -rf ` + T + `//canary/`,
	`cd ` + T + ` && rm -rf canary`,
	`cd ` + T + `/repo/.. && rm -rf ./canary`,
	`cd ` + T + `/repo && rm -rf ../canary`,
	`D=` + T + `; rm -rf "$D/canary"`,
	`rm -rf "` + T + `"/'can'ary`,
	`rm -rf ` + T + `/canar?`,
	`rm -rf ` + T + `/*`,
	`sudo -n rm -rf ` + T + `/canary`,
	`bash -c "rm -rf ` + T + `/canary"`,
	`echo ` + T + `/canary | xargs rm -rf`,
	`g() { rm -rf "$1"; }; g ` + T + `/canary`,
	// find */canary -delete
	`find ` + T + `/canary -delete`,
	`find ` + T + `/canary -type f -delete`,
	`cd ` + T + ` && find canary -delete`,
	`find ` + T + `/canary -exec rm -rf {} +`,
	// curl | sh
	`curl -fsS file://` + T + `/nothing | sh`,
	`curl -fsS file://` + T + `/nothing | bash -s`,
	`/usr/bin/curl -fsS file://` + T + `/nothing | env sh`,
	`curl -fsS file://` + T + `/nothing | tee /dev/null | sh`,
}

// Allowed are near-misses: commands the Rules must let run (in the
// scratch repository; none of them touches canary/).
var Allowed = []string{
	`git push`,
	`git push origin main`,
	`git push --dry-run`,
	`git status`,
	`git -C ` + T + `/repo status`,
	`git log --grep=--force`,
	`echo "git push --force"`,
	`echo 'rm -rf ` + T + `/canary'`,
	`printf '%s\n' "git push --force"`,
	"cat <<'EOF'\ngit push --force\nEOF",
	`bash -c 'echo git push -f'`,
	`F=--force; echo git push $F`,
	`grep -- --force /dev/null`,
	`ls -rf ` + T,
	`rm -r ` + T + `/scratch1`,
	`rm -f ` + T + `/scratch2/file`,
	`rm -rf ` + T + `/scratch3`,
	`rm -rf ` + T + `/canary-not`,
	`find ` + T + `/canary -name nothing`,
	`find ` + T + `/scratch4 -delete`,
	`echo hi | sh`,
	`curl --version | cat`,
	`sh -c 'echo hi'`,
	`cd ` + T + ` && ls canary`,
	`rm -rf ` + T + `/scratch1/*.o`,
	`alias ll='ls -l'; ll`,
}

// Expand replaces the placeholder T in cmd with dir.
func Expand(cmd, dir string) string { return strings.ReplaceAll(cmd, T, dir) }
