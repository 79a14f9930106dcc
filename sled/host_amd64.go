package sled

import "github.com/gosdt/gosdt/arch/amd64"

// host is this machine's architecture: only its description is linked into a program.
var host = &amd64.Arch
