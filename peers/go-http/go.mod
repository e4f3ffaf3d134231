module wasmlab/peers/go-http

go 1.22
