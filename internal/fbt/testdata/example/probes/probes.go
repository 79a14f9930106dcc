// Package probes defines a probe that package lib fires: a definition in a package
// initialised before the one whose instrumented functions fire it.
package probes

import "github.com/gosdt/gosdt/sdt"

var Step = sdt.Define1[int]("mix", "step", "n")
