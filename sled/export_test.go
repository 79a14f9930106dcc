package sled

// SetProbePackage makes path the probe package for a test, and returns what puts the
// real one back.
func SetProbePackage(path string) (restore func()) {
	old := probePackage
	probePackage = path
	return func() { probePackage = old }
}

// SetParallelism sets the fewest candidates and the least text worth a goroutine of
// their own, and returns what puts the defaults back.
func SetParallelism(candidates, text int) (restore func()) {
	c, x := minPerWorker, minScanPerWorker
	minPerWorker, minScanPerWorker = candidates, text
	return func() { minPerWorker, minScanPerWorker = c, x }
}
