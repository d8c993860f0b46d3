package holder

// keepsJobs: no holder keeps jobs here.
func keepsJobs() bool { return false }
