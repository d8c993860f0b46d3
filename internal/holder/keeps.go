package holder

// KeepsJobs reports whether a daemon started here, with this
// environment, has its holder keep the jobs it starts itself (a kernel
// that allows it, HIVE_HOLDER_KEEP not off).
func KeepsJobs() bool { return keepsJobs() }
