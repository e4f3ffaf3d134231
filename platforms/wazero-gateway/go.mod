module wasmlab/platforms/wazero-gateway

go 1.26

require github.com/tetratelabs/wazero v1.12.0

require golang.org/x/sys v0.44.0 // indirect
