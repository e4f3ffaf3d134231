// containerd 1.7 for the lab's containerd-wasm-artifact variant: Debian 12's containerd (1.6.20)
// refuses an image whose layers are Wasm (the Wasm OCI artifact layout); containerd passes such
// layers to a shim from 1.6.25 and 1.7.7 on (containerd#9142). `wasmlab setup
// containerd-wasm-artifact` builds this into tools/bin from the Go module proxy.
package main

import (
	"crypto"
	"fmt"
	"os"

	"github.com/containerd/containerd/cmd/containerd/command"
	"github.com/containerd/containerd/pkg/hasher"

	// The plugins a containerd binary registers: snapshotters, runtimes, services.
	_ "github.com/containerd/containerd/cmd/containerd/builtins"
)

func main() {
	crypto.RegisterHash(crypto.SHA256, hasher.NewSHA256)
	if err := command.App().Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "containerd: %s\n", err)
		os.Exit(1)
	}
}
