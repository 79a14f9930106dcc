// Package arm64 describes AArch64 machine code to gosdt's discovery (Arch) and to the
// reading of binaries (Offline), with its own table decoder; and it encodes sleds.
package arm64
