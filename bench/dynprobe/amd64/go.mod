module github.com/gosdt/gosdt/bench/dynprobe/amd64
go 1.26
