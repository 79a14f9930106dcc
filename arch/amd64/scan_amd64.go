package amd64

// indexCMPB is in scan_amd64.s.
//
//go:noescape
func indexCMPB(b []byte) int
