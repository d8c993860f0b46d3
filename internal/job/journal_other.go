//go:build !unix

package job

import "github.com/hivetools/hive/internal/store"

// journalMap: no journal here (see journal_unix.go): jobs are kept at
// their end only by a Linux holder.
type journalMap struct{}

func (journalMap) close([]byte) {}

// openJournal opens no journal: Options.Journal is not used here.
func openJournal(string) (*journal, []store.Job, int, error) { return nil, nil, 0, nil }
