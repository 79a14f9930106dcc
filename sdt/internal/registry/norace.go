//go:build !race

package registry

// raceBuild: built with -race.
const raceBuild = false
