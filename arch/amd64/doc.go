// Package amd64 describes x86-64 machine code to gosdt's discovery (Arch): it finds and
// proves probe sites in Go's code with its own table decoder, and encodes sleds.
package amd64
