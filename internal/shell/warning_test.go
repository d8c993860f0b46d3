package shell

import (
	"strings"
	"testing"
)

const (
	rmRF       = "may force-remove files recursively (rm -rf)"
	pushForce  = "may overwrite remote history (git push --force)"
	pushDelete = "may delete a remote branch (git push --delete)"
	resetHard  = "may discard uncommitted changes (git reset --hard)"
	cleanF     = "may delete untracked files (git clean -f)"
	checkout   = "may discard uncommitted changes (git checkout .)"
	restore    = "may discard uncommitted changes (git restore .)"
	forkBomb   = "fork bomb: may exhaust the process table"
)

// warningPositive are commands that must warn, with the warning expected.
var warningPositive = []struct{ cmd, want string }{
	// rm: flag spellings and orders
	{`rm -rf build`, rmRF},
	{`rm -fr build`, rmRF},
	{`rm -r -f build`, rmRF},
	{`rm -Rf build`, rmRF},
	{`rm --recursive --force build`, rmRF},
	{`rm build -rf`, rmRF},
	{`rm -rfv -- /tmp/x`, rmRF},
	{`/bin/rm -rf /`, rmRF},
	{`\rm -rf x`, rmRF},
	{`rm -rf "$DIR"/*`, rmRF},
	// wrappers
	{`sudo rm -rf /var/lib/x`, rmRF},
	{`sudo -u root rm -rf /`, rmRF},
	{`sudo -E -u root -- rm -rf /`, rmRF},
	{`env -i PATH=/bin rm -rf x`, rmRF},
	{`env -S 'rm -rf x'`, rmRF},
	{`FOO=1 rm -rf x`, rmRF},
	{`nice -n 10 nohup rm -rf x &`, rmRF},
	{`time rm -rf x`, rmRF},
	{`command rm -rf x`, rmRF},
	{`exec rm -rf x`, rmRF},
	{`timeout 10 rm -rf x`, rmRF},
	{`find . -name '*.o' -print0 | xargs -0 rm -rf`, rmRF},
	{`ls | xargs -I{} rm -rf {}`, rmRF},
	// lists, pipelines, subshells, substitutions, nested shells
	{`cd /tmp && rm -rf x`, rmRF},
	{`true; (rm -rf x) || echo fail`, rmRF},
	{`if true; then { rm -rf x; }; fi`, rmRF},
	{`echo $(rm -rf x)`, rmRF},
	{`cat <(rm -rf x)`, rmRF},
	{`bash -c 'rm -rf x'`, rmRF},
	{`sh -ec "cd /tmp && rm -rf x"`, rmRF},
	{`bash -lc 'sudo rm -rf x'`, rmRF},
	{`sudo sh -c "bash -c 'rm -rf /'"`, rmRF},
	{`su -c 'rm -rf /' root`, rmRF},
	{`eval rm -rf x`, rmRF},
	{`find /tmp -exec rm -rf {} +`, rmRF},
	{`f() { rm -rf "$1"; }`, rmRF},
	{"bash <<'EOF'\ncd /tmp\nrm -rf x\nEOF", rmRF},
	{`sudo bash -s <<< 'rm -rf x'`, rmRF},
	{`busybox sh -c 'rm -rf x'`, rmRF},
	{"rm -rf x; (", rmRF},
	// git
	{`git push --force`, pushForce},
	{`git push -f origin main`, pushForce},
	{`git push origin main --force-with-lease`, pushForce},
	{`git push --force-with-lease=main:abc origin`, pushForce},
	{`git push origin +main`, pushForce},
	{`git -C repo push -fu origin main`, pushForce},
	{`git push origin --delete feature`, pushDelete},
	{`git push origin :feature`, pushDelete},
	{`git reset --hard`, resetHard},
	{`git reset --hard HEAD~3`, resetHard},
	{`git -c core.pager=cat reset --hard origin/main`, resetHard},
	{`git clean -f`, cleanF},
	{`git clean -fd`, cleanF},
	{`git clean -xdf`, cleanF},
	{`git clean --force -d`, cleanF},
	{`git checkout -- .`, checkout},
	{`git checkout .`, checkout},
	{`git checkout HEAD -- .`, checkout},
	{`git checkout -f main`, "may discard uncommitted changes (git checkout -f)"},
	{`git restore .`, restore},
	{`git restore --staged --worktree .`, restore},
	{`git restore --source=HEAD~1 :/`, restore},
	{`git stash clear`, "may delete all stashes (git stash clear)"},
	{`git branch -D feature`, "may delete an unmerged branch (git branch -D)"},
	// SQL
	{`psql -c 'DROP TABLE users'`, "may drop database objects (DROP TABLE)"},
	{`psql -d app -c "drop table if exists users"`, "may drop database objects (DROP TABLE)"},
	{`psql --command="DROP SCHEMA public CASCADE"`, "may drop database objects (DROP SCHEMA)"},
	{`psql -qc 'truncate users'`, "may delete all rows (TRUNCATE)"},
	{`mysql -u root -e 'DROP DATABASE app'`, "may drop database objects (DROP DATABASE)"},
	{`mysql -psecret --execute "Truncate Table logs"`, "may delete all rows (TRUNCATE)"},
	{`mariadb -e "drop database x"`, "may drop database objects (DROP DATABASE)"},
	{`sqlite3 app.db "DROP TABLE t"`, "may drop database objects (DROP TABLE)"},
	{`sqlite3 -cmd 'drop table t' app.db`, "may drop database objects (DROP TABLE)"},
	{`sqlite3 app.db 'DELETE FROM users;'`, "may delete all rows (DELETE without WHERE)"},
	{`clickhouse-client --query "DROP TABLE t"`, "may drop database objects (DROP TABLE)"},
	{`clickhouse client -q 'TRUNCATE TABLE t'`, "may delete all rows (TRUNCATE)"},
	{`cockroach sql --insecure -e 'DROP DATABASE x'`, "may drop database objects (DROP DATABASE)"},
	{`cockroach sql --execute="drop table x"`, "may drop database objects (DROP TABLE)"},
	{"psql app <<'EOF'\nDROP TABLE users;\nEOF", "may drop database objects (DROP TABLE)"},
	{`mysql app <<< 'drop table users'`, "may drop database objects (DROP TABLE)"},
	{`echo 'DROP TABLE users;' | psql app`, "may drop database objects (DROP TABLE)"},
	{`sh -c 'psql -c "DROP TABLE x"'`, "may drop database objects (DROP TABLE)"},
	// infrastructure
	{`kubectl delete pod web-1`, "may delete cluster resources (kubectl delete)"},
	{`kubectl -n prod delete deployment web`, "may delete cluster resources (kubectl delete)"},
	{`kubectl --context=prod delete -f app.yaml`, "may delete cluster resources (kubectl delete)"},
	{`terraform destroy`, "may destroy infrastructure (terraform destroy)"},
	{`terraform -chdir=infra destroy -auto-approve`, "may destroy infrastructure (terraform destroy)"},
	{`terraform apply -destroy`, "may destroy infrastructure (terraform apply -destroy)"},
	{`tofu apply -auto-approve -destroy`, "may destroy infrastructure (tofu apply -destroy)"},
	// disks and files
	{`dd if=img.iso of=/dev/sdb bs=4M`, "may overwrite a disk device (dd of=/dev/sdb)"},
	{`sudo dd if=/dev/zero of=/dev/nvme0n1`, "may overwrite a disk device (dd of=/dev/nvme0n1)"},
	{"dd 'of=/dev/sd\na'", `may overwrite a disk device (dd of=/dev/sd\na)`}, // one line: the break is escaped
	{`mkfs -t ext4 /dev/sdb1`, "may format a filesystem (mkfs)"},
	{`sudo mkfs.ext4 /dev/sdb1`, "may format a filesystem (mkfs.ext4)"},
	{`chmod -R 777 /srv`, "may make files world-writable recursively (chmod -R 777)"},
	{`chmod 777 -R /srv`, "may make files world-writable recursively (chmod -R 777)"},
	{`chmod --recursive a+rwx .`, "may make files world-writable recursively (chmod -R a+rwx)"},
	{`sudo chown -R me:me /`, "may change ownership of the whole filesystem (chown -R /)"},
	{`echo x > /dev/sda`, "may overwrite a disk device (> /dev/sda)"},
	{`cat img >> /dev/nvme0n1`, "may overwrite a disk device (> /dev/nvme0n1)"},
	{`cat img &> /dev/disk2`, "may overwrite a disk device (> /dev/disk2)"},
	{`cat img | sudo tee /dev/sdc`, "may overwrite a disk device (tee /dev/sdc)"},
	{`:(){ :|:& };:`, forkBomb},
	{`bomb() { bomb | bomb & }; bomb`, forkBomb},
	{`function f { f & f; }; f`, forkBomb},
	{`shred -u secrets.txt`, "may irrecoverably overwrite files (shred)"},
	{`find . -name '*.tmp' -delete`, "may delete files (find -delete)"},
	{`truncate -s 0 app.log`, "may empty files (truncate -s 0)"},
	{`truncate --size=0 a b`, "may empty files (truncate -s 0)"},
	{`wipefs -a /dev/sdb`, "may erase filesystem signatures (wipefs)"},
	// several at once
	{`git reset --hard && git clean -fdx`, resetHard + "; " + cleanF},
}

