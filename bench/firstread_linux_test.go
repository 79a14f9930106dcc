package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTextFirstRead maps a large Go binary (the go command, in the page cache
// after the first iteration) read-only and privately, as the kernel maps a program's
// text, and reads all of it twice: per iteration a fresh mapping, so that the first
// read pays what discovery's scan pays in a program that has just started (a page
// fault per 64 KiB or so, and on a VM the first access to each page), and the second
// what a rescan does. Discovery's start-up figures against text size are bounded
// below by the first.
func BenchmarkTextFirstRead(b *testing.B) {
	path := filepath.Join(runtime.GOROOT(), "bin", "go")
	info, err := os.Stat(path)
	if err != nil {
		b.Skip(err)
	}
	n := int(info.Size()) &^ (os.Getpagesize() - 1)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var first, second time.Duration
	for b.Loop() {
		m, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_PRIVATE)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		c1 := bytes.Count(m, []byte{0x3D})
		t1 := time.Now()
		c2 := bytes.Count(m, []byte{0x3D})
		first, second = first+t1.Sub(t0), second+time.Since(t1)
		syscall.Munmap(m)
		if c1 != c2 {
			b.Fatal("the two reads differ")
		}
	}
	mb := float64(n) / 1e6 * float64(b.N)
	b.ReportMetric(float64(first.Nanoseconds())/1e6/mb, "first-ms/MB")
	b.ReportMetric(float64(second.Nanoseconds())/1e6/mb, "again-ms/MB")
	b.ReportMetric(float64(n)/1e6, "MB")
}
