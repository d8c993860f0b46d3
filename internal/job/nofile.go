package job

// ChildNofile is the soft limit of open files this process's children
// start with (0 if unknown or none here), as a job's rlimits' wrapper
// gets it: for other spawners of wrapped processes (pty.Options).
func ChildNofile() uint64 { return childNofile() }
