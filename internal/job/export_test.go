package job

// MaxKept is maxKept, for the tests of package job_test.
var MaxKept = maxKept
