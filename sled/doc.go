// Package sled finds the probe sites in the running program's text, proves each one's
// machine code with its architecture's description (package arch), and knows its sled.
//
// A site is the compiler's inlined flag check of a probe: on amd64 a CMPB of the probe's
// flag byte and a conditional jump; on arm64 the CBZ/CBNZ/TBZ/TBNZ that tests the byte an
// ADRP+LDRB loaded, possibly several instructions earlier (the load becomes NOPs too,
// through Site.Also, once its register is proven dead; otherwise Site.Note says why it
// stays). Scan walks the function around every candidate from its entry, so a match is
// on real instruction boundaries, and requires the guarded block to call into package
// sdt. A candidate that does not match a verified shape is not patched: it keeps its
// branch check and its Refusal says why. Only the host's architecture is linked into a
// program; package sled/offline reads either architecture's binary files.
//
// A binary sealed by sdtctl seal carries its sites in a site table, whose format,
// with the seal mark and the USDT semaphores, is package internal/sealfmt's; Discover
// then reads the table instead of scanning, and checks each site's bytes against it
// (FromTable). A table that is not the one the binary's seal mark was written for is
// said (Table.Warning), and the sites are found in the text instead (Rescan).
package sled