// warningNegative are commands that must not warn: the same words as data,
// harmless spellings, or missing one of the dangerous parts.
var warningNegative = []string{
	`echo 'rm -rf /'`,
	`echo "rm -rf /"`,
	`grep "git push --force" log`,
	`git commit -m "git reset --hard"`,
	`git log --grep='push --force'`,
	`bash -c 'echo rm -rf /'`,
	"cat <<'EOF'\nrm -rf /\nEOF",
	"bash script.sh <<'EOF'\nrm -rf /\nEOF",
	`rm -r build`,
	`rm -f file.txt`,
	`rm -rf`,
	`ls -rf`,
	`git push`,
	`git push origin main`,
	`git push -u origin feature`,
	`git reset --soft HEAD~1`,
	`git reset HEAD file.go`,
	`git clean -n`,
	`git clean -fdn`,
	`git checkout main`,
	`git checkout -b feature`,
	`git checkout -- main.go`,
	`git restore --staged .`,
	`git restore main.go`,
	`git stash`,
	`git branch -d merged`,
	`psql -c 'SELECT * FROM users'`,
	`psql -c "SELECT * FROM drop_table_log"`,
	`mysql -e 'select 1'`,
	`sqlite3 app.db 'DELETE FROM users WHERE id = 1'`,
	`sqlite3 drop.db .tables`,
	`echo "DROP TABLE users"`,
	`kubectl get pods`,
	`kubectl get pod delete-me`,
	`kubectl describe deployment delete`,
	`terraform plan -destroy`,
	`terraform apply`,
	`dd if=/dev/sda of=disk.img`,
	`dd if=/dev/zero of=/dev/null count=1`,
	`echo hi > /dev/null`,
	`echo hi > /dev/stderr`,
	`echo hi >> /dev/stdout`,
	`echo hi > /dev/tty`,
	`echo hi > /dev/fd/3`,
	`make 2>/dev/null`,
	`chmod 777 script.sh`,
	`chmod -R 755 dir`,
	`chmod -R u+w dir`,
	`chown -R me:me ./dir`,
	`chown me /`,
	`find . -name '*.go'`,
	`find . -exec grep -l TODO {} +`,
	`truncate -s 10M disk.img`,
	`f() { echo hi; }; f`,
	`f() { f; }`,
	`wipefs /dev/sdb`,
	`man rm`,
	`which shred`,
	`command -v rm`,
	`sudo -v`,
	`printf '%s\n' "$(echo rm -rf x)"`,
}

func TestWarning(t *testing.T) {
	for _, tt := range warningPositive {
		t.Run("warn/"+tt.cmd, func(t *testing.T) {
			if got := Warning(tt.cmd); got != tt.want {
				t.Errorf("Warning(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
	for _, cmd := range warningNegative {
		t.Run("quiet/"+cmd, func(t *testing.T) {
			if got := Warning(cmd); got != "" {
				t.Errorf("Warning(%q) = %q, want none", cmd, got)
			}
		})
	}
}

// TestWarningDepth checks that scripts nested in arguments are bounded, not
// followed forever.
func TestWarningDepth(t *testing.T) {
	cmd := "rm -rf x"
	for range 10 {
		cmd = "sh -c " + quote(cmd)
	}
	if got := Warning(cmd); got != "" {
		t.Errorf("Warning of a script nested 10 deep = %q, want none (depth is bounded)", got)
	}
	if got := Warning("sh -c " + quote("sh -c "+quote("rm -rf x"))); got != rmRF {
		t.Errorf("Warning of a script nested 2 deep = %q, want %q", got, rmRF)
	}
}

func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
