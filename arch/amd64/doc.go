// Package amd64 is gosdt's x86-64 machine-code knowledge for probe sites: it decodes Go functions, matches and verifies site shapes, and encodes canonical sleds.
// Everything here is a pure function over bytes (golang.org/x/arch/x86/x86asm): no unsafe, no syscalls, no runtime lookups, so it builds and tests on every GOOS/GOARCH.
package amd64
