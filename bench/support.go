package bench

// sink keeps the enabled benchmarks' loops live.
var sink uint64
