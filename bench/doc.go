// Package bench compares what a disabled and an enabled gosdt probe cost against the
// checks Go programs use today; run it with go test -bench . ./bench/ (see README.md).
package bench
