// Package registry holds every probe definition and site of the process, who holds
// them on and who consumes their fires; package sdt, the consumers and fbt's runtime use it.
package registry
