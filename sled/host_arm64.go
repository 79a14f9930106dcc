package sled

import "github.com/gosdt/gosdt/arch/arm64"

// host is this machine's architecture: only its description is linked into a program.
var host = &arm64.Arch
