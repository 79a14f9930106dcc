// Package arm64 is gosdt's AArch64 machine-code knowledge for probe sites: it decodes Go
// functions, matches and verifies site shapes, proves the flag register dead, and encodes
// canonical sleds.
// Everything here is a pure function over bytes (golang.org/x/arch/arm64/arm64asm): no
// unsafe, no syscalls, no runtime lookups, so it builds and tests on every GOOS/GOARCH.
package arm64
