//go:build !amd64 && !arm64

package sled

import "github.com/gosdt/gosdt/arch"

// host is nil: there is no site matcher for this architecture, and probes work through
// their branch check.
var host *arch.Arch
