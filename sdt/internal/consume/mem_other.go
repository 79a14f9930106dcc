//go:build !linux

package consume

// Elsewhere trace buffers are Go memory: the budget's checks come first, as on
// linux, but a buffer is given back by the collector once the trace is closed.

// allocBuf makes size bytes, 8-aligned, for a trace buffer; never shared here (fd -1):
// a trace's records end with its process.
func allocBuf(size int, shared bool) ([]byte, int, error) {
	return unsafeBytes(make([]uint64, size/8)), -1, nil
}

// freeBuf drops b: the collector frees it once no fire holds it.
func freeBuf(b []byte, fd int) {}

// buffersUnmapped: the collector frees a buffer, once nothing refers to it.
const buffersUnmapped = false

// headroom: no memory limit is known here.
func headroom() (n uint64, what string, ok bool) { return 0, "", false }

// ReadOnlyFd: nothing is shared here.
func ReadOnlyFd(fd int) int { return -1 }

func CloseFd(fd int) {}

// protectRead: nothing is shared here (allocBuf's fd is -1: no live trace).
func protectRead(b []byte) {}
