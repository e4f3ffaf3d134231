// ctr 1.7, the client of engines/containerd/daemon: importing and running an image happens in the
// client (it unpacks the layers), so the client must be the version that accepts Wasm layers too.
package main

import (
	"crypto"
	"fmt"
	"os"

	"github.com/containerd/containerd/cmd/ctr/app"
	"github.com/containerd/containerd/pkg/hasher"
)

func main() {
	crypto.RegisterHash(crypto.SHA256, hasher.NewSHA256)
	if err := app.New().Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "ctr: %s\n", err)
		os.Exit(1)
	}
}
