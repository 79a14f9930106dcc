//go:build race

package sdt

// raceBuild: built with -race.
const raceBuild = true
