// Package arm64 describes AArch64 machine code to gosdt's discovery (Arch): it finds and
// proves probe sites in Go's code with arm64asm and raw encodings, and encodes sleds.
package arm64
