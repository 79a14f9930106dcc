// Package usdt writes what the tracers people already use look for in a binary:
// SystemTap SDT notes (.note.stapsdt, .stapsdt.base) and extra sections in an ELF file.
//
// The note format, as readelf, gdb's "info probes", perf and bpftrace read it:
//
//	Elf64_Nhdr{namesz: 8, descsz: len(desc), type: 3}   "stapsdt\0"
//	desc: pc u64 | base u64 | semaphore u64 | provider\0 | name\0 | args\0   (padded to 4)
//
// pc is the link-time address of the probe point, base the link-time address of
// .stapsdt.base (tools add the difference between its run-time and link-time address),
// semaphore the link-time address of a 16-bit counter that a tracer increments while it
// is attached (0: none), args the argument specs, e.g. "-8@%rcx 8@%rdi".
package usdt
