// Package avx2 tells whether the CPU and the kernel let a program use AVX2, for the
// vector searches of arch/amd64 and arch/arm64 (which reads arm64 binaries on an
// x86-64 host). It asks with two CPUID and one XGETBV, not through golang.org/x/sys/cpu,
// whose init asks for every feature at every program's start: in a VM each CPUID traps
// to the hypervisor, and that init was a tenth of what importing sdt added to hello
// world's start (bench/README.md, "Start-up").
package avx2
