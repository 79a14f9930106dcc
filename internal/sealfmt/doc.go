// Package sealfmt is the format of a binary sealed by sdtctl seal: its site table, the
// seal mark that ties the table to the file, and the USDT semaphores a tracer raises.
//
// The table (SiteTable) is in the section SectionName; the mark (MarkFor, CheckTable)
// and the semaphores (Semaphore) are one variable, Symbol, that sealing writes in the
// file. Package sled turns a table's records into sites and checks them against the
// text, package internal/seal writes the format, package sled/offline reads it from a
// file, and the running program reads its own (Sealed, Self).
package sealfmt
