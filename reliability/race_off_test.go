//go:build !race

package reliability

// raceBuild: see race_on_test.go.
const raceBuild = false
