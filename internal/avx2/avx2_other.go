//go:build !amd64

package avx2

// Supported is false: AVX2 is an x86-64 extension.
const Supported = false
