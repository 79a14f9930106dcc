package quantize

import (
	"math"
	"testing"
)

func TestBuckets(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want int
		low  int64
	}{
		{0, 64, 0},
		{1, 65, 1},
		{2, 66, 2}, {3, 66, 2},
		{4, 67, 4}, {1023, 74, 512}, {1024, 75, 1024},
		{math.MaxInt64, 127, 1 << 62},
		{-1, 63, -1},
		{-2, 62, -2}, {-3, 62, -2}, {-4, 61, -4},
		{math.MinInt64 + 1, 1, -(1 << 62)},
		{math.MinInt64, 0, math.MinInt64},
	} {
		b := Bucket(c.v)
		if b != c.want || Low(b) != c.low {
			t.Errorf("Bucket(%d) = %d (low %d), want %d (low %d)", c.v, b, Low(b), c.want, c.low)
		}
	}
}
