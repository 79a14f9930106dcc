// Package quantize is DTrace's power-of-two histogram: which bucket a value falls in,
// and the value that labels a bucket. sdt fills histograms with it; sdtctl draws them.
package quantize

import "math/bits"

// Buckets is the number of buckets of a power-of-two histogram: 64 negative, zero,
// 63 positive. See Bucket.
const Buckets = 128

// Bucket is the power-of-two (DTrace quantize) bucket of v: bucket 64 holds 0; bucket
// 64+k (k >= 1) holds [2^(k-1), 2^k); bucket 64-k holds (-2^k, -2^(k-1)].
func Bucket(v int64) int {
	switch {
	case v == 0:
		return 64
	case v > 0:
		return 64 + bits.Len64(uint64(v))
	}
	return 64 - bits.Len64(uint64(-(v+1))+1)
}

// Low is the value that labels bucket i: its bound nearest zero.
func Low(i int) int64 {
	switch {
	case i == 64:
		return 0
	case i > 64:
		return int64(1) << (i - 65)
	}
	return -int64(uint64(1) << (63 - i))
}
