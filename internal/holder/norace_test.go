//go:build !race

package holder_test

const race = false
