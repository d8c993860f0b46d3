//go:build race

package reliability

// raceBuild: this binary (and so every daemon the suite starts) runs under
// the race detector, which multiplies memory use: memory bounds are not
// checked then.
const raceBuild = true
