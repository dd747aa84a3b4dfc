package ociimage_test

import (
	"fmt"
	"time"

	"github.com/opkit-dev/opkit/hack/image/ociimage"
)

// Assemble puts a binary on the base layer; Files lists what each layer
// holds.
func ExampleAssemble() {
	img, err := ociimage.Assemble([]byte("a static binary"), ociimage.Options{Arch: "amd64", Created: time.Unix(0, 0)})
	if err != nil {
		panic(err)
	}
	files, err := ociimage.Files(img)
	if err != nil {
		panic(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		panic(err)
	}
	fmt.Println(files)
	fmt.Println(cf.Config.User, cf.Config.Entrypoint)
	// Output:
	// [[/etc/ /etc/group /etc/passwd /etc/ssl/ /etc/ssl/certs/ /etc/ssl/certs/ca-certificates.crt] [/sample-operator]]
	// 65532:65532 [/sample-operator]
}
