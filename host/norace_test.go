//go:build !race

package host

// raceBuild is true when the tests run under the race detector.
const raceBuild = false
