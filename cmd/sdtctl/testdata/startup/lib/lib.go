// Package lib fires a probe in its init: what sdtctl trace -- CMD must see.
package lib

import "github.com/gosdt/gosdt/sdt"

var loaded = sdt.Define1[string]("boot", "loaded", "what")

//go:noinline
func load(what string) { sdt.Probe1(&loaded, what) }

func init() { load("config") }
